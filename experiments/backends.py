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
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from controller.fabric import ControlEvent
from controller.loops import ControlLoop
from model.spec import FabricSpec
from topo.session import (
    RTO_BOUNDS,
    FabricSession,
    RunSamples,
    Sampler,
    SessionConfig,
)
from traffic.schedules import Schedule

from .config import ExperimentConfig, SchemeConfig, WorkloadConfig


class Backend(ABC):
    """Fabric life cycle + one run at a time. ``timings`` collects phase wall times (s)."""

    name = "?"
    rto_bounds = (0.02, 2.0)
    """RFC 6298's clamp of the RTO (s) when the experiment's transport block states none."""
    default_prop_delay_us = 0.0
    tdf = 1.0
    """The time-dilation factor ``cfg`` is dilated by (the runner sets it)."""
    retunable = False
    """Its fabric can change rate between runs (:meth:`adopt`): the runner may then step an
    experiment's TDF back when its runs turn invalid (experiments/stepback.py)."""

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

    def adopt(self, cfg: ExperimentConfig, scheme: SchemeConfig, tdf: float | None = None) -> None:
        """Run as ``cfg`` (dilated by ``tdf``) from now on, under ``scheme``, without a new
        fabric (only backends that are ``retunable``)."""
        raise NotImplementedError(f"the {self.name} backend cannot change its rates")

    def seed_data_plane(self, seed: int) -> None:
        """Restart the switches' random() from ``seed`` before a run (the runner passes the
        repetition's seed, so repetition i draws the same choices in every invocation).
        Backends whose data plane has no seedable generator ignore it."""
        return None

    def versions(self) -> dict[str, Any]:
        return {}


# ---- Mininet --------------------------------------------------------------------------------
class MininetBackend(Backend):
    """The emulated fabric through topo.session.FabricSession (the one code path of ``make
    topo``, scripts and experiments: fabric, controller, loops, switch priority, probes and
    sampler), traffic agents on the Mininet hosts. ``cfg`` is already dilated by ``tdf``."""

    name = "mininet"
    rto_bounds = RTO_BOUNDS
    retunable = True

    def __init__(self, cfg: ExperimentConfig, spec: FabricSpec, tdf: float = 1.0) -> None:
        super().__init__(cfg, spec)
        self.session = self._session(cfg, spec, tdf)

    def _session(self, cfg: ExperimentConfig, spec: FabricSpec, tdf: float) -> FabricSession:
        p = cfg.parameters
        s = FabricSession.emulating(spec, session_config(cfg), tdf, loops=p.loops,
                                    target=p.target, switch_priority=p.switch_priority,
                                    socket_buffer=p.socket_buffer,
                                    lock_timeout_s=p.lock_timeout_s)
        s.timings = self.timings
        return s

    @property
    def tdf(self) -> float:
        return self.session.tdf

    @tdf.setter
    def tdf(self, tdf: float) -> None:
        self.session.tdf = tdf

    @property
    def net(self) -> Any:
        return self.session.net

    @property
    def ctl(self) -> Any:
        return self.session.ctl

    @property
    def priority(self) -> dict[str, int]:
        """How the switch processes are scheduled: {what was applied: switches}."""
        return self.session.priority

    @property
    def prop_delay_us(self) -> float:
        """Each link's propagation delay as the emulation adds it (wall µs; 0: none), by the
        switches or at the hosts (:attr:`prop_placement`)."""
        return self.session.prop_delay_us or self.session.host_prop_delay_us

    @property
    def prop_placement(self) -> str | None:
        """Where the emulation adds the propagation delay: ``links`` (p4switch's ports),
        ``hosts`` (the receiving agents, path links × delay: the eBPF target), None."""
        if self.session.prop_delay_us:
            return "links"
        return "hosts" if self.session.host_prop_delay_us else None

    def ecn_threshold(self, queue_depth: int) -> Any:
        return self.session.ecn_threshold()

    def transport_config(self, base: Any, w: WorkloadConfig) -> Any:
        return self.session.transport_config(base, w)

    def up(self, scheme: SchemeConfig) -> None:
        self.session.start(scheme.build(), agents=self.workload_hosts())
        self.scheme = scheme

    def workload_hosts(self) -> list[str]:
        """Every workload host, whose traffic agent (topo.agents: one server per host, kept for
        the fabric's life) starts with the fabric, so that no run's start margin is spent on
        interpreter start-up; a host whose agent fails is retried (and reported) by the run."""
        return sorted({h for w in self.cfg.workloads for h in self.cfg.hosts_of(w, self.spec)})

    def retune(self, cfg: ExperimentConfig, tdf: float | None = None) -> None:
        """Run the same fabric at ``cfg``'s link rates and periods from now on (calibration's
        ramp: a new TDF without a new fabric). The control loops' period stays the one the
        controller started with."""
        new = cfg.spec()
        self.session.retune(new, session_config(cfg), tdf or self.session.tdf)
        self.cfg, self.spec = cfg, new

    def adopt(self, cfg: ExperimentConfig, scheme: SchemeConfig, tdf: float | None = None) -> None:
        """Run the fabric that is up as ``cfg`` from now on (an experiment after its
        calibration's ramp on the same fabric, which saves a second fabric start): its link
        rates, and a controller restarted with its loops, period and ECN threshold that
        keeps the switches' pipelines and writes only the entries that differ."""
        self.retune(cfg, tdf)
        self.session.restart_controller(scheme.build(), cfg.parameters.loops)
        self.scheme = scheme

    def set_scheme(self, scheme: SchemeConfig) -> None:
        self.session.set_scheme(scheme.build())
        self.scheme = scheme

    def run(self, schedule: Schedule, hosts: list[str], w: WorkloadConfig,
            out: Path) -> RunSamples:
        from .metrics import inter_edge_wire_bytes

        def failure(sampler: Sampler, res: RunSamples) -> AbstractContextManager[Any]:
            if not w.failure:
                return nullcontext()
            return _FailureTimer(self, w, res, sampler,
                                 inter_edge_wire_bytes(self.spec, schedule, hosts, w.mss) // 10)

        res = self.session.run_schedule(schedule, hosts, w, out,
                                        policy_args=self.scheme.traffic_args(self.cfg.topology),
                                        during=failure)
        res.trim = bool(self.cfg.fabric and self.cfg.fabric.trim)
        res.trims = res.measures.trims if res.measures is not None else None
        return res

    def seed_data_plane(self, seed: int) -> None:
        self.session.seed_data_plane(seed)

    def host_counters(self, hosts: list[str]) -> dict[str, dict[str, int]]:
        return self.session.host_counters(hosts)

    def down(self) -> None:
        self.session.stop()


def session_config(cfg: ExperimentConfig) -> SessionConfig:
    """An experiment's fabric, transport and periods as the session's knobs (as dilated as
    ``cfg`` is)."""
    p = cfg.parameters
    return SessionConfig(fabric=cfg.fabric, transport=cfg.transport,
                         control_period_s=p.control_period_s, sample_period_s=p.sample_period_s,
                         settle_s=p.settle_s, start_margin_s=p.start_margin_s)


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
        self.res.failure_armed_at = time.time()
        if self._end.wait(self.f.at_s):
            return
        self.res.failure_at = time.time()
        self._act("link_down", lambda: self.b.session.cut(a, b))
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
        self._act("link_up", lambda: self.b.session.restore(a, b))
        if self.f.notify:
            self._act("restore_link", lambda: self.b.ctl.restore_link(a, b))
        self._down = False

    def finish(self) -> None:
        self._end.set()
        self.join(timeout=30)
        self._restore()

    def __enter__(self) -> _FailureTimer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()


# ---- simulator ------------------------------------------------------------------------------
class SimBackend(Backend):
    """sim.network.SimNetwork: the same fabric.p4 pipelines and entries in virtual time. Each
    run builds a fresh network (the scheme is installed at construction); it samples nothing
    over time, so only host-side metrics and CCTs reach the report.

    The controller's periodic loops of ``parameters.loops`` run on it in virtual time, every
    ``control_period_s`` (sim.control): Whack-a-Mole re-weights, the failure loop finds a cut
    link by its missing probes and reroutes. Reconcile has nothing to do here (no switch
    reconnects). Without the failure loop a cut link is routed around only when the workload
    ``notify``-s the controller (at once), as on the emulated fabric; ``reroute: false``
    keeps the failure loop off for that workload."""

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
                      "prop_at_hosts": self.cfg.parameters.sim_prop_at_hosts,
                      "queue_depth": self.cfg.fabric.queue_packets,
                      "trim": self.cfg.fabric.trim}
        transport = self.transport_config(base, w)
        cfg = SimConfig(host=HostConfig(transport=transport,
                                        qps=w.qps, path_policy=self.scheme.policy_spec()),
                        seed=self.cfg.parameters.seed if self.run_seed is None else self.run_seed,
                        workers=self.cfg.parameters.sim_workers,
                        start_skew_us=self.cfg.parameters.sim_start_skew_s * 1e6,
                        ray_address=self.cfg.parameters.sim_ray,
                        ecn_threshold=self.ecn_threshold(
                            fabric.get("queue_depth", SimConfig.queue_depth)),
                        **fabric)
        loops = self.loops_for(w)
        if (loops or cfg.prop_at_hosts) and cfg.workers > 1:
            cfg.workers = 1   # the loops touch every switch each period: one process
        net = SimNetwork(self.spec, self.scheme.build(), cfg)
        net.start_loops(loops, self.cfg.parameters.control_period_s * 1e6)
        failures = []
        if w.failure:
            if ControlLoop.FAILURE in loops:
                after: float | None = None   # the failure loop finds it
            else:
                after = 0.0 if w.failure.notify else None
            failures.append(LinkFailure(*w.failure.link, at_us=w.failure.at_s * 1e6,
                                        reroute_after_us=after))
        if schedule.meta.get("cm_failures"):   # htsim's fabric lacks them: down from the start
            from traffic.schedules.cm import failed_links
            failures += [LinkFailure(a, b, 0.0, 0.0) for a, b in
                         failed_links(schedule.meta["cm_failures"], self.cfg.topology.k)]
        res = net.run(schedule, until_us=w.timeout_s * 1e6, failures=failures)
        for m in res.ranks:
            m.write(out / "traffic")
        s = RunSamples(collective_ok=res.ok, cct_s=res.cct_s, tail_drops=res.tail_drops,
                       trims=res.trims, trim=cfg.trim)
        # a cut is the link's doing ("link"), a reroute the controller's: the runner times
        # the reroute from the first controller event naming the link after the cut
        s.events = [ControlEvent(t / 1e6, "link" if what.startswith("link ") else "sim", None,
                                 what) for t, what in net.events]
        s.events += [ControlEvent(t / 1e6, loop, sw, what)
                     for t, loop, sw, what in net.control_events]
        s.events.sort(key=lambda e: e.time)
        if w.failure:
            s.failure_at = w.failure.at_s
        return s

    def loops_for(self, w: WorkloadConfig) -> list[str]:
        """The periodic loops the simulator runs for workload ``w``."""
        names = [n for n in self.cfg.parameters.loops if n != ControlLoop.RECONCILE]
        if w.failure and not w.failure.reroute:
            names = [n for n in names if n != ControlLoop.FAILURE]
        return names

    def down(self) -> None:
        pass


BACKENDS: dict[str, type[Backend]] = {"mininet": MininetBackend, "sim": SimBackend}
