"""Where an experiment's runs happen: the emulated Mininet fabric or the virtual-time simulator.

A backend brings a fabric up once, switches schemes between runs, and runs one schedule at a
time, leaving per-rank metrics (traffic.metrics' rank<r>.json/CSV) in the run's directory and
returning what it sampled from the switches. The runner above it is the same for both, so an
experiment file only changes ``backend:``.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from model.spec import FabricSpec
from traffic.schedules import Schedule, dump
from traffic.transport import TransportConfig

from .config import ExperimentConfig, SchemeConfig, WorkloadConfig


@dataclass
class RunSamples:
    """What a backend measured on the switches during one run, with wall-clock (or virtual)
    sample times in column ``t``; empty frames where the backend cannot measure it."""

    links: pd.DataFrame = field(default_factory=pd.DataFrame)
    queues: pd.DataFrame = field(default_factory=pd.DataFrame)
    counters: pd.DataFrame = field(default_factory=pd.DataFrame)
    counters_before: pd.DataFrame = field(default_factory=pd.DataFrame)
    counters_after: pd.DataFrame = field(default_factory=pd.DataFrame)
    events: list[dict[str, Any]] = field(default_factory=list)
    failure_at: float | None = None
    restore_at: float | None = None
    errors: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class Backend(ABC):
    """Fabric life cycle + one run at a time. ``timings`` collects phase wall times (s)."""

    name = "?"
    rto_bounds = (0.02, 2.0)
    """RFC 6298's clamp of the RTO (s) when the experiment's transport block states none."""
    default_prop_delay_us = 0.0

    def __init__(self, cfg: ExperimentConfig, spec: FabricSpec) -> None:
        self.cfg = cfg
        self.spec = spec
        self.timings: dict[str, float] = {}

    # -- the transport block, in this backend's units (the config is already dilated) ------
    def _link_bps(self) -> float | None:
        bw = self.cfg.topology.bw_mbps
        return bw * 1e6 if bw else None

    @classmethod
    def prop_delay_s(cls, cfg: ExperimentConfig) -> float:
        """Per-link propagation delay of ``cfg`` in its own units: the fabric block's, else
        what this backend has without one (the simulator's 1 µs; Mininet adds none)."""
        return (cfg.fabric.prop_delay_us if cfg.fabric else cls.default_prop_delay_us) * 1e-6

    def _prop_s(self) -> float:
        return self.prop_delay_s(self.cfg)

    def _packet_bytes(self) -> int:
        return self.cfg.fabric.mtu if self.cfg.fabric else 1500

    def ecn_threshold(self, queue_depth: int) -> Any:
        """The switches' CE-marking threshold for the transport block's algorithm: packets,
        None, or a function of a port's rate (model.routing's ``ecn_threshold``)."""
        return self.cfg.transport.marking(self.spec, self._prop_s(), self._packet_bytes(),
                                          queue_depth)

    def transport_config(self, base: Any, w: WorkloadConfig) -> Any:
        """The hosts' traffic.transport.TransportConfig for workload ``w``."""
        from traffic.congestion import base_rtt, host_hops

        rtt = base_rtt(host_hops(self.spec), self._prop_s(), self._link_bps() or 1e12,
                       self._packet_bytes())
        return self.cfg.transport.transport_config(base, w, rtt, self.rto_bounds)

    @abstractmethod
    def up(self, scheme: SchemeConfig) -> None: ...

    @abstractmethod
    def set_scheme(self, scheme: SchemeConfig) -> None: ...

    @abstractmethod
    def run(self, schedule: Schedule, hosts: list[str], w: WorkloadConfig,
            out: Path) -> RunSamples: ...

    @abstractmethod
    def down(self) -> None: ...

    def seed_data_plane(self, seed: int) -> None:
        """Restart the switches' random() from ``seed`` before a run (the runner passes the
        repetition's seed, so repetition i draws the same choices in every invocation).
        Backends whose data plane has no seedable generator ignore it."""
        return None

    def versions(self) -> dict[str, Any]:
        return {}


# ---- Mininet --------------------------------------------------------------------------------
class Sampler(threading.Thread):
    """Reads the controller's link, queue (and, every ``counter_every``-th time, counter)
    tables every ``period`` seconds while a run is in flight, in its own thread so the reads
    land during the collective, not only after it. A failing read is recorded, not raised:
    losing one sample must not lose the run."""

    def __init__(self, ctl: Any, period: float, counter_every: int = 4) -> None:
        super().__init__(name="experiment-sampler", daemon=True)
        self.ctl = ctl
        self.period = period
        self.counter_every = counter_every
        self.links: list[pd.DataFrame] = []
        self.queues: list[pd.DataFrame] = []
        self.counters: list[pd.DataFrame] = []
        self.errors: list[str] = []
        self._halt = threading.Event()
        self._n = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sampler-queues")

    def sample(self, counters: bool = False) -> pd.DataFrame | None:
        """One sample: the counters (links are derived from them) and the queue registers,
        read at the same time; returns the counters read (None if the read failed), kept in
        the timeline only when ``counters``. On a loaded 2-core machine a busy software switch
        answers a Read in hundreds of ms; reading each switch once per table, concurrently,
        keeps the sample period near the one asked for (three sequential reads made it
        1-2.5 s)."""
        t = time.time()
        queues = self._pool.submit(lambda: self.ctl.read_queues(clear=True))
        c = None
        try:
            c = self.ctl.read_counters()
            # ``t`` is when the read was sent and ``read_s`` how long the switches took to
            # answer: the counters were taken somewhere inside [t, t + read_s]
            self.links.append(self.ctl.links_from_counters(c).assign(
                t=t, read_s=time.time() - t))
            if counters:
                self.counters.append(c.assign(t=t))
        except Exception as e:  # noqa: BLE001 - a sample lost is recorded, the run goes on
            self.errors.append(f"{t:.3f} read_counters: {e}")
        try:
            self.queues.append(queues.result().assign(t=t))
        except Exception as e:  # noqa: BLE001
            self.errors.append(f"{t:.3f} read_queues: {e}")
        return c

    def run(self) -> None:
        while not self._halt.wait(self.period):
            self._n += 1
            self.sample(counters=self._n % self.counter_every == 0)

    def finish(self) -> pd.DataFrame | None:
        """Stop sampling and take the last sample; its counters (None if the read failed)."""
        self._halt.set()
        self.join(timeout=30)
        last = self.sample()
        self._pool.shutdown(wait=False)
        return last

    def link_bytes_since_first(self) -> int:
        """Bytes all switch-switch links sent between the first and the latest sample."""
        links = list(self.links)
        if len(links) < 2:
            return 0
        return int(links[-1]["tx_bytes"].sum() - links[0]["tx_bytes"].sum())

    def tables(self) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
        def cat(frames: list[pd.DataFrame]) -> pd.DataFrame:
            frames = [f for f in frames if not f.empty]
            return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        return cat(self.links), cat(self.queues), cat(self.counters)


class MininetBackend(Backend):
    """topo.net.FabricNet + controller.FabricController, traffic agents on the Mininet hosts."""

    name = "mininet"

    def __init__(self, cfg: ExperimentConfig, spec: FabricSpec) -> None:
        super().__init__(cfg, spec)
        self.net: Any = None
        self.ctl: Any = None
        self.priority: dict[str, int] = {}
        """How the switch processes are scheduled: {what was applied: switches}."""
        self.prop_delay_us = 0.0
        """Each link's propagation delay as the switches emulate it (wall µs; 0: none)."""

    def up(self, scheme: SchemeConfig) -> None:
        from controller import FabricController
        from topo.net import FabricNet

        p = self.cfg.parameters
        t0 = time.perf_counter()
        f = self.cfg.fabric
        # p4switch emulates each link's propagation delay itself (no netem in this kernel);
        # the other targets cannot, and the report says so
        self.prop_delay_us = f.prop_delay_us if f and p.target == "p4switch" else 0.0
        self.net = FabricNet(self.spec, target=p.target, lock_timeout=p.lock_timeout_s,
                             queue_depth=f.queue_packets if f else None,
                             socket_buffer=p.socket_buffer, switch_priority=p.switch_priority,
                             prop_delay_us=self.prop_delay_us)
        self.net.start()
        self.priority = dict(self.net.priority)
        self.timings["fabric_up"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.ctl = FabricController(self.spec, target=p.target, control_period=p.control_period_s,
                                   connect_timeout=60.0,
                                   ecn_threshold=self.ecn_threshold(
                                       f.queue_packets if f else 64))
        self.ctl.start(scheme=scheme.build(), loops=p.loops)
        self.timings["install"] = time.perf_counter() - t0
        self.scheme = scheme
        t0 = time.perf_counter()
        self.start_agents()
        self.timings["agents_up"] = time.perf_counter() - t0

    def start_agents(self) -> None:
        """Every workload host's traffic agent (topo.agents: one server per host, kept for the
        fabric's life) started now, in parallel, so that no run's start margin is spent on
        interpreter start-up; a host whose agent fails is retried (and reported) by the run."""
        hosts = sorted({h for w in self.cfg.workloads for h in self.cfg.hosts_of(w, self.spec)})
        self.net.agents.ensure(hosts)

    def retune(self, cfg: ExperimentConfig) -> None:
        """Run the same fabric at ``cfg``'s link rates and periods from now on (calibration's
        ramp: a new TDF without a new fabric). The control loops' period stays the one the
        controller started with."""
        new = cfg.spec()
        for old_lk, lk in zip(self.spec.links, new.links, strict=True):
            if lk.bw_mbps and lk.bw_mbps != old_lk.bw_mbps:
                self.net.set_link_rate(lk.a, lk.b, lk.bw_mbps)
        if self.prop_delay_us and cfg.fabric and cfg.fabric.prop_delay_us != self.prop_delay_us:
            self.net.set_prop_delay(cfg.fabric.prop_delay_us)
            self.prop_delay_us = cfg.fabric.prop_delay_us
        self.cfg, self.spec = cfg, new

    def adopt(self, cfg: ExperimentConfig, scheme: SchemeConfig) -> None:
        """Run the fabric that is up as ``cfg`` from now on (an experiment after its
        calibration's ramp on the same fabric, which saves a second fabric start): its link
        rates, and a controller restarted with its loops, period and ECN threshold that
        keeps the switches' pipelines and writes only the entries that differ."""
        from controller import FabricController

        self.retune(cfg)
        t0 = time.perf_counter()
        self.ctl.stop()
        p, f = cfg.parameters, cfg.fabric
        self.ctl = FabricController(self.spec, target=p.target, control_period=p.control_period_s,
                                   connect_timeout=60.0,
                                   ecn_threshold=self.ecn_threshold(
                                       f.queue_packets if f else 64))
        self.ctl.start(scheme=scheme.build(), loops=p.loops, reuse_pipeline=True)
        self.scheme = scheme
        self.timings["install"] = self.timings.get("install", 0.0) + time.perf_counter() - t0

    def set_scheme(self, scheme: SchemeConfig) -> None:
        t0 = time.perf_counter()
        self.ctl.set_scheme(scheme.build())
        self.scheme = scheme
        time.sleep(self.cfg.parameters.settle_s)
        self.timings["set_scheme"] = self.timings.get("set_scheme", 0.0) + (
            time.perf_counter() - t0)

    def run(self, schedule: Schedule, hosts: list[str], w: WorkloadConfig,
            out: Path) -> RunSamples:
        from topo.collective import run_collective

        out.mkdir(parents=True, exist_ok=True)
        # rank i runs on hosts[i]: run_collective places ranks in the order of its host list
        schedule.placement = None
        sched_file = out / "schedule.json"
        dump(schedule, sched_file)
        res = RunSamples()
        from .probes import FabricProbe, measures
        t_probe = time.perf_counter()
        probe = FabricProbe(self.net, list(hosts))
        probe_before = probe.snapshot()
        host_before = self.host_counters(hosts)
        n_events = len(self.ctl.events)
        sampler = Sampler(self.ctl, self.cfg.parameters.sample_period_s)
        # the sampler's first sample is the run's "before" counters (a second Read of every
        # switch, back to back with it, cost ~0.35 s per run on the demo's 20 switches)
        first = sampler.sample()
        res.counters_before = first if first is not None else self.ctl.read_counters()
        self._add_time("run: probes and counters", t_probe)
        sampler.start()
        from .metrics import inter_edge_wire_bytes
        fail = _FailureTimer(self, w, res, sampler,
                             inter_edge_wire_bytes(self.spec, schedule, hosts, w.mss) // 10) \
            if w.failure else None
        try:
            if fail:
                fail.start()
            kw: dict[str, Any] = {"transport": w.transport, "qps": w.qps, "mss": w.mss,
                                  "window": w.window, "rto_ms": w.rto_ms,
                                  "linger_rtos": w.linger_rtos}
            if w.transport == "udp":
                kw.update(transport_args(self.transport_config(TransportConfig(), w)))
                credit = self.cfg.transport.pace_credit_us   # the agent's pacer (dilated)
                if credit is not None:
                    kw["pace_credit_ms"] = credit * 1e-3
            if w.rate:
                kw["rate"] = w.rate
            kw.update(self.scheme.traffic_args(self.cfg.topology))  # the hosts' path policy
            t_coll = time.perf_counter()
            result = run_collective(self.net, schedule=str(sched_file), hosts=list(hosts),
                                    timeout=w.timeout_s, out_dir=out / "traffic",
                                    start_margin=self.cfg.parameters.start_margin_s, **kw)
            self._add_time("run: collective", t_coll)
            t_probe = time.perf_counter()
            probe_after = probe.snapshot()
            self._add_time("run: probes and counters", t_probe)
            res.extra["measures"] = measures(probe_before, probe_after)
            res.errors += probe_before.errors + probe_after.errors
            res.errors += list(getattr(result, "errors", []))   # e.g. an agent that crashed
            res.extra["collective_ok"] = bool(getattr(result, "ok", False))
            res.extra["cct_s"] = getattr(result, "cct_s", None)
        finally:
            if fail:
                fail.finish()
            t_after = time.perf_counter()
            last = sampler.finish()             # its last sample: the "after" counters
            res.links, res.queues, res.counters = sampler.tables()
            res.errors += sampler.errors
            try:
                res.counters_after = last if last is not None else self.ctl.read_counters()
                after = self.host_counters(hosts)
                res.extra["host_tx_bytes"] = sum(after[h]["tx_bytes"] - host_before[h]["tx_bytes"]
                                                 for h in hosts)
                res.extra["host_tx_packets"] = sum(
                    after[h]["tx_packets"] - host_before[h]["tx_packets"] for h in hosts)
            except Exception as e:  # noqa: BLE001
                res.errors.append(f"counters after the run: {e}")
            res.events = [_event(e) for e in self.ctl.events[n_events:]]
            self._add_time("run: probes and counters", t_after)
        return res

    def seed_data_plane(self, seed: int) -> None:
        """Each p4switch's random() from ``seed`` and its device id, over its control socket
        (other targets keep their own; a switch that does not answer is left as it was)."""
        from p4switch.control import ControlClient, ControlError

        for sw in self.net.switches:
            sock = getattr(sw, "control_socket", None)
            if sock is None or type(sw).__name__ != "P4Switch":
                continue
            try:
                with ControlClient(str(sock)) as c:
                    c.seed_random(seed * 1000 + sw.spec.device_id)
            except (ControlError, OSError):
                pass

    def _add_time(self, phase: str, since: float) -> None:
        self.timings[phase] = self.timings.get(phase, 0.0) + time.perf_counter() - since

    def host_counters(self, hosts: list[str]) -> dict[str, dict[str, int]]:
        """The kernel's byte/packet counters of each host's interface: everything the host put
        on its link (data, ACKs, barrier beacons), to check the switch counters against."""
        out = {}
        for h in hosts:
            node = self.net.get(h)
            d = f"/sys/class/net/{node.defaultIntf().name}/statistics"
            vals = node.cmd(f"cat {d}/tx_bytes {d}/tx_packets").split()
            out[h] = {"tx_bytes": int(vals[0]), "tx_packets": int(vals[1])}
        return out

    def down(self) -> None:
        t0 = time.perf_counter()
        try:
            if self.ctl is not None:
                self.ctl.stop()
        finally:
            if self.net is not None:
                self.net.stop()
        self.timings["teardown"] = time.perf_counter() - t0


def _event(e: Any) -> dict[str, Any]:
    if isinstance(e, dict):
        return e
    return {k: getattr(e, k, None) for k in ("time", "loop", "switch", "what")}


class _FailureTimer(threading.Thread):
    """Takes the workload's link down ``at_s`` after the collective started (physically, both
    interfaces; with ``notify`` also administratively at the controller) and brings it back at
    ``restore_s`` or when the run ends, so the next run starts on the intact fabric."""

    def __init__(self, backend: MininetBackend, w: WorkloadConfig, res: RunSamples,
                 sampler: Sampler, started_bytes: int) -> None:
        super().__init__(name="experiment-failure", daemon=True)
        self.b, self.f, self.res = backend, w.failure, res
        self.sampler, self.started_bytes = sampler, started_bytes
        self._end = threading.Event()
        self._down = False

    def _act(self, what: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - recorded; the run and teardown go on
            self.res.errors.append(f"{what}: {e}")

    def run(self) -> None:
        assert self.f is not None
        a, b = self.f.link
        # at_s counts from the collective's start, seen as the fabric carrying a tenth of the
        # run's inter-edge data: agents on a loaded machine start seconds after the launch
        # (and after run_collective's --start-at), and the failure must land mid-collective
        while self.sampler.link_bytes_since_first() < self.started_bytes:
            if self._end.wait(0.05):
                return
        self.res.extra["failure_armed_at"] = time.time()
        if self._end.wait(self.f.at_s):
            return
        self.res.failure_at = time.time()
        self._act("link_down", lambda: self.b.net.link_down(a, b))
        self._down = True
        if self.f.notify:
            self._act("fail_link", lambda: self.b.ctl.fail_link(a, b))
        if self.f.restore_s is not None and not self._end.wait(self.f.restore_s - self.f.at_s):
            self._restore()

    def _restore(self) -> None:
        assert self.f is not None
        if not self._down:
            return
        a, b = self.f.link
        self.res.restore_at = time.time()
        self._act("link_up", lambda: self.b.net.link_up(a, b))
        if self.f.notify:
            self._act("restore_link", lambda: self.b.ctl.restore_link(a, b))
        self._down = False

    def finish(self) -> None:
        self._end.set()
        self.join(timeout=30)
        self._restore()


# ---- simulator ------------------------------------------------------------------------------
class SimBackend(Backend):
    """sim.network.SimNetwork: the same fabric.p4 pipelines and entries in virtual time. Each
    run builds a fresh network (the scheme is installed at construction); it samples nothing
    over time, so only host-side metrics and CCTs reach the report."""

    name = "sim"
    rto_bounds = (200e-6, 0.5)
    default_prop_delay_us = 1.0

    def __init__(self, cfg: ExperimentConfig, spec: FabricSpec) -> None:
        super().__init__(cfg, spec)
        self.scheme: SchemeConfig | None = None
        self.run_seed: int | None = None

    def up(self, scheme: SchemeConfig) -> None:
        from sim.network import fabric_program

        t0 = time.perf_counter()
        fabric_program()
        self.timings["fabric_up"] = time.perf_counter() - t0
        self.scheme = scheme

    def set_scheme(self, scheme: SchemeConfig) -> None:
        self.scheme = scheme

    def seed_data_plane(self, seed: int) -> None:
        self.run_seed = seed   # the simulator's one generator (random spraying, placement ties)

    def run(self, schedule: Schedule, hosts: list[str], w: WorkloadConfig,
            out: Path) -> RunSamples:
        from sim.host import SIM_TRANSPORT, HostConfig
        from sim.network import LinkFailure, SimConfig, SimNetwork

        assert self.scheme is not None
        schedule.placement = list(hosts)
        # The simulator keeps its data-centre timers (ACK every 2 packets, 1 ms initial RTO):
        # the workload's rto_ms (200 ms by default) is sized for the CPU-bound emulation.
        base = SIM_TRANSPORT
        fabric: dict[str, Any] = {}
        if self.cfg.fabric is not None:   # a file in fabric units: its timers, delay, queues
            base = dataclasses.replace(base, rto=w.rto_ms / 1e3)
            fabric = {"prop_delay_us": self.cfg.fabric.prop_delay_us,
                      "queue_depth": self.cfg.fabric.queue_packets}
        transport = self.transport_config(base, w)
        cfg = SimConfig(host=HostConfig(transport=transport,
                                        qps=w.qps, path_policy=self.scheme.policy_spec()),
                        seed=self.cfg.parameters.seed if self.run_seed is None else self.run_seed,
                        workers=self.cfg.parameters.sim_workers,
                        ecn_threshold=self.ecn_threshold(
                            fabric.get("queue_depth", SimConfig.queue_depth)),
                        **fabric)
        net = SimNetwork(self.spec, self.scheme.build(), cfg)
        failures = []
        if w.failure:
            no_reroute: dict[str, Any] = {} if w.failure.reroute else {"reroute_after_us": None}
            failures.append(LinkFailure(*w.failure.link, at_us=w.failure.at_s * 1e6,
                                        **no_reroute))
        if schedule.meta.get("cm_failures"):   # htsim's fabric lacks them: down from the start
            from traffic.schedules.cm import failed_links
            failures += [LinkFailure(a, b, 0.0, 0.0) for a, b in
                         failed_links(schedule.meta["cm_failures"], self.cfg.topology.k)]
        res = net.run(schedule, until_us=w.timeout_s * 1e6, failures=failures)
        for m in res.ranks:
            m.write(out / "traffic")
        s = RunSamples(extra={"collective_ok": res.ok, "cct_s": res.cct_s,
                              "sim": res.summary()})
        s.events = [{"time": t / 1e6, "loop": "sim", "switch": None, "what": what}
                    for t, what in net.events]
        if w.failure:
            s.failure_at = w.failure.at_s
        return s

    def down(self) -> None:
        pass


def transport_args(t: Any) -> dict[str, Any]:
    """A TransportConfig's congestion control and timers as traffic.run flags."""
    return {"cc": t.cc, "cc_params": ",".join(f"{k}={v!r}" for k, v in t.cc_params) or None,
            "min_rto_ms": t.min_rto * 1e3, "max_rto_ms": t.max_rto * 1e3,
            "base_rtt_us": t.base_rtt * 1e6 or None, "ack_delay_ms": t.ack_delay * 1e3,
            "tick_ms": t.tick * 1e3}


BACKENDS: dict[str, type[Backend]] = {"mininet": MininetBackend, "sim": SimBackend}
