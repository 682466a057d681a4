"""``EbpfPipeline``: the BPF implementation of the pipeline's control-plane contract (api.py).

The data-plane interface both targets implement is ``p4switch.pipeline.api.PipelineAPI``: the
P4Runtime server, the switch and the tests drive either through it, unchanged. This one is the
Python ``Pipeline`` (which validates every write exactly as the Python target does and keeps
the control plane's view: entries, defaults, names) plus the kernel: after each accepted write
the affected tables are re-synced into their BPF maps (only the changed keys are written), and
counters, registers and direct counters are read from (and written to) the maps, where the
packets update them. The Python half never sees a packet on this target.
"""

from __future__ import annotations

import struct
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from common.histogram import BUCKETS, LogHistogram
from p4switch import ir
from p4switch.pipeline.api import (
    ActionProfileGroup,
    ActionProfileMember,
    Digest,
    Drop,
    ExactMatch,
    LpmMatch,
    MatchValue,
    MeterConfig,
    OptionalMatch,
    Output,
    ProcessResult,
    RangeMatch,
    Replica,
    StateCode,
    StateError,
    TableEntry,
    TernaryMatch,
)
from p4switch.pipeline.pipeline import Pipeline

from . import bpf, cgen, toolchain
from .layout import (
    GROUP_FLAG,
    GROUP_MAX,
    METER,
    PORT_QUEUE,
    REPL_MAX,
    STAT_NAMES,
    TXREC_HEAD,
    TableKind,
    TableLayout,
    pack_meter,
    pack_replicas,
)

_U32 = struct.Struct("<I")


_CFG = struct.Struct("<QIIQ")  # struct p4_cfg: t0_ns, test_mode, test_pad, test_now_us


def _test_min_len(data: bytes) -> int:
    """The shortest frame BPF_PROG_TEST_RUN takes for this one: an Ethernet header, and a
    whole IPv4/IPv6 header behind an IPv4/IPv6 ethertype. Shorter frames are padded with
    zeros that the program does not see (its packet length excludes them, ``test_pad``) and
    that are cut off its output."""
    et = data[12:14]
    if et == b"\x08\x00":
        return 34
    if et == b"\x86\xdd":
        return 54
    return 14


def _full(w: int) -> int:
    return (1 << w) - 1


def _prefix_mask(plen: int, w: int) -> int:
    return _full(w) ^ _full(w - plen) if plen else 0


def _meter_value(config: MeterConfig | None) -> bytes:
    if config is None:
        return bytes(METER.size)  # off: GREEN
    return pack_meter(config.cir, config.cburst, config.pir, config.pburst)


class _DirectMeters:
    """The meters of one table's entries: a slot (1-based) of the table's ``_dm`` array per
    entry, written when the entry's meter config changes (its buckets start full)."""

    def __init__(self, m: bpf.Map, size: int) -> None:
        self.map = m
        self.free = list(range(size, 0, -1))
        self.slots: dict[Any, tuple[int, MeterConfig | None]] = {}

    def slot(self, ident: Any, config: MeterConfig | None) -> int:
        got = self.slots.get(ident)
        if got is not None and got[1] == config:
            return got[0]
        n = got[0] if got is not None else self.free.pop()
        self.map.update(_U32.pack(n), _meter_value(config))
        self.slots[ident] = (n, config)
        return n

    def release_except(self, live: set[Any]) -> None:
        for ident in [i for i in self.slots if i not in live]:
            n, _ = self.slots.pop(ident)
            self.map.update(_U32.pack(n), _meter_value(None))
            self.free.append(n)


class EbpfPipeline(Pipeline):
    """A v1model program compiled to BPF and loaded (not yet attached: ``attach``).

    ``test_mode``: the program takes the ingress port from ``skb->mark`` and returns the egress
    port in it instead of redirecting, for ``run()`` (BPF_PROG_TEST_RUN) in tests."""

    def __init__(self, program: ir.Program, *, drop_port: int = 511, cpu_port: int | None = None,
                 seed: int | None = None, test_mode: bool = False,
                 workdir: str | Path | None = None) -> None:
        gen = cgen.generate(program, drop_port=drop_port, cpu_port=cpu_port)  # refuse first
        super().__init__(program, drop_port=drop_port, cpu_port=cpu_port, seed=seed)
        self.layout = gen.layout
        self.c_source = gen.source
        self._tmp = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="p4ft-ebpf-")
            workdir = self._tmp.name
        obj_path = toolchain.compile_c(gen.source, Path(workdir))
        self.obj = bpf.BpfObject(obj_path)
        self.prog_fd = self.obj.prog_fd(gen.entry)
        self._attached: list[bpf.TcAttachment] = []
        self.t0_ns = time.monotonic_ns()
        self._cfg = self.obj.map("p4cfg", 4, _CFG.size)
        self._cfg.update(_U32.pack(0), _CFG.pack(self.t0_ns, int(test_mode), 0, 0))
        self._ports_in = self.obj.map("p4ports_in", 4, 4)
        self._ports_out = self.obj.map("p4ports_out", 4, 4)
        self._stats = self.obj.map("p4stats", 4, 8, percpu=True)
        self._queues = self.obj.map("p4queues", 4, PORT_QUEUE.size)
        self._hist = self.obj.map("p4hist", 4, 8, percpu=True)
        self._tmaps: dict[str, tuple[bpf.Map, bpf.Map, bpf.Map | None]] = {}
        self._synced: dict[str, dict[bytes, tuple[Any, bytes]]] = {}
        self._dm: dict[str, _DirectMeters] = {}
        self._gmaps: dict[str, bpf.Map] = {}
        for cp, tl in self.layout.tables.items():
            ent_size = tl.scan_entry_size if tl.kind is TableKind.SCAN else tl.value_size
            ksize = 4 if tl.kind is TableKind.SCAN else (
                tl.key_bytes + 4 if tl.kind is TableKind.LPM else max(tl.key_bytes, 1))
            main = self.obj.map(tl.map_name, ksize, ent_size)
            dflt = self.obj.map(tl.map_name + "_def", 4, tl.value_size)
            cnt = self.obj.map(tl.map_name + "_n", 4, 4) if tl.kind is TableKind.SCAN else None
            self._tmaps[cp] = (main, dflt, cnt)
            self._synced[cp] = {}
            if tl.selector:
                self._gmaps[cp] = self.obj.map(tl.map_name + "_grp", 4,
                                               8 + GROUP_MAX * tl.value_size)
            if tl.direct_meter:
                self._dm[cp] = _DirectMeters(self.obj.map(tl.map_name + "_dm", 4, METER.size),
                                             tl.size)
            self._sync_table(cp)
        self._cmaps = {cp: self.obj.map(c.map_name, 4, 16, percpu=True)
                       for cp, c in self.layout.counters.items()}
        self._rmaps = {cp: self.obj.map(r.map_name, 4, 16)
                       for cp, r in self.layout.registers.items()}
        self._mmaps = {cp: self.obj.map(m.map_name, 4, METER.size)
                       for cp, m in self.layout.meters.items()}
        for cp in self._mmaps:  # meters configured before the load (none yet: all GREEN)
            for i, tr in enumerate(self.meters[cp].meters):
                self._write_meter(cp, i, tr.config)
        self._ring = (bpf.RingBuffer(self.obj.map("p4digests", 0, 0).fd)
                      if self.layout.digests else None)
        self._mcast_map: bpf.Map | None = None
        self._clone_map: bpf.Map | None = None
        self._tx: bpf.RingBuffer | None = None
        if self.layout.replication:
            self._mcast_map = self.obj.map("p4mcast", 4, 8 + 8 * REPL_MAX)
            self._clone_map = self.obj.map("p4clone", 4, 8 + 8 * REPL_MAX)
            self._tx = bpf.RingBuffer(self.obj.map("p4tx", 0, 0).fd)
        self._ring_lock = threading.Lock()  # a reader thread polls while a swap closes it
        self._digest_by_id = {d.id: d for d in self.layout.digests.values()}
        self.test_mode = test_mode
        # packets never run in Python on this target: process() is the kernel's (test mode)
        self.process = self._process_bpf  # type: ignore[method-assign]
        self.__dict__.pop("process_fast", None)

    # -- ports -----------------------------------------------------------------------------
    def attach(self, ports: dict[int, str]) -> None:
        """Map port numbers to interfaces and attach the program on each one's tc ingress."""
        import socket

        for number, ifname in ports.items():
            ifindex = socket.if_nametoindex(ifname)
            self._ports_in.update(_U32.pack(ifindex), _U32.pack(number))
            self._ports_out.update(_U32.pack(number), _U32.pack(ifindex))
        for number, ifname in ports.items():
            self._attached.append(bpf.TcAttachment.attach(socket.if_nametoindex(ifname),
                                                          self.prog_fd))
            del number

    def detach(self) -> None:
        for a in self._attached:
            a.detach()
        self._attached.clear()

    def close(self, *, detach: bool = True) -> None:
        """Release the object; ``detach=False`` leaves the interfaces' filters alone (a newer
        program replaced them, and the kernel keeps this one alive until it did)."""
        if detach:
            self.detach()
        self._attached.clear()
        with self._ring_lock:
            if self._ring is not None:
                self._ring.close()
                self._ring = None
            if self._tx is not None:
                self._tx.close()
                self._tx = None
        self.obj.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def set_port_queue(self, port: int, rate_bps: float | None, depth: int,
                       priorities: int = 1) -> None:
        """The egress queue model of ``port`` (module cgen, ``p4queues``): served at
        ``rate_bps`` (None/0: no queue, as an unlimited Python queue never holds a packet),
        tail drop beyond ``depth`` packets in each of ``priorities`` strict-priority queues.
        Its counters and busy-until times are kept."""
        raw = self._queues.lookup(_U32.pack(port))
        _, _, nxt, _, _, _, enq, drops, nxt_hi, most = PORT_QUEUE.unpack(
            raw[:PORT_QUEUE.size]) if raw else (0,) * 10
        self._queues.update(_U32.pack(port), PORT_QUEUE.pack(
            0, 0, nxt, int(rate_bps or 0), depth, priorities, enq, drops, nxt_hi, most))

    def port_queue(self, port: int) -> dict[str, int]:
        """The queue model's state: ``backlog_ns`` (time until the link is free),
        ``enqueued``, ``tail_drops``, ``max_depth`` (packets, itself included), ``rate_bps``,
        ``depth``."""
        raw = self._queues.lookup(_U32.pack(port))
        if raw is None:
            return {}
        _, _, nxt, rate, depth, _, enq, drops, _, most = PORT_QUEUE.unpack(
            raw[:PORT_QUEUE.size])
        return {"backlog_ns": max(0, nxt - time.monotonic_ns()), "enqueued": enq,
                "tail_drops": drops, "max_depth": most, "rate_bps": rate, "depth": depth}

    def histograms(self) -> tuple[LogHistogram, LogHistogram]:
        """(ingress lag, egress queueing delay) in µs as the program recorded them (cruntime's
        ``p4hist``), summed over CPUs."""
        lag, egress = LogHistogram(), LogHistogram()
        for i in range(2 * BUCKETS):
            n = sum(struct.unpack("<Q", v)[0] for v in self._hist.percpu_values(_U32.pack(i)))
            if n:
                (lag if i < BUCKETS else egress).counts[i % BUCKETS] += n
        return lag, egress

    def stats(self) -> dict[str, int]:
        """Packet-path statistics summed over CPUs (layout.STAT_NAMES)."""
        out = {}
        for i, name in enumerate(STAT_NAMES):
            vals = self._stats.percpu_values(_U32.pack(i))
            out[name] = sum(struct.unpack("<Q", v)[0] for v in vals)
        return out

    def run(self, data: bytes, port: int, now_us: int = 0) -> tuple[int, bytes] | None:
        """One packet through the loaded program (BPF_PROG_TEST_RUN, test_mode only) at the
        time ``now_us`` (the program's clock in test mode): (egress port, bytes) of its first
        output, or None if it sent none."""
        out = self.run_all(data, port, now_us)
        return out[0] if out else None

    def run_all(self, data: bytes, port: int, now_us: int = 0) -> list[tuple[int, bytes]]:
        """Every frame one packet makes (clones and multicast copies first, in the order the
        program sent them, then the packet itself): (egress port, bytes) each."""
        pad = max(0, _test_min_len(data) - len(data))
        self._cfg.update(_U32.pack(0), _CFG.pack(self.t0_ns, 1, pad, now_us))
        rc, out, mark = bpf.test_run(self.prog_fd, data + bytes(pad), port)
        frames = []
        for rec in self._tx.consume() if self._tx is not None else []:
            p, n, rcut, _ = TXREC_HEAD.unpack_from(rec)
            body = rec[TXREC_HEAD.size:TXREC_HEAD.size + n]
            frames.append((p & 0xFFFF, body[:max(0, len(body) - pad - rcut)]))
        if rc == bpf.TC_ACT_SHOT:
            return frames
        cut = pad + (mark >> 16)  # the program reports bytes it kept beyond a short frame
        frames.append((mark & 0xFFFF, out[:len(out) - cut] if cut else out))
        return frames

    def read_digests(self, timeout_ms: int = 0) -> list[Digest]:
        """The digests the program has emitted since the last call, oldest first."""
        with self._ring_lock:
            if self._ring is None:
                return []
            records = self._ring.consume(timeout_ms)
        out = []
        for rec in records:
            dl = self._digest_by_id.get(struct.unpack_from("<I", rec)[0])
            if dl is not None:
                receiver, values = dl.unpack(rec)
                out.append(Digest(dl.name, receiver, values))
        return out

    def _process_bpf(self, data: bytes, port: int, now_us: int) -> ProcessResult:
        """``process`` through the kernel (test mode, at the caller's ``now_us``). Frames the test-run facility refuses (an IPv4 ethertype with
        less than an IPv4 header behind it) are reported as dropped with reason ``error``."""
        if not self.test_mode:
            raise RuntimeError("EbpfPipeline.process needs test_mode (packets arrive in the kernel)")
        try:
            got = self.run_all(data, port, now_us)
        except bpf.BpfError as e:
            return ProcessResult(drops=[Drop("error", f"test run refused the frame: {e}")])
        digests = self.read_digests()
        if not got:
            return ProcessResult(digests=digests,
                                 drops=[Drop("mark_to_drop", "dropped in the kernel")])
        return ProcessResult(outputs=[Output(p, b) for p, b in got], digests=digests)

    # -- table sync ------------------------------------------------------------------------
    def _action_id(self, tl: TableLayout, action: str) -> int:
        key = self.resolve("action", action)
        return tl.actions.index(key) + 1

    def _value(self, tl: TableLayout, action: str, params: dict[str, int],
               counters: tuple[int, int] = (0, 0), meter_slot: int = 0) -> bytes:
        key = self.resolve("action", action)
        act = self.program.actions[key]
        data = [params.get(p.name, 0) for p in act.data_params]
        return tl.pack_value(self._action_id(tl, action), data, *counters, meter_slot)

    def _desired(self, cp: str, tl: TableLayout) -> dict[bytes, tuple[Any, bytes]]:
        """map key -> (entry identity, value) for every entry of table ``cp``."""
        ts = self.tables[cp]
        out: dict[bytes, tuple[Any, bytes]] = {}
        entries = sorted(ts.entries.items(), key=lambda kv: kv[1].seq)
        if tl.kind is TableKind.SCAN:
            def order(kv: tuple[Any, Any]) -> tuple[int, int]:
                e = kv[1].entry
                if ts.table.has_priority:
                    return (-e.priority, kv[1].seq)
                plen = sum(m.prefix_len for m in e.match.values() if isinstance(m, LpmMatch))
                return (-plen, kv[1].seq)
            entries.sort(key=order)
        dm = self._dm.get(cp)
        groups: dict[int, int] = {}
        for i, (ident, es) in enumerate(entries):
            e = es.entry
            if e.action is not None:
                slot = dm.slot(ident, es.meter.config) if dm is not None else 0
                value = self._value(tl, e.action, e.params, (es.packets, es.bytes), slot)
            elif e.member_id is not None:  # an action-profile member: its action and data
                assert ts.profile is not None
                mem = ts.profile.members[e.member_id]
                value = self._value(tl, mem.action, mem.params)
            else:  # a selector group: its slot in the table's _grp array
                assert e.group_id is not None
                slot = groups.setdefault(e.group_id, len(groups))
                value = tl.pack_value(GROUP_FLAG | slot, [])
            if tl.kind is TableKind.SCAN:
                lo, hi, mask = [], [], []
                for k in tl.keys:
                    a, b, m = self._scan_key(e.match.get(k.name), k.width)
                    lo.append(a)
                    hi.append(b)
                    mask.append(m)
                out[_U32.pack(i)] = (ident, tl.pack_scan_entry(value, lo, hi, mask))
            else:
                vals, plen = [], None
                for k in tl.keys:
                    mv = e.match.get(k.name)
                    if isinstance(mv, LpmMatch):
                        vals.append(mv.value & _prefix_mask(mv.prefix_len, k.width))
                        plen = mv.prefix_len
                    elif isinstance(mv, ExactMatch):
                        vals.append(mv.value)
                    else:  # no match value: the lpm key's wildcard
                        vals.append(0)
                        plen = 0
                out[tl.pack_key(vals, plen)] = (ident, value)
        if groups:
            self._write_groups(cp, tl, groups)
        return out

    def _group_values(self, tl: TableLayout, group_id: int) -> list[bytes]:
        """A group's member values as the Python target lists them (ascending member id,
        each repeated by its weight)."""
        prof = self.profiles[tl.profile or ""]
        out = []
        for mid, weight in sorted(prof.groups[group_id].members):
            mem = prof.members[mid]
            out += [self._value(tl, mem.action, mem.params)] * max(weight, 1)
        return out

    def _write_groups(self, cp: str, tl: TableLayout, groups: dict[int, int]) -> None:
        gmap = self._gmaps[cp]
        for gid, slot in groups.items():
            vals = self._group_values(tl, gid)
            empty = bytes(tl.value_size)
            gmap.update(_U32.pack(slot), struct.pack("<II", len(vals), 0) + b"".join(
                vals + [empty] * (GROUP_MAX - len(vals))))

    @staticmethod
    def _scan_key(m: MatchValue | None, w: int) -> tuple[int, int, int]:
        full = _full(w)
        if m is None:
            return 0, 0, 0
        if isinstance(m, ExactMatch | OptionalMatch):
            return m.value, m.value, full
        if isinstance(m, TernaryMatch):
            return m.value & m.mask, m.value & m.mask, m.mask
        if isinstance(m, LpmMatch):
            pm = _prefix_mask(m.prefix_len, w)
            return m.value & pm, m.value & pm, pm
        if isinstance(m, RangeMatch):
            return m.low, m.high, full
        raise TypeError(m)

    def _sync_table(self, cp: str) -> None:
        tl = self.layout.tables.get(cp)
        if tl is None:
            return  # a table the program never applies
        main, dflt, cnt = self._tmaps[cp]
        ts = self.tables[cp]
        d = ts.default_entry
        assert d.action is not None  # a default is an action (profiles are refused)
        dflt.update(_U32.pack(0), self._value(tl, d.action, d.params))
        # the kernel's direct counters are the truth; carry them into the Python entries
        # first so a rewritten value keeps them
        self._pull_direct_counters(cp)
        want = self._desired(cp, tl)
        if cp in self._dm:
            self._dm[cp].release_except({ident for ident, _ in want.values()})
        have = self._synced[cp]
        for k, (ident, v) in want.items():
            if have.get(k) != (ident, v) or tl.kind is TableKind.SCAN:
                main.update(k, v)
        if tl.kind is TableKind.SCAN:
            assert cnt is not None
            cnt.update(_U32.pack(0), _U32.pack(len(want)))
        else:
            for k in have.keys() - want.keys():
                main.delete(k)
        self._synced[cp] = want

    def _pull_direct_counters(self, cp: str) -> None:
        tl = self.layout.tables[cp]
        if not tl.direct_counter:
            return
        main = self._tmaps[cp][0]
        ts = self.tables[cp]
        for k, (ident, _) in self._synced[cp].items():
            es = ts.entries.get(ident)
            if es is None:
                continue
            raw = main.lookup(k)
            if raw is not None:
                es.packets, es.bytes = tl.unpack_counters(raw)

    def _sync_all(self) -> None:
        for cp in self.layout.tables:
            self._sync_table(cp)

    # -- PipelineAPI: writes go to Python first (validation, state), then to the maps ------
    def table_add(self, table: str, entry: TableEntry) -> None:
        super().table_add(table, entry)
        self._sync_table(self.resolve("table", table))

    def table_modify(self, table: str, entry: TableEntry) -> None:
        cp = self.resolve("table", table)
        self._pull_direct_counters_safe(cp)
        super().table_modify(table, entry)
        self._sync_table(cp)

    def table_delete(self, table: str, match: dict[str, MatchValue], priority: int = 0) -> None:
        super().table_delete(table, match, priority)
        self._sync_table(self.resolve("table", table))

    def table_clear(self, table: str) -> None:
        super().table_clear(table)
        self._sync_table(self.resolve("table", table))

    def table_set_default(self, table: str, action: str, params: dict[str, int]) -> None:
        super().table_set_default(table, action, params)
        self._sync_table(self.resolve("table", table))

    def table_batch(self) -> Any:
        batch = super().table_batch()
        commit = batch.commit

        def commit_and_sync() -> None:
            for cp in self.layout.tables:
                self._pull_direct_counters_safe(cp)
            commit()
            self._sync_all()

        # the batch's own commit, then the maps: wrapped on this one batch object
        batch.commit = commit_and_sync  # type: ignore[method-assign]
        return batch

    def _pull_direct_counters_safe(self, cp: str) -> None:
        if cp in self.layout.tables:
            self._pull_direct_counters(cp)

    def table_entries(self, table: str) -> list[TableEntry]:
        self._pull_direct_counters_safe(self.resolve("table", table))
        return super().table_entries(table)

    def table_get(self, table: str, match: dict[str, MatchValue],
                  priority: int = 0) -> TableEntry | None:
        self._pull_direct_counters_safe(self.resolve("table", table))
        return super().table_get(table, match, priority)

    def direct_counter_write(self, table: str, match: dict[str, MatchValue], priority: int,
                             packets: int, bytes_: int) -> None:
        super().direct_counter_write(table, match, priority, packets, bytes_)
        cp = self.resolve("table", table)
        tl = self.layout.tables.get(cp)
        if tl is None:
            return
        main = self._tmaps[cp][0]
        ident = self.tables[cp].canonical(match, priority)
        for k, (i, v) in self._synced[cp].items():
            if i == ident:
                value = v[:8] + struct.pack("<QQ", packets, bytes_) + v[24:]
                main.update(k, value)
                self._synced[cp][k] = (i, value)

    # counters and registers live in the kernel ------------------------------------------
    def counter_read(self, counter: str, index: int) -> tuple[int, int]:
        super().counter_read(counter, index)  # validates name and index
        cp = self.resolve("counter", counter)
        m = self._cmaps.get(cp)
        if m is None:
            return (0, 0)  # never counted by the program
        pk = by = 0
        for v in m.percpu_values(_U32.pack(index)):
            a, b = struct.unpack("<QQ", v)
            pk += a
            by += b
        return pk, by

    def counter_write(self, counter: str, index: int, packets: int, bytes_: int) -> None:
        super().counter_write(counter, index, packets, bytes_)
        m = self._cmaps.get(self.resolve("counter", counter))
        if m is not None:
            m.percpu_update(_U32.pack(index), struct.pack("<QQ", packets, bytes_))

    # action profiles: members and groups are written into the entries that use them ----
    def _sync_profile(self, profile: str) -> None:
        cp = self.resolve("action_profile", profile)
        for tcp, tl in self.layout.tables.items():
            if tl.profile == cp:
                self._sync_table(tcp)

    def _check_group_fits(self, profile: str, group: ActionProfileGroup) -> None:
        """This target's limit: a group holds GROUP_MAX member values (weights included);
        checked before the write, so a refused group leaves the state unchanged."""
        if sum(max(w, 1) for _, w in group.members) > GROUP_MAX:
            raise StateError(StateCode.RESOURCE_EXHAUSTED,
                             f"the eBPF target holds at most {GROUP_MAX} members (weights "
                             f"included) in a group")
        del profile

    def act_prof_add_member(self, profile: str, member: ActionProfileMember) -> None:
        super().act_prof_add_member(profile, member)
        self._sync_profile(profile)

    def act_prof_modify_member(self, profile: str, member: ActionProfileMember) -> None:
        super().act_prof_modify_member(profile, member)
        self._sync_profile(profile)

    def act_prof_delete_member(self, profile: str, member_id: int) -> None:
        super().act_prof_delete_member(profile, member_id)
        self._sync_profile(profile)

    def act_prof_add_group(self, profile: str, group: ActionProfileGroup) -> None:
        self._check_group_fits(profile, group)
        super().act_prof_add_group(profile, group)
        self._sync_profile(profile)

    def act_prof_modify_group(self, profile: str, group: ActionProfileGroup) -> None:
        self._check_group_fits(profile, group)
        super().act_prof_modify_group(profile, group)
        self._sync_profile(profile)

    def act_prof_delete_group(self, profile: str, group_id: int) -> None:
        super().act_prof_delete_group(profile, group_id)
        self._sync_profile(profile)

    def meter_set(self, meter: str, index: int, config: MeterConfig | None) -> None:
        super().meter_set(meter, index, config)  # validates; the buckets start full again
        cp = self.resolve("meter", meter)
        self._write_meter(cp, index, self.meters[cp].meters[index].config)

    def _write_meter(self, cp: str, index: int, config: MeterConfig | None) -> None:
        m = self._mmaps.get(cp)
        if m is not None:
            m.update(_U32.pack(index), _meter_value(config))

    def register_read(self, register: str, index: int) -> int:
        super().register_read(register, index)
        m = self._rmaps.get(self.resolve("register", register))
        if m is None:
            return super().register_read(register, index)
        raw = m.lookup(_U32.pack(index))
        return struct.unpack_from("<Q", raw, 8)[0] if raw else 0

    def register_write(self, register: str, index: int, value: int) -> None:
        super().register_write(register, index, value)
        m = self._rmaps.get(self.resolve("register", register))
        if m is not None:
            m.update(_U32.pack(index), struct.pack("<IIQ", 0, 0, value))

    # -- packet replication ----------------------------------------------------------------
    @staticmethod
    def _check_fits(replicas: list[Replica]) -> None:
        if len(replicas) > REPL_MAX:
            raise StateError(StateCode.RESOURCE_EXHAUSTED,
                             f"{len(replicas)} replicas: the eBPF target holds {REPL_MAX}")

    def mcast_group_set(self, group_id: int, replicas: list[Replica]) -> None:
        self._check_fits(replicas)
        super().mcast_group_set(group_id, replicas)
        if self._mcast_map is not None:
            self._mcast_map.update(_U32.pack(group_id), pack_replicas(
                [(r.egress_port, r.instance) for r in self.mcast[group_id]]))

    def mcast_group_delete(self, group_id: int) -> None:
        super().mcast_group_delete(group_id)
        if self._mcast_map is not None:
            self._mcast_map.delete(_U32.pack(group_id))

    def clone_session_set(self, session_id: int, replicas: list[Replica],
                          truncate_bytes: int = 0) -> None:
        self._check_fits(replicas)
        if truncate_bytes:
            raise StateError(StateCode.UNIMPLEMENTED,
                             "clone session truncation is not supported by the eBPF target")
        super().clone_session_set(session_id, replicas, truncate_bytes)
        if self._clone_map is not None:
            self._clone_map.update(_U32.pack(session_id), pack_replicas(
                [(r.egress_port, r.instance) for r in self.clone_sess[session_id][0]]))

    def clone_session_delete(self, session_id: int) -> None:
        super().clone_session_delete(session_id)
        if self._clone_map is not None:
            self._clone_map.delete(_U32.pack(session_id))
