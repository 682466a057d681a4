"""FabricController: the API experiment scripts use (docs/fabric.md).

It owns every table entry of every switch. The desired state is a pure function of (spec,
scheme choices, weights, failed links) computed by ``model.routing``; the controller keeps
what it believes each switch holds and writes only the difference when something changes
(scheme, weights, a failed or restored link), one Write batch per switch, switches in parallel.
Every read goes over P4Runtime (registers too; on BMv2, whose P4Runtime has no registers,
through simple_switch_CLI on the switch's Thrift port).
"""

from __future__ import annotations

import ipaddress
import logging
import math
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from model.entries import Entry, EntryKey, diff_entries
from model.routing import (
    DEFAULT_ECN_THRESHOLD,
    EcnThreshold,
    FabricEntries,
    Group,
    GroupKey,
    compute_fabric_entries,
    failed_link_indexes,
)
from model.schemes import DEFAULT_SCHEME, Scheme, scheme_class, scheme_from_name
from model.spec import FabricSpec
from model.targets import TARGET_NAMES, HardwareTarget, Target
from model.tna import TnaSwitchEntries, cells_per_packet
from p4switch import ExactMatch, LpmMatch

from .connection import PacketIn, SwitchConnection, SwitchError
from .loops import LOOP_NAMES, ControlLoop, ControlLoops, ProbeHandler, parse_probe, probe_frame
from .p4rt_codec import P4Schema
from .program import Program, compile_program
from .tna_fabric import SwitchDevice, TnaDriver, load_tofino_program

_T = TypeVar("_T")
PORT_COUNTERS = ("MyIngress.port_rx_ctr", "MyEgress.port_tx_ctr")
DROP_CTR = "MyIngress.drop_ctr"
MEMBER_CTR = "MyIngress.lb_member_ctr"
QDEPTH_MAX = "MyEgress.port_qdepth_max"
QDEPTH_LAST = "MyEgress.port_qdepth_last"
DROP_REASONS = {1: "parser_error", 2: "bad_checksum", 3: "not_ipv4", 4: "ttl_expired",
                5: "route_miss", 6: "blackhole", 7: "lb_group_miss", 8: "lb_empty",
                9: "lb_member_miss"}
LB_MAX_MEMBERS = 64
COUNTER_COLUMNS = ["switch", "counter", "index", "port", "group", "member", "reason", "packets",
                   "bytes"]


DEFAULT_LOOPS = (ControlLoop.FAILURE.value, ControlLoop.RECONCILE.value)
PROBE_RTT_S = 0.25
"""Wall seconds a failure probe's round trip counts as at least, whatever the control period:
controller -> PacketOut -> switch -> link -> switch -> PacketIn -> controller through two
Python gRPC stacks. Measured on the 2-core machine with a k=4 fabric of eBPF switches at TDF
5,000 (load average 11-18): p50 70 ms, p99 0.45-0.85 s. A dilated control period shorter
than this would otherwise send rounds faster than they come back; the loops also learn
longer round trips as they go (controller.loops.ControlLoops.round_timeout)."""


def auto_loops(*schemes: Scheme | str, have: Sequence[str] = DEFAULT_LOOPS) -> tuple[str, ...]:
    """The loops ``have`` plus every loop one of ``schemes`` needs (``Scheme.control_loop``:
    Whack-a-Mole is dynamic only with its loop moving balls off congested members)."""
    names = list(have)
    for s in schemes:
        loop = scheme_class(s).control_loop
        if loop is not None and loop not in names:
            names.append(loop)
    return tuple(names)


@dataclass(frozen=True)
class ControlEvent:
    """One thing the controller or a loop did (time is time.time())."""

    time: float
    loop: str
    switch: str | None
    what: str


class FabricController:
    """Programs a whole fabric over P4Runtime. See module docstring."""

    def __init__(self, spec: FabricSpec, target: str = "p4switch",
                 program: str | Path | Program | None = None, control_period: float = 0.5,
                 log: logging.Logger | Callable[[ControlEvent], None] | None = None, *,
                 ecn_threshold: EcnThreshold = DEFAULT_ECN_THRESHOLD,
                 election_id: tuple[int, int] | None = None, connect_timeout: float = 10.0,
                 probe_miss_periods: int = 2, probe_rtt_s: float = PROBE_RTT_S,
                 devices: Mapping[str, SwitchDevice] | None = None) -> None:
        """``target``: one of TARGET_NAMES, or "tofino" (switches running p4src/tna/fabric.p4;
        ``program`` is then the Tofino compiler's P4Info or ``make tofino``'s output directory,
        see controller/tna_fabric.py and docs/tofino.md). ``devices``: where switches really
        are (address, device id, spec port -> device port), for a fabric of real switches;
        by default the spec's 127.0.0.1 ports, device ids and port numbers."""
        targets = (*TARGET_NAMES, HardwareTarget.TOFINO.value)
        if target not in targets:
            raise ValueError(f"unknown target {target!r} (choose from {', '.join(targets)})")
        unknown = sorted(set(devices or {}) - set(spec.switches))
        if unknown:
            raise ValueError(f"devices names switches not in the fabric: {', '.join(unknown)}")
        if control_period <= 0:
            raise ValueError("control_period must be > 0 seconds")
        if probe_miss_periods < 1:
            raise ValueError("probe_miss_periods must be >= 1")
        if not probe_rtt_s >= 0:
            raise ValueError("probe_rtt_s must be >= 0 seconds")
        self.spec = spec
        self.target = target
        self.devices: dict[str, SwitchDevice] = dict(devices or {})
        self._to_dev = {s: dict(d.port_map) for s, d in self.devices.items() if d.port_map}
        self._from_dev = {s: {v: k for k, v in m.items()} for s, m in self._to_dev.items()}
        unit = cells_per_packet("tofino") if target == HardwareTarget.TOFINO else 1
        self._qscale = {s: (d.qdepth_scale if d and d.qdepth_scale else unit)
                        for s in spec.switches for d in [self.devices.get(s)]}
        """Queue-depth units a packet is, per switch (cells on a Tofino: SwitchDevice)."""
        self._tna: TnaDriver | None = None
        """Set at start() for target tofino: the TNA program's per-switch state."""
        self._tna_want: dict[str, TnaSwitchEntries] = {}
        self._program_source = None if isinstance(program, Program) else program
        self.program: Program | None = program if isinstance(program, Program) else None
        self.schema: P4Schema | None = None
        self.control_period = control_period
        self.ecn_threshold = ecn_threshold
        # default: microseconds since the epoch, so a controller started later (a re-run
        # script) outranks an earlier one: a primary needs an id >= the highest a switch saw
        self.election_id = election_id or (0, time.time_ns() // 1000)
        self.connect_timeout = connect_timeout
        # 2, not 3: probes travel in their own egress priority queue (fabric.p4), so a full
        # data queue no longer drops them, and late PacketIns lag all of a switch's ports alike
        self.probe_miss_periods = probe_miss_periods
        self.probe_rtt_s = probe_rtt_s
        """Wall seconds a probe's round trip counts as at least (controller.loops' round
        timeout): the packet-in path of this controller, whatever the period."""
        self._log = log
        self.events: list[ControlEvent] = []
        self.conns: dict[str, SwitchConnection] = {}
        self.scheme: Scheme = scheme_from_name(DEFAULT_SCHEME)
        self.group_schemes: dict[str | GroupKey, Scheme] = {}
        self.weights: dict[GroupKey, dict[int, float]] = {}
        self.admin_failed: set[frozenset[str]] = set()
        self.detected_failed: set[int] = set()
        self.entries: FabricEntries | None = None
        self.installed: dict[str, dict[EntryKey, Entry]] = {}
        self.stats: dict[str, float] = {}
        self.reused: set[str] = set()
        """Switches whose running pipeline (same cookie) was kept at the last push."""
        self._mu = threading.RLock()
        self._sw_locks = {s: threading.Lock() for s in spec.switches}
        self._pool = ThreadPoolExecutor(max_workers=min(32, max(4, len(spec.switches))),
                                        thread_name_prefix="fabric")
        self.loops: ControlLoops | None = None  # once started
        self._last_loops: ControlLoops | None = None
        self.loop_names: tuple[str, ...] = ()
        self.auto_loops = False
        """start(loops=None): Whack-a-Mole's loop joins when a group comes to use it."""
        self.packet_in_handlers: list[Callable[[PacketIn], None]] = []
        self._qmax_lock = threading.Lock()
        self._qmax_unseen: dict[str, dict[tuple[str, int], int]] = {}
        """Per reader of port_qdepth_max: maxima other readers cleared since its last read."""
        self._probe_handler: ProbeHandler | None = None

    # ---- events ------------------------------------------------------------------------------
    def event(self, loop: str, switch: str | None, what: str) -> ControlEvent:
        ev = ControlEvent(time.time(), loop, switch, what)
        self.events.append(ev)
        if callable(self._log) and not isinstance(self._log, logging.Logger):
            self._log(ev)
        else:
            (self._log or logging.getLogger("p4fabric.controller")).info(
                "[%s] %s: %s", loop, switch or "fabric", what)
        return ev

    # ---- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> FabricController:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _map(self, fn: Callable[[str], _T], switches: Iterable[str]) -> dict[str, _T]:
        """Run fn per switch in parallel; re-raise the first error (naming its switch)."""
        futs = {s: self._pool.submit(fn, s) for s in switches}
        out: dict[str, _T] = {}
        errors: list[Exception] = []
        for s, f in futs.items():
            try:
                out[s] = f.result()
            except Exception as e:  # collect all, report the first
                errors.append(e if isinstance(e, SwitchError)
                              else SwitchError(f"switch {s}: {type(e).__name__}: {e}"))
        if errors:
            raise errors[0]
        return out

    def start(self, scheme: Scheme | str = DEFAULT_SCHEME, loops: Sequence[str] | None = None,
              *, reuse_pipeline: bool = False) -> FabricController:
        """Connect, arbitrate, push the pipeline, install everything, start the loops.

        ``loops``: the control loops to run; None (default): the failure and reconcile loops,
        and Whack-a-Mole's whenever a group uses it (:func:`auto_loops`; a later
        ``set_scheme`` that brings it in starts it). ``reuse_pipeline``: a switch already
        running this exact program (pipeline cookie) keeps it, with its counters and
        registers, and gets only the entry diff — fast re-attachment to a running fabric. Off
        by default: a fresh start is a clean slate."""
        if self.conns:
            raise RuntimeError("FabricController already started (stop() first)")
        self.scheme = scheme_from_name(scheme)
        self.auto_loops = loops is None
        loops = auto_loops(self.scheme) if loops is None else tuple(loops)
        bad = [n for n in loops if n not in LOOP_NAMES]
        if bad:
            raise ValueError(f"unknown loop(s) {bad} (choose from {', '.join(LOOP_NAMES)})")
        self.loop_names = tuple(loops)
        t0 = time.perf_counter()
        if self.program is None:
            self.program = (load_tofino_program(self._program_source)
                            if self.target == HardwareTarget.TOFINO
                            else compile_program(self.target, self._program_source))
        self.schema = P4Schema(self.program.p4info)
        if self.target == HardwareTarget.TOFINO:
            self._tna = TnaDriver(self.schema, self._to_dev, self._qscale)
        t1 = time.perf_counter()
        self.entries = self._compute()
        self._translate(self.entries)  # what the TNA program cannot take fails before connecting
        t2 = time.perf_counter()
        for name, sw in self.spec.switches.items():
            dev = self.devices.get(name)
            self.conns[name] = SwitchConnection(
                name, dev.addr if dev else sw.grpc_addr, dev.device_id if dev else sw.device_id,
                self.election_id, on_packet_in=self._on_packet_in,
                on_reconnect=self._on_reconnect)
        phase: dict[str, dict[str, float]] = {}

        def bring_up(name: str) -> None:
            a = time.perf_counter()
            self.conns[name].connect(self.connect_timeout)
            b = time.perf_counter()
            pipe_s, write_s = self._push_switch(name, reuse=reuse_pipeline)
            phase[name] = {"connect": b - a, "pipeline": pipe_s, "write": write_s,
                           "entries": len(self.installed[name])}

        try:
            self._map(bring_up, self.spec.switches)
        except Exception:
            self.stop()
            raise
        t3 = time.perf_counter()
        n = (self.entries.total() if self._tna is None
             else sum(len(t) for t in self._tna.installed.values()))
        self.stats = {"compile_s": t1 - t0, "routing_s": t2 - t1, "bring_up_s": t3 - t2,
                      "entries": n, "entries_per_s": n / (t3 - t2) if t3 > t2 else 0.0,
                      "max_connect_s": max(p["connect"] for p in phase.values()),
                      "max_pipeline_s": max(p["pipeline"] for p in phase.values()),
                      "max_write_s": max(p["write"] for p in phase.values()),
                      "write_entries_per_s": n / max(1e-9, max(p["write"]
                                                               for p in phase.values())),
                      "pipelines_reused": len(self.reused)}
        self.event("start", None, f"{len(self.conns)} switches programmed ({len(self.reused)} "
                   f"kept their pipeline), {n} entries, scheme {self.scheme.name}, "
                   f"in {t3 - t0:.2f} s")
        self._start_loops(loops)
        return self

    def _start_loops(self, loops: Sequence[str]) -> None:
        trip = max(1, math.ceil(self.probe_rtt_s / self.control_period - 1e-9))
        loops_ = ControlLoops(self, loops, miss_periods=self.probe_miss_periods,
                              min_round_trip=trip)
        if self._last_loops is not None:
            loops_.inherit(self._last_loops)   # the probes' round trips it measured
        if loops_.active:
            self._last_loops = loops_
            self.loops = loops_
            loops_.start(self.control_period)

    def set_loops(self, loops: Sequence[str]) -> None:
        """Run exactly these control loops from now on (the running ones stop first): e.g.
        Whack-a-Mole's, when a scheme change brings a group under it."""
        bad = [n for n in loops if n not in LOOP_NAMES]
        if bad:
            raise ValueError(f"unknown loop(s) {bad} (choose from {', '.join(LOOP_NAMES)})")
        if self.loops is not None:
            self.loops.stop()
            self.loops = None
        self.loop_names = tuple(loops)
        if self.conns:
            self._start_loops(loops)

    def stop(self) -> None:
        """Stop the loops and close every connection (the switches keep running)."""
        if self.loops is not None:
            self.loops.stop()
            self.loops = None
        for c in self.conns.values():
            c.close()
        self.conns = {}

    # ---- programming -------------------------------------------------------------------------
    def _failed(self) -> frozenset[int]:
        return failed_link_indexes(self.spec, self.admin_failed) | frozenset(self.detected_failed)

    def _compute(self) -> FabricEntries:
        return compute_fabric_entries(self.spec, self.scheme, self._failed(),
                                      group_schemes=self.group_schemes, weights=self.weights,
                                      ecn_threshold=self.ecn_threshold)

    def _translate(self, entries: FabricEntries) -> None:
        """For a Tofino fabric: every switch's TNA state (kept for the writes that follow);
        ValueError, with nothing written, for what the TNA program cannot take."""
        if self._tna is not None:
            tna = self._tna
            self._tna_want = {s: tna.translate(s, list(entries[s].entries))
                              for s in self.spec.switches}

    def _push_switch(self, name: str, reuse: bool = True) -> tuple[float, float]:
        """Bring one switch to the desired state; returns (pipeline s, write s).

        A switch that already runs this program (same cookie: a controller restart, a stream
        that broke while the switch lived) keeps its pipeline, registers and counters: its
        entries are read back and only the difference is written. Otherwise the pipeline is
        pushed and every entry inserted in one Write batch."""
        assert self.program is not None and self.schema is not None and self.entries is not None
        with self._sw_locks[name]:
            conn = self.conns[name]
            entries = list(self.entries[name].entries)
            if self._tna is not None:
                pipe_s, write_s, kept = self._tna.push(conn, name, entries, self.program, reuse)
                self.installed[name] = {e.key: e for e in self._tna.installed[name].entries}
                (self.reused.add if kept else self.reused.discard)(name)
                return pipe_s, write_s
            t0 = time.perf_counter()
            if reuse and conn.get_cookie() == self.program.cookie:
                try:
                    have = [self.schema.entry_of(e.table_entry)
                            for e in conn.read([self.schema.table_wildcard()])]
                except (KeyError, ValueError):
                    have = None  # not decodable as ours: start from scratch
                if have is not None:
                    t1 = time.perf_counter()
                    diff = diff_entries(have, entries)
                    conn.write([self.schema.update(op, e) for op, e in diff.ordered()])
                    self.installed[name] = {e.key: e for e in entries}
                    self.reused.add(name)
                    return t1 - t0, time.perf_counter() - t1
            conn.set_pipeline(self.program.p4info, self.program.device_config,
                              cookie=self.program.cookie)
            t1 = time.perf_counter()
            conn.write([self.schema.update("insert", e) for e in entries])
            self.installed[name] = {e.key: e for e in entries}
            self.reused.discard(name)
            return t1 - t0, time.perf_counter() - t1

    def _apply_switch(self, name: str) -> int:
        assert self.schema is not None and self.entries is not None
        with self._sw_locks[name]:
            if self._tna is not None:
                n = self._tna.apply(self.conns[name], name, self._tna_want[name])
                self.installed[name] = {e.key: e for e in self._tna.installed[name].entries}
                return n
            new = self.entries[name].entries
            diff = diff_entries(self.installed.get(name, {}).values(), new)
            if len(diff):
                self.conns[name].write([self.schema.update(op, e) for op, e in diff.ordered()])
                self.installed[name] = {e.key: e for e in new}
            return len(diff)

    def apply(self, loop: str = "api", why: str = "") -> int:
        """Recompute the desired entries and write the diff to every switch that changed.
        On a Tofino fabric, ValueError (nothing written, nothing changed) for a state the TNA
        program cannot take."""
        with self._mu:
            entries = self._compute()
            self._translate(entries)
            self.entries = entries
            if not self.conns:
                return 0
            counts = self._map(self._apply_switch, [s for s in self.spec.switches
                                                    if self.conns[s].connected])
        total = sum(int(v) for v in counts.values())
        changed = sorted(s for s, v in counts.items() if v)
        if why or total:
            self.event(loop, None, f"{why}: {total} updates on {len(changed)} switches "
                       f"({', '.join(changed[:6])}{' ...' if len(changed) > 6 else ''})")
        return total

    def _on_reconnect(self, conn: SwitchConnection) -> None:
        if ControlLoop.RECONCILE not in self.loop_names:
            self.event("reconcile", conn.name, "reconnected; not re-programmed (loop off)")
            return
        try:
            # not under self._mu: the push (the switch compiles the program) may take seconds,
            # and the loops must keep probing meanwhile; the switch lock serialises it with
            # any concurrent diff for this switch
            self._push_switch(conn.name)
            how = ("same pipeline kept, entries diffed" if conn.name in self.reused
                   else "pipeline pushed")
            self.event("reconcile", conn.name, f"reconnected: {how}, "
                       f"{len(self.installed[conn.name])} entries")
        except SwitchError as e:
            self.event("reconcile", conn.name, f"re-push failed: {e}")

    def _on_packet_in(self, pkt: PacketIn) -> None:
        self._on_probe(pkt)
        for h in list(self.packet_in_handlers):
            h(pkt)

    # ---- what the control loops use (controller.loops.FabricControl) -------------------------
    def send_probes(self, seq: int) -> None:
        """Round ``seq`` of failure probes: a packet-out on every switch-switch port."""
        if self.schema is None:
            return
        with self._mu:
            held = set(self.admin_failed)
        for name, sw in self.spec.switches.items():
            conn = self.conns.get(name)
            if conn is None or not conn.connected:
                continue
            for port, (peer, _) in sorted(self.spec.ports(name).items()):
                # an operator's failed link is not probed: a cut one would drop every probe
                # at its interface (drops the guard counts against the run)
                if peer not in self.spec.switches or frozenset({name, peer}) in held:
                    continue
                pkt = self.schema.packet_out(probe_frame(sw.device_id, port, seq,
                                                         sw.port_mac(port)),
                                             egress_port=self.dev_port(name, port))
                try:
                    conn.packet_out(pkt)
                except SwitchError:
                    break

    def operator_failed(self) -> frozenset[int]:
        """The links ``fail_link`` took out of service (not probed, not the loops' to judge)."""
        with self._mu:
            return failed_link_indexes(self.spec, self.admin_failed)

    def listen_probes(self, handler: ProbeHandler | None) -> None:
        """Hand every probe that comes back as a packet-in to ``handler`` (None: stop)."""
        self._probe_handler = handler

    def _on_probe(self, pkt: PacketIn) -> None:
        handler = self._probe_handler
        probe = parse_probe(pkt.payload)
        if handler is None or probe is None or self.schema is None:
            return
        port = self.schema.packet_in_metadata(pkt.metadata).get("ingress_port")
        if port is not None:
            handler(pkt.switch, self.spec_port(pkt.switch, port), *probe)

    def set_detected_failed(self, links: frozenset[int], loop: str = "failure",
                            why: str = "reroute") -> int:
        """Route around exactly these links (the failure loop's verdict), besides the ones
        failed with ``fail_link``."""
        with self._mu:
            self.detected_failed = set(links)
            return self.apply(loop, why)

    def wam_groups(self) -> list[Group]:
        """The Whack-a-Mole groups of the connected switches."""
        with self._mu:
            entries = self.entries
        if entries is None:
            return []
        return [g for s in entries for gid, g in sorted(entries[s].groups.items())
                if entries[s].scheme[gid].control_loop == ControlLoop.WAM
                and (c := self.conns.get(s)) is not None and c.connected]

    def group_weights(self, switch: str, group_id: int) -> dict[int, float]:
        """The member weights of a group (1.0 = an equal share; by port)."""
        with self._mu:
            return dict(self.weights.get((switch, group_id), {}))

    def read_qdepth_max(self, switches: Sequence[str]) -> dict[tuple[str, int], int]:
        """(switch, port) -> max egress queue depth since the last read; cleared."""
        q = self.read_queues(clear=True, switches=switches, reader="wam")
        return {(str(s), int(p)): int(d)
                for s, p, d in zip(q["switch"], q["port"], q["qdepth_max"], strict=True)}

    def set_group_weights(self, weights: Mapping[GroupKey, Mapping[int, float]],
                          loop: str = "api", why: str = "weights") -> int:
        """Several groups' member weights by port, written in one diff (no checks: the
        loops' way; a script uses ``set_weights``)."""
        with self._mu:
            for key, w in weights.items():
                self.weights[key] = {int(p): float(v) for p, v in w.items()}
            return self.apply(loop, why)

    # ---- the scripting API -------------------------------------------------------------------
    def set_scheme(self, scheme: Scheme | str, group: str | GroupKey | None = None) -> int:
        """Scheme of every group (None), of one switch's groups, or of (switch, group_id)."""
        s = scheme_from_name(scheme)
        with self._mu:
            before = (self.scheme, dict(self.group_schemes))
            if group is None:
                self.scheme = s
                self.group_schemes.clear()
            elif isinstance(group, str):
                self._check_switch(group)
                self.group_schemes = {k: v for k, v in self.group_schemes.items()
                                      if not (isinstance(k, tuple) and k[0] == group)}
                self.group_schemes[group] = s
            else:
                self._check_group(*group)
                self.group_schemes[(group[0], group[1])] = s
            try:
                n = self.apply("api", f"scheme {s.name} for {group or 'every group'}")
            except ValueError:  # the target cannot take it (tofino): nothing was written
                self.scheme, self.group_schemes = before
                raise
        if self.auto_loops and self.conns:   # outside _mu: stopping the loops joins them
            want = auto_loops(self.scheme, *self.group_schemes.values(), have=self.loop_names)
            if want != self.loop_names:
                self.set_loops(want)
                self.event("loops", None, f"loops {', '.join(want)} ({s.name} needs its own)")
        return n

    def set_weights(self, switch: str, group_id: int,
                    weights: Sequence[float] | Mapping[int, float]) -> int:
        """Per-member weights (member order, or {port: weight}); WaM splits its balls by them,
        the hashing schemes install weighted ECMP."""
        g = self._check_group(switch, group_id)
        if isinstance(weights, Mapping):
            w = {int(p): float(v) for p, v in weights.items()}
            unknown = set(w) - set(g.ports)
            if unknown:
                raise ValueError(f"{switch} group {group_id}: ports {sorted(unknown)} are not "
                                 f"members {list(g.ports)}")
        else:
            if len(weights) != len(g.ports):
                raise ValueError(f"{switch} group {group_id} has {len(g.ports)} members, got "
                                 f"{len(weights)} weights")
            w = dict(zip(g.ports, map(float, weights), strict=True))
        if any(v < 0 for v in w.values()) or sum(w.values()) <= 0:
            raise ValueError("weights must be non-negative with a positive sum")
        with self._mu:
            self.weights[(switch, group_id)] = w
            return self.apply("api", f"weights {switch}/{group_id} = "
                              f"{[round(w.get(p, 1.0), 3) for p in g.ports]}")

    def _check_switch(self, switch: str) -> None:
        if switch not in self.spec.switches:
            raise ValueError(f"unknown switch {switch!r}")

    def _check_group(self, switch: str, group_id: int) -> Group:
        self._check_switch(switch)
        entries = self.entries or self._compute()
        try:
            return entries[switch].groups[group_id]
        except KeyError:
            raise ValueError(f"switch {switch} has no LB group {group_id} (groups: "
                             f"{sorted(entries[switch].groups)})") from None

    def groups(self) -> pd.DataFrame:
        """Every LB group: switch, group, scheme, ports, peers, destinations."""
        entries = self.entries or self._compute()
        rows = [{"switch": s, "group": gid, "scheme": entries[s].scheme[gid].name,
                 "ports": g.ports, "peers": g.peers, "destinations": len(g.destinations)}
                for s in entries for gid, g in sorted(entries[s].groups.items())]
        return pd.DataFrame(rows, columns=["switch", "group", "scheme", "ports", "peers",
                                           "destinations"])

    # ---- links -------------------------------------------------------------------------------
    def _pair(self, a: str, b: str) -> frozenset[str]:
        if not self.spec.links_between(a, b):
            raise ValueError(f"no link between {a!r} and {b!r}")
        return frozenset({a, b})

    def fail_link(self, a: str, b: str) -> int:
        """Administratively route around every link a-b (P4 side only; the link stays up)."""
        with self._mu:
            self.admin_failed.add(self._pair(a, b))
            return self.apply("api", f"fail_link {a}-{b}")

    def restore_link(self, a: str, b: str) -> int:
        with self._mu:
            self.admin_failed.discard(self._pair(a, b))
            return self.apply("api", f"restore_link {a}-{b}")

    def link_state(self) -> dict[frozenset[str], bool]:
        """Node pair of every switch-switch link -> up (neither failed by an operator nor
        detected down by the failure loop; with parallel links: all of them). Consistent with
        the switches: a change shows here once its reroute is written."""
        with self._mu:
            failed = self._failed()
        out: dict[frozenset[str], bool] = {}
        for i, lk in enumerate(self.spec.links):
            if lk.a in self.spec.switches and lk.b in self.spec.switches:
                pair = frozenset({lk.a, lk.b})
                out[pair] = out.get(pair, True) and i not in failed
        return out

    # ---- ports: the fabric spec's numbers and a real switch's ----------------------------------
    def dev_port(self, switch: str, port: int) -> int:
        """The switch's own number for spec port ``port`` (``devices``' port map)."""
        return self._to_dev.get(switch, {}).get(port, port)

    def spec_port(self, switch: str, dev_port: int) -> int:
        """The spec's number of the switch's port ``dev_port``."""
        return self._from_dev.get(switch, {}).get(dev_port, dev_port)

    # ---- reads -------------------------------------------------------------------------------
    def _conn(self, switch: str) -> SwitchConnection:
        try:
            return self.conns[switch]
        except KeyError:
            raise SwitchError(f"switch {switch}: not connected (start() first)") from None

    def _read_counters_of(self, name: str) -> list[dict[str, Any]]:
        assert self.schema is not None and self.entries is not None
        sch = self.schema
        ports = sorted(self.spec.ports(name))
        ents = [sch.counter_entity(c, self.dev_port(name, p)) for c in PORT_COUNTERS
                for p in ports]
        ents += [sch.counter_entity(DROP_CTR, r) for r in DROP_REASONS]
        slots: dict[int, tuple[int, int, int]] = {}
        for e in self.installed.get(name, {}).values():
            if e.table == "MyIngress.lb_member":
                m = e.match_dict
                g, i = m["meta.lb.group_id"], m["meta.lb.member_idx"]
                assert isinstance(g, ExactMatch) and isinstance(i, ExactMatch)
                gid, idx = g.value, i.value
                slots[gid * LB_MAX_MEMBERS + idx] = (gid, idx,
                                                     self.spec_port(name, e.params_dict["port"]))
        ents += [sch.counter_entity(MEMBER_CTR, i) for i in sorted(slots)]
        rows = []
        for ent in self._conn(name).read(ents):
            ce = ent.counter_entry
            cname = sch.counter_name(ce.counter_id)
            idx = ce.index.index
            row = {"switch": name, "counter": cname.split(".")[-1], "index": idx,
                   "packets": ce.data.packet_count, "bytes": ce.data.byte_count}
            if cname in PORT_COUNTERS:
                row["port"] = self.spec_port(name, idx)
            elif cname == DROP_CTR:
                row["reason"] = DROP_REASONS.get(idx, str(idx))
            elif cname == MEMBER_CTR and idx in slots:
                row["group"], row["member"], row["port"] = slots[idx]
            rows.append(row)
        return rows

    def read_counters(self, switches: Iterable[str] | None = None) -> pd.DataFrame:
        """Tidy counters over P4Runtime: port rx/tx, drops per reason, LB members."""
        names = list(switches) if switches is not None else list(self.spec.switches)
        per = self._map(self._read_counters_of, names)
        rows = [r for n in names for r in per[n]]
        df = pd.DataFrame(rows, columns=COUNTER_COLUMNS)
        for c in ("port", "group", "member"):
            df[c] = df[c].astype("Int64")
        return df

    def read_registers(self, switch: str, register: str, indexes: Sequence[int]) -> list[int]:
        """Register cells over P4Runtime; on BMv2, whose P4Runtime answers UNIMPLEMENTED for
        registers, through simple_switch_CLI on the switch's Thrift port."""
        return self._read_register_cells(switch, {register: indexes})[register]

    def _read_register_cells(self, switch: str, cells: Mapping[str, Sequence[int]]
                             ) -> dict[str, list[int]]:
        """Several registers' cells in one Read RPC: a sampler that asks a busy software
        switch once instead of once per register waits for it once."""
        assert self.schema is not None
        sch = self.schema
        try:
            ents = self._conn(switch).read([sch.register_entity(r, i)
                                            for r, idx in cells.items() for i in idx])
        except SwitchError as e:
            if self.target != Target.BMV2 or "UNIMPLEMENTED" not in str(e):
                raise
            flat = self._bmv2_cli(switch, [f"register_read {r} {i}"
                                           for r, idx in cells.items() for i in idx], parse=True)
            out, k = {}, 0
            for r, idx in cells.items():
                out[r] = flat[k:k + len(idx)]
                k += len(idx)
            return out
        got = {(e.register_entry.register_id, e.register_entry.index.index):
               int.from_bytes(e.register_entry.data.bitstring, "big") for e in ents}
        ids = {r: sch.register_entity(r).register_entry.register_id for r in cells}
        return {r: [got.get((ids[r], i), 0) for i in idx] for r, idx in cells.items()}

    def write_registers(self, switch: str, register: str, values: Mapping[int, int]) -> None:
        assert self.schema is not None
        try:
            self._conn(switch).write([self.schema.register_write(register, i, v)
                                      for i, v in values.items()])
        except SwitchError as e:
            if self.target != Target.BMV2 or "UNIMPLEMENTED" not in str(e):
                raise
            self._bmv2_cli(switch, [f"register_write {register} {i} {v}"
                                    for i, v in values.items()])

    def _bmv2_cli(self, switch: str, commands: list[str], parse: bool = False) -> list[int]:
        sw = self.spec.switches[switch]
        res = subprocess.run(["simple_switch_CLI", "--thrift-port", str(sw.thrift_port)],
                             input="\n".join(commands) + "\n", capture_output=True, text=True,
                             timeout=30)
        if res.returncode != 0 or "Could not connect" in res.stdout + res.stderr:
            raise SwitchError(f"switch {switch}: BMv2 has no P4Runtime registers and "
                              f"simple_switch_CLI --thrift-port {sw.thrift_port} failed (is "
                              f"simple_switch_grpc built with Thrift?): "
                              f"{(res.stderr or res.stdout).strip()[:200]}")
        if not parse:
            return []
        values = [int(v) for v in re.findall(r"\[\d+\]\s*=\s*(\d+)", res.stdout)]
        if len(values) != len(commands):
            raise SwitchError(f"switch {switch}: simple_switch_CLI answered {len(values)} of "
                              f"{len(commands)} register reads")
        return values

    def _queues_of(self, name: str, clear: bool, reader: str = "api") -> list[dict[str, Any]]:
        ports = sorted(p for p, (peer, _) in self.spec.ports(name).items())
        dev = [self.dev_port(name, p) for p in ports]
        cells = self._read_register_cells(name, {QDEPTH_MAX: dev, QDEPTH_LAST: dev})
        scale = self._qscale[name]
        mx = [-(-v // scale) for v in cells[QDEPTH_MAX]]  # in packets, a non-empty queue > 0
        last = [-(-v // scale) for v in cells[QDEPTH_LAST]]
        if clear:
            self.write_registers(name, QDEPTH_MAX, {p: 0 for p in dev})
            mx = self._clearing_read(reader, name, ports, mx)
        peers = self.spec.ports(name)
        return [{"switch": name, "port": p, "peer": peers[p][0], "qdepth_max": a,
                 "qdepth_last": b} for p, a, b in zip(ports, mx, last, strict=True)]

    def _clearing_read(self, reader: str, switch: str, ports: Sequence[int],
                       read: Sequence[int]) -> list[int]:
        """Each reader that clears ``port_qdepth_max`` (the Whack-a-Mole loop, a run's
        sampler, a user) sees the maximum since *its own* last read: what the others cleared
        in between is kept for it here. Without this a sampler clearing at the loop's period
        hid half of every congestion episode from the loop."""
        with self._qmax_lock:
            mine = self._qmax_unseen.setdefault(reader, {})
            out = [max(int(v), mine.pop((switch, p), 0)) for p, v in zip(ports, read,
                                                                         strict=True)]
            for other, unseen in self._qmax_unseen.items():
                if other != reader:
                    for p, v in zip(ports, read, strict=True):
                        if v:
                            unseen[(switch, p)] = max(unseen.get((switch, p), 0), int(v))
        return out

    def read_queues(self, clear: bool = False, switches: Iterable[str] | None = None,
                    reader: str = "api") -> pd.DataFrame:
        """Per switch port: max queue depth since the last clear (with ``clear``: since this
        ``reader``'s last clearing read, whoever else cleared meanwhile), and the latest one;
        in packets (a Tofino's cells ÷ its ``SwitchDevice.qdepth_scale``, rounded up)."""
        names = list(switches) if switches is not None else list(self.spec.switches)
        per = self._map(lambda n: self._queues_of(n, clear, reader), names)
        rows = [r for n in names for r in per[n]]
        return pd.DataFrame(rows, columns=["switch", "port", "peer", "qdepth_max",
                                           "qdepth_last"])

    def read_links(self) -> pd.DataFrame:
        """One row per direction of every switch-switch link, with the sender's tx counters."""
        return self.links_from_counters(self.read_counters())

    def links_from_counters(self, counters: pd.DataFrame) -> pd.DataFrame:
        """The link view of a ``read_counters`` table, so a sampler that wants both reads the
        switches once."""
        tx = counters[counters["counter"] == "port_tx_ctr"]
        tx = {(s, int(p)): (int(n), int(b)) for s, p, n, b in
              zip(tx["switch"], tx["port"], tx["packets"], tx["bytes"], strict=True)}
        failed = self._failed()
        rows = []
        for idx, lk in enumerate(self.spec.links):
            if lk.a not in self.spec.switches or lk.b not in self.spec.switches:
                continue
            for (s, sp), (d, dp) in (((lk.a, lk.a_port), (lk.b, lk.b_port)),
                                     ((lk.b, lk.b_port), (lk.a, lk.a_port))):
                n, b = tx.get((s, sp), (0, 0))
                rows.append({"src": s, "src_port": sp, "dst": d, "dst_port": dp,
                             "tx_packets": n, "tx_bytes": b, "up": idx not in failed})
        return pd.DataFrame(rows, columns=["src", "src_port", "dst", "dst_port", "tx_packets",
                                           "tx_bytes", "up"])

    def _routes_of(self, name: str) -> list[dict[str, Any]]:
        assert self.schema is not None
        ent = self.schema.table_wildcard("MyIngress.ipv4_lpm")
        ent.table_entry.counter_data.SetInParent()  # ask for the direct counter too
        rows = []
        for e in self._conn(name).read([ent]):
            te = e.table_entry
            entry = self.schema.entry_of(te)
            m = entry.match_dict.get("hdr.ipv4.dstAddr")
            prefix = (f"{ipaddress.IPv4Address(m.value)}/{m.prefix_len}"
                      if isinstance(m, LpmMatch) else "0.0.0.0/0")
            p = entry.params_dict
            port = p.get("port")
            rows.append({"switch": name, "prefix": prefix, "action": entry.action.split(".")[-1],
                         "group": p.get("group_id"),
                         "port": None if port is None else self.spec_port(name, port),
                         "packets": te.counter_data.packet_count,
                         "bytes": te.counter_data.byte_count})
        return rows

    def read_routes(self, switches: Iterable[str] | None = None) -> pd.DataFrame:
        """Every ipv4_lpm entry with its direct counter (ipv4_lpm_ctr): switch, prefix,
        action, group, port, packets, bytes — traffic per destination and switch."""
        names = list(switches) if switches is not None else list(self.spec.switches)
        per = self._map(self._routes_of, names)
        rows = [r for n in names for r in per[n]]
        df = pd.DataFrame(rows, columns=["switch", "prefix", "action", "group", "port",
                                         "packets", "bytes"])
        for c in ("group", "port"):
            df[c] = df[c].astype("Int64")
        return df

    def read_entries(self, switch: str, table: str | None = None) -> list[Entry]:
        """What the switch really holds (a P4Runtime wildcard read), decoded, in the switch's
        own port numbers. On a Tofino the entries that point at an action-profile group are
        left out: :meth:`read_tna_state` has them."""
        assert self.schema is not None
        ents = self._conn(switch).read([self.schema.table_wildcard(table)])
        return [self.schema.entry_of(e.table_entry) for e in ents
                if e.table_entry.action.WhichOneof("type") in ("action", None)]

    def read_tna_state(self, switch: str) -> TnaSwitchEntries:
        """A Tofino switch's whole state as the TNA entities: table entries, ``lb_select``
        entries, and the selector's members and groups (``model.tna``'s types)."""
        if self._tna is None:
            raise ValueError(f"read_tna_state is for target tofino (this fabric is {self.target})")
        return self._tna.read_state(self._conn(switch), switch)
