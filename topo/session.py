"""FabricSession: one emulated fabric, described and measured in the units of the fabric it models.

A 100 Gb/s fabric does not fit in two cores; the same fabric run TDF times slower does
(model/dilation.py). A session takes the fabric in its own units — link rate, propagation delay,
MTU, queue depth, scheme parameters, host transport and timers — and a TDF (``"auto"``: the one
``make calibrate`` cached for this machine), brings the Mininet fabric and the controller up
dilated (rates ÷ TDF, timers × TDF), with the switches at real-time priority and the control
loops the schemes need, and hands back every time and rate in fabric units with the fidelity
guard's verdict (topo/guard.py) on each collective. ``make topo``'s CLI, a user's script and the
experiment runner's Mininet backend all run through it::

    from topo.session import FabricSession

    with FabricSession(k=4, link_rate="100G", tdf=100_000, scheme="flowlet") as s:
        r = s.collective("ring_allreduce", "64KB", hosts=["h1", "h3", "h5", "h7"])
        print(r.summary())            # CCT in fabric µs, valid or why not
        s.set_scheme("flowlet", timeout_us=50)   # fabric µs, written dilated
        s.cut("agg1", "core1")        # a physical failure; the failure loop reroutes
        print(s.queues(), s.links())

docs/fabric.md is the user's page.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from controller.fabric import DEFAULT_LOOPS
from model.dilation import Dim, dilate, dim, format_rate, parse_rate
from model.schemes import DEFAULT_SCHEME
from model.spec import FabricSpec, fat_tree, leaf_spine
from model.targets import Target
from traffic.wire import HDR, TRIM_BYTES

from .owner import give_back
from .priority import SwitchPriority
from .units import TDF_AUTO, FabricConfig, TransportSettings, fabric_transport, with_flowlet_gap

if TYPE_CHECKING:
    from controller.fabric import ControlEvent
    from traffic.metrics import RankMetrics

    from .guard import GuardRow, Measures

DEFAULT_TDF = 100_000.0
"""The TDF of a session asked for ``auto`` on a machine with nothing calibrated: a 100 Gb/s
fabric at 1 Mb/s, the slowest rate calibration settles on on a 2-core machine."""
MIN_EMULATED_BPS = 10e3
"""The slowest emulated link (b/s of wall time) a session builds: a 1500-byte frame takes
1.2 s on it; below, the kernel's shaping and the agents' timers break down."""
RTO_BOUNDS = (0.02, 2.0)
"""RFC 6298's clamp of the RTO (s) on the emulation when the transport states none (a file in
the emulation's own units)."""

LOOPS_AUTO = None
"""``loops=None``: the failure and reconcile loops, and Whack-a-Mole's whenever a group uses
it (added when a scheme change brings it in)."""
LOOP_EVENTS = frozenset({"failure", "wam", "loops"})
"""Controller events that are the control loops' doing (not the API's own writes)."""
IP_HEADERS = 20 + 8 + HDR.size
"""IPv4 + UDP + the collective header in front of a segment (a data frame's IP length is
the segment + this)."""


# ---- what one run measured (the runner's tables are built from it) --------------------------------
@dataclass
class RunSamples:
    """What the fabric measured on the switches during one run, with wall-clock (or virtual)
    sample times in column ``t``; empty frames where a backend cannot measure it."""

    links: pd.DataFrame = field(default_factory=pd.DataFrame)
    queues: pd.DataFrame = field(default_factory=pd.DataFrame)
    counters: pd.DataFrame = field(default_factory=pd.DataFrame)
    counters_before: pd.DataFrame = field(default_factory=pd.DataFrame)
    counters_after: pd.DataFrame = field(default_factory=pd.DataFrame)
    events: list[ControlEvent] = field(default_factory=list)
    """What the controller and its loops did during the run (events.csv)."""
    failure_at: float | None = None
    restore_at: float | None = None
    errors: list[str] = field(default_factory=list)
    measures: Measures | None = None
    """The guard's probes of the fabric around the run (None: a backend with nothing hidden
    to measure, the simulator)."""
    collective_ok: bool = False
    cct_s: float | None = None
    """The job's CCT in the backend's seconds (wall on Mininet: the caller converts)."""
    ranks: list[RankMetrics] = field(default_factory=list)
    """The ranks' records as their agents reported them."""
    host_tx_bytes: int | None = None
    """What the hosts' interfaces sent (kernel counters), to check the switches' against."""
    host_tx_packets: int | None = None
    failure_armed_at: float | None = None
    """When the runner's link failure started counting its ``at_s`` (time.time())."""
    tail_drops: int | None = None
    """The egress queues' tail drops as the backend counted them itself (the simulator)."""
    trims: int | None = None
    """Packets the queues trimmed to their headers (the simulator's, or the p4switch queues'
    as the guard's probes read them)."""
    trim: bool = False
    """The queues trim instead of dropping (``fabric.trim``)."""


class Sampler(threading.Thread):
    """Reads the controller's link, queue (and, every ``counter_every``-th time, counter)
    tables every ``period`` seconds while a run is in flight, in its own thread so the reads
    land during the collective, not only after it. A failing read is recorded, not raised:
    losing one sample must not lose the run."""

    def __init__(self, ctl: Any, period: float, counter_every: int = 4,
                 tdf: float = 1.0) -> None:
        super().__init__(name="experiment-sampler", daemon=True)
        self.ctl = ctl
        self.tdf = tdf
        """Errors say when, in fabric µs since the sampler was made (wall time ÷ this)."""
        self._t0 = time.time()
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
        queues = self._pool.submit(lambda: self.ctl.read_queues(clear=True, reader="sampler"))
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
            self.errors.append(f"read_counters at {self._when(t)}: {e}")
        try:
            self.queues.append(queues.result().assign(t=t))
        except Exception as e:  # noqa: BLE001
            self.errors.append(f"read_queues at {self._when(t)}: {e}")
        return c

    def _when(self, t: float) -> str:
        return f"{(t - self._t0) / self.tdf * 1e6:.1f} µs of the run (fabric time)"

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


# ---- the knobs, in fabric units -----------------------------------------------------------------
@dataclass(frozen=True)
class HostSettings:
    """The hosts' side of a collective (an experiment's workload has the same fields): the
    agents' transport, segment size and window cap, the RTO before the first RTT sample, the
    pacing rate (None: the link rate) and how long they linger, in fabric units."""

    transport: str = "udp"
    qps: int = 1
    mss: int = 1400
    window: int = 256
    rto_ms: float = dim(Dim.TIME, 0.05)
    rate: str | None = dim(Dim.RATE, None)
    linger_rtos: float | None = dim(Dim.COUNT, None)
    timeout_s: float = dim(Dim.WALL, 60.0)
    """A hard bound on one collective, on the machine's clock."""


class HostKnobs(Protocol):
    """What a run needs of its hosts' settings (HostSettings, an experiment's workload)."""

    @property
    def transport(self) -> str: ...
    @property
    def qps(self) -> int: ...
    @property
    def mss(self) -> int: ...
    @property
    def window(self) -> int: ...
    @property
    def rto_ms(self) -> float: ...
    @property
    def rate(self) -> str | None: ...
    @property
    def linger_rtos(self) -> float | None: ...
    @property
    def timeout_s(self) -> float: ...


@dataclass(frozen=True)
class SessionConfig:
    """Every dimensioned knob of a session (fabric units; :func:`model.dilation.dilate` turns
    it into what the emulation runs). ``fabric`` None: a fabric in the emulation's own units
    (TDF 1, no modelled delay), as an experiment file without a fabric block."""

    fabric: FabricConfig | None = FabricConfig()
    transport: TransportSettings = field(default_factory=fabric_transport)
    hosts: HostSettings = HostSettings()
    control_period_s: float = dim(Dim.TIME, 20e-6)
    """The control loops' period (failure probes, Whack-a-Mole)."""
    sample_period_s: float = dim(Dim.TIME, 20e-6)
    """How often a run samples counters and queues."""
    settle_s: float = dim(Dim.TIME, 5e-6)
    """Pause after a scheme change so in-flight packets of the previous scheme drain."""
    start_margin_s: float = dim(Dim.WALL, 1.0)
    """The agents start together this long after launch (their start barrier)."""


@dataclass(frozen=True)
class _SchemeParams:
    params: dict[str, Any] = dim(Dim.PARAMS, default_factory=dict)


def scheme_time_params(name: str, params: dict[str, Any],
                       flowlet_gap_us: float | None = None) -> dict[str, Any]:
    """A scheme's parameters in fabric units with every time parameter stated: the fabric's
    flowlet gap for a flowlet scheme without a timeout, else the scheme's own default of each
    of its ``time_params``, so that dilation scales it (a default left implicit would be
    written undilated: 100 µs of wall time is no gap at all at 1 Mb/s)."""
    from model.schemes import SCHEMES

    out = with_flowlet_gap(name, params, flowlet_gap_us)
    cls = SCHEMES.get(name)
    if cls is not None and dataclasses.is_dataclass(cls):
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        for p in cls.time_params:
            if p not in out and defaults.get(p, dataclasses.MISSING) is not dataclasses.MISSING:
                out[p] = defaults[p]
    return out


def resolve_tdf(tdf: float | str, topology_key: str, target: str,
                link_rate: str) -> tuple[float, str]:
    """The TDF and where it comes from: a number as given, ``auto`` this machine's calibrated
    one (topo/calibration.py), else :data:`DEFAULT_TDF` with a note to calibrate."""
    if tdf != TDF_AUTO:
        try:
            v = float(tdf)
        except (TypeError, ValueError):
            raise ValueError(f"tdf must be a number >= 1 or 'auto', got {tdf!r}") from None
        if not v >= 1:
            raise ValueError(f"tdf must be a number >= 1 or 'auto', got {tdf!r}")
        return v, "given"
    from .calibration import lookup

    e = lookup(topology_key, target, link_rate)
    if e is not None:
        return e.tdf, "calibrated"
    return DEFAULT_TDF, "nothing calibrated (sudo make calibrate): default"


def emulated_spec(spec: FabricSpec, link_bps: float, tdf: float) -> FabricSpec:
    """``spec`` with every link at its rate ÷ ``tdf`` (a link without a rate at ``link_bps``,
    the fabric's)."""
    links = [dataclasses.replace(lk, bw_mbps=(lk.bw_mbps or link_bps / 1e6) / tdf)
             for lk in spec.links]
    return dataclasses.replace(spec, links=links)


@dataclass
class CollectiveRun:
    """One collective on the session's fabric, in fabric units. ``valid``: the fidelity
    guard's verdict (topo/guard.py), ``reasons`` why not; ``guard``: its figures (µs are
    fabric µs)."""

    schedule: str
    size: str
    hosts: list[str]
    ok: bool
    cct_us: float | None
    valid: bool
    reasons: tuple[str, ...]
    tdf: float
    retransmissions: int
    out_dir: Path
    guard: GuardRow | None = None
    """None: the fabric was not measured."""
    agent_args: dict[str, Any] = field(default_factory=dict)
    """The traffic.run flags the hosts ran with (emulation units: dilated)."""
    qdepth_max: int | None = None
    """The deepest P4 egress queue the run's samples saw, packets."""
    loop_events: list[str] = field(default_factory=list)
    """What the control loops did during the run (Whack-a-Mole's weight changes, reroutes)."""
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        head = f"{self.schedule} {self.size} on {len(self.hosts)} hosts"
        if self.cct_us is None:
            return (f"{head}: FAILED ({'; '.join(self.errors[:3]) or 'no metrics'}); logs in "
                    f"{self.out_dir}")
        state = "ok" if self.ok else "INCOMPLETE"
        loops = f"; {len(self.loop_events)} control-loop actions" if self.loop_events else ""
        queue = "" if self.qdepth_max is None else \
            f"; deepest queue {self.qdepth_max} packets"
        if self.guard is not None and self.guard.trims:
            queue += f"; {self.guard.trims} packets trimmed"
        return (f"{head}: CCT {self.cct_us:.1f} µs (fabric time, TDF {self.tdf:g}; {state}; "
                f"{self.retransmissions} retransmissions{queue}{loops})\n"
                + ("valid: the emulation kept up" if self.valid else
                   "INVALID: " + "; ".join(self.reasons)))


# ---- the session ----------------------------------------------------------------------------------
class FabricSession:
    """The emulated fabric in fabric units: ``with FabricSession(...) as s:`` (or ``start()``
    / ``stop()``). See the module docstring; every argument is in the modelled fabric's
    units except those marked wall."""

    def __init__(self, topology: str | FabricSpec = "fattree", *, k: int = 4, leaves: int = 4,
                 spines: int = 2, hosts_per_leaf: int = 2, uplinks: int = 1,
                 link_rate: str | float = "100G", prop_delay_us: float = 1.0, mtu: int = 1500,
                 queue_packets: int = 64, flowlet_gap_us: float | None = 50.0,
                 tdf: float | str = TDF_AUTO, scheme: str = DEFAULT_SCHEME,
                 scheme_params: dict[str, Any] | None = None,
                 transport: TransportSettings | None = None,
                 hosts: HostSettings | None = None,
                 loops: Sequence[str] | None = LOOPS_AUTO,
                 control_period_us: float = 20.0, sample_period_us: float = 20.0,
                 target: str = Target.P4SWITCH.value,
                 switch_priority: str = SwitchPriority.REALTIME.value,
                 socket_buffer: int | None = 262144, lock_timeout_s: float = 0.0,
                 run_dir: str | Path | None = None, pcap: bool = False,
                 log_level: str = "warn", trim: bool = False) -> None:
        from .calibration import topology_key

        bps = parse_rate(link_rate)
        if not bps > 0:
            raise ValueError(f"link_rate must be > 0, got {link_rate!r}")
        fabric = FabricConfig(link_rate=format_rate(bps), prop_delay_us=prop_delay_us, mtu=mtu,
                              queue_packets=queue_packets, flowlet_gap_us=flowlet_gap_us,
                              trim=trim)
        if isinstance(topology, FabricSpec):
            spec, key = topology, topology.name
        elif topology == "fattree":
            spec = fat_tree(k, bps / 1e6)
            key = topology_key("fattree", k)
        elif topology == "leafspine":
            spec = leaf_spine(leaves, spines, hosts_per_leaf, uplinks, bps / 1e6)
            key = topology_key("leafspine", k, leaves, spines, hosts_per_leaf, uplinks)
        else:
            raise ValueError(f"topology: expected fattree, leafspine or a FabricSpec, got "
                             f"{topology!r}")
        factor, source = resolve_tdf(tdf, key, target, fabric.link_rate)
        if bps / factor < MIN_EMULATED_BPS:
            raise ValueError(f"links of {fabric.link_rate}b/s at TDF {factor:g} would run at "
                             f"{format_rate(bps / factor)}b/s here, below the "
                             f"{format_rate(MIN_EMULATED_BPS)}b/s a switch can emulate: lower "
                             "the TDF")
        units = SessionConfig(fabric=fabric, transport=transport or fabric_transport(),
                              hosts=hosts or HostSettings(),
                              control_period_s=control_period_us * 1e-6,
                              sample_period_s=sample_period_us * 1e-6)
        self._setup(spec, emulated_spec(spec, bps, factor), units, dilate(units, factor),
                    factor, source, target=target, switch_priority=switch_priority,
                    socket_buffer=socket_buffer, lock_timeout_s=lock_timeout_s,
                    run_dir=run_dir, pcap=pcap, log_level=log_level, loops=loops)
        self.scheme_name, self.scheme_params = scheme, dict(scheme_params or {})
        self._check_scheme(scheme, self.scheme_params)

    @classmethod
    def emulating(cls, spec: FabricSpec, emu: SessionConfig, tdf: float, *,
                  loops: Sequence[str] | None, **kw: Any) -> FabricSession:
        """A session over knobs already dilated by ``tdf`` (``spec`` at the emulated rates):
        the experiment runner's, which dilates its whole file with the same
        :func:`model.dilation.dilate`. Its schemes are built Scheme objects, taken as is."""
        s = cls.__new__(cls)
        s._setup(spec, spec, None, emu, tdf, "given", loops=loops, **kw)
        s.scheme_name, s.scheme_params = DEFAULT_SCHEME, {}
        return s

    def _setup(self, spec: FabricSpec, emu_spec: FabricSpec, units: SessionConfig | None,
               emu: SessionConfig, tdf: float, tdf_source: str, *, target: str,
               switch_priority: str, socket_buffer: int | None, lock_timeout_s: float,
               run_dir: str | Path | None = None, pcap: bool = False,
               log_level: str = "warn", loops: Sequence[str] | None = LOOPS_AUTO) -> None:
        if loops is not None:
            from controller.loops import LOOP_NAMES

            bad = [lp for lp in loops if lp not in LOOP_NAMES]
            if bad:
                raise ValueError(f"unknown loop(s) {', '.join(bad)} (choose from "
                                 f"{', '.join(LOOP_NAMES)})")
        self.spec, self.emu_spec = spec, emu_spec
        self.units, self.emu = units, emu
        self.tdf, self.tdf_source = tdf, tdf_source
        self.target, self.switch_priority = target, switch_priority
        self.socket_buffer, self.lock_timeout_s = socket_buffer, lock_timeout_s
        self.run_dir, self.pcap, self.log_level = run_dir, pcap, log_level
        self.auto_loops = loops is None
        self.loop_names: tuple[str, ...] = tuple(DEFAULT_LOOPS if loops is None else loops)
        self.net: Any = None
        self.ctl: Any = None
        self.priority: dict[str, int] = {}
        """How the switch processes are scheduled: {what was applied: switches}."""
        self.prop_delay_us = 0.0
        """Each link's propagation delay as the switches emulate it (wall µs; 0: none)."""
        self.host_prop_delay_us = 0.0
        """Each link's propagation delay as the hosts' agents add it on arrival, path links ×
        this (wall µs; 0: none): the eBPF target's fabric cannot delay frames itself
        (traffic/delayline.py)."""
        self.timings: dict[str, float] = {}
        self.last_agent_args: dict[str, Any] = {}
        self.last_scheme: Any = None
        """The scheme last written on every group (emulation units)."""
        self.t_start = time.time()
        """When the fabric came up (wall, time.time()): fabric time 0 of :meth:`events`."""
        self.cut_links: set[tuple[str, str]] = set()
        """Links :meth:`cut` took down and :meth:`restore` has not brought back: the guard
        does not count the failure loop finding them down against a run."""

    # ---- units ---------------------------------------------------------------------------------
    def _check_scheme(self, name: str, params: dict[str, Any]) -> None:
        from model.schemes import scheme_from_name

        scheme_from_name(name, **self._fabric_params(name, params))  # ValueError if bad

    def _fabric_params(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        gap = self.units.fabric.flowlet_gap_us if self.units and self.units.fabric else None
        return scheme_time_params(name, params, gap)

    def emulated_scheme(self, name: str, params: dict[str, Any] | None = None) -> Any:
        """The Scheme object the switches get for ``name`` with fabric-unit ``params``: every
        time parameter stated and dilated (model.dilation, the runner's function)."""
        from model.schemes import scheme_from_name

        p = dilate(_SchemeParams(self._fabric_params(name, dict(params or {}))), self.tdf).params
        # the switches take whole µs
        return scheme_from_name(name, **{k: round(v) if k.endswith("_us")
                                         and isinstance(v, float) else v
                                         for k, v in p.items()})

    def fabric_us(self, wall_s: float) -> float:
        """Wall seconds of the emulation -> fabric µs."""
        return wall_s / self.tdf * 1e6

    @property
    def link_bps(self) -> float:
        """The emulated links' rate (the slowest), bits/s of wall time."""
        rates = [lk.bw_mbps for lk in self.emu_spec.links if lk.bw_mbps]
        return min(rates) * 1e6 if rates else float("inf")

    def _prop_s(self) -> float:
        f = self.emu.fabric
        return f.prop_delay_us * 1e-6 if f else 0.0

    def _packet_bytes(self) -> int:
        return self.emu.fabric.mtu if self.emu.fabric else 1500

    def _queue_depth(self) -> int | None:
        return self.emu.fabric.queue_packets if self.emu.fabric else None

    def ecn_threshold(self) -> Any:
        """The switches' CE-marking threshold for the transport's algorithm."""
        return self.emu.transport.marking(self.emu_spec, self._prop_s(), self._packet_bytes(),
                                          self._queue_depth() or 64)

    def base_rtt_s(self, packet_bytes: int | None = None) -> float:
        """The unloaded round trip between the farthest hosts, wall seconds of the emulation
        (propagation and one packet's and one ACK's serialisation per hop)."""
        from traffic.congestion import base_rtt, host_hops

        bps = self.link_bps if self.link_bps != float("inf") else 1e12
        return base_rtt(host_hops(self.emu_spec), self._prop_s(), bps,
                        packet_bytes or self._packet_bytes())

    def transport_config(self, base: Any, h: HostKnobs) -> Any:
        """The hosts' traffic.transport.TransportConfig for host settings ``h`` (dilated)."""
        return self.emu.transport.transport_config(base, h, self.base_rtt_s(), RTO_BOUNDS)

    def agent_args(self, h: HostKnobs, policy_args: dict[str, Any] | None = None) \
            -> dict[str, Any]:
        """The traffic.run flags of every host of a run (emulation units, dilated): transport,
        congestion control and its timers, initial RTO, pacing rate and credit, path policy."""
        from traffic.transport import TransportConfig

        kw: dict[str, Any] = {"transport": h.transport, "qps": h.qps, "mss": h.mss,
                              "window": h.window, "rto_ms": h.rto_ms,
                              "linger_rtos": h.linger_rtos}
        if h.transport == "udp":
            kw.update(transport_args(self.transport_config(TransportConfig(), h)))
            credit = self.emu.transport.pace_credit_us   # the agent's pacer (dilated)
            if credit is not None:
                kw["pace_credit_ms"] = credit * 1e-3
        if h.rate:
            kw["rate"] = h.rate
        elif self.emu.fabric is not None:   # a fabric's hosts pace at its link rate
            kw["rate"] = format_rate(self.link_bps)
        kw.update(policy_args or {})
        return kw

    # ---- life cycle ----------------------------------------------------------------------------
    def __enter__(self) -> FabricSession:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @classmethod
    def over(cls, net: Any, ctl: Any = None, tdf: float = 1.0) -> FabricSession:
        """A session over a FabricNet (and FabricController) started by hand, in the
        emulation's own units unless ``tdf`` says by how much their rates are dilated."""
        s = cls.emulating(net.spec, SessionConfig(fabric=None, transport=TransportSettings()),
                          tdf, loops=getattr(ctl, "loop_names", ()) if ctl else (),
                          target=getattr(net, "target", Target.P4SWITCH.value),
                          switch_priority=SwitchPriority.NONE.value, socket_buffer=None,
                          lock_timeout_s=0.0)
        s.net, s.ctl = net, ctl
        s.priority = dict(getattr(net, "priority", {}))
        # fabric time 0 of events(): the controller's first event (its start), not this call
        s.t_start = min([e.time for e in getattr(ctl, "events", [])], default=s.t_start)
        return s

    def start(self, scheme: Any = None, *, agents: Sequence[str] = (),
              controller: bool = True) -> FabricSession:
        """Bring the fabric up (switches at the session's priority, links at the emulated
        rate and delay) and the controller with its scheme and loops (``controller=False``:
        switches left empty); ``agents``: hosts whose traffic agents to start now (else at
        their first collective)."""

        from .net import FabricNet

        t0 = time.perf_counter()
        self.t_start = time.time()
        f = self.emu.fabric
        # p4switch emulates each link's propagation delay itself (no netem in this kernel);
        # on the eBPF target the receiving hosts add it (traffic/delayline.py); BMv2 cannot,
        # and reports say so
        self.prop_delay_us = f.prop_delay_us if f and self.target == Target.P4SWITCH else 0.0
        self.host_prop_delay_us = f.prop_delay_us if f and self.target == Target.EBPF else 0.0
        self.net = FabricNet(self.emu_spec, target=self.target, run_dir=self.run_dir,
                             pcap=self.pcap, log_level=self.log_level,
                             lock_timeout=self.lock_timeout_s, queue_depth=self._queue_depth(),
                             socket_buffer=self.socket_buffer,
                             switch_priority=self.switch_priority,
                             prop_delay_us=self.prop_delay_us,
                             trim_bytes=TRIM_BYTES if f and f.trim else None)
        try:
            self.net.start()
            self.priority = dict(self.net.priority)
            self.timings["fabric_up"] = time.perf_counter() - t0
            if controller:
                built = scheme if scheme is not None else self.emulated_scheme(
                    self.scheme_name, self.scheme_params)
                self.ctl = self._controller()
                self._start_controller(built)
            if agents:
                t0 = time.perf_counter()
                self.net.agents.ensure(list(agents))
                self.timings["agents_up"] = time.perf_counter() - t0
        except BaseException:
            self.stop()
            raise
        return self

    def _controller(self) -> Any:
        from controller import FabricController

        return FabricController(self.emu_spec, target=self.target,
                                control_period=self.emu.control_period_s,
                                connect_timeout=60.0, ecn_threshold=self.ecn_threshold())

    def _start_controller(self, scheme: Any, reuse_pipeline: bool = False) -> None:
        t0 = time.perf_counter()
        # automatic loops: the controller adds Whack-a-Mole's whenever a group uses it
        self.ctl.start(scheme=scheme, loops=None if self.auto_loops else self.loop_names,
                       reuse_pipeline=reuse_pipeline)
        self.loop_names = tuple(self.ctl.loop_names)
        self.last_scheme = self.ctl.scheme
        self.timings["install"] = self.timings.get("install", 0.0) + time.perf_counter() - t0

    def _loops_for(self, *schemes: Any) -> tuple[str, ...]:
        """The loop set with ``schemes`` in use: as given, or (automatic) the defaults plus
        Whack-a-Mole's whenever a group runs it (controller.fabric.auto_loops)."""
        from controller.fabric import auto_loops

        if not self.auto_loops:
            return self.loop_names
        if self.ctl is not None:
            schemes = (*schemes, self.ctl.scheme, *self.ctl.group_schemes.values())
        return auto_loops(*schemes, have=self.loop_names)

    def stop(self) -> None:
        """Stop the controller and tear the fabric down (idempotent)."""
        t0 = time.perf_counter()
        try:
            if self.ctl is not None:
                self.ctl.stop()
        finally:
            self.ctl = None
            if self.net is not None:
                self.net.stop()
            self.net = None
            self.timings["teardown"] = time.perf_counter() - t0

    def retune(self, spec: FabricSpec, emu: SessionConfig, tdf: float) -> None:
        """Run the fabric that is up at another TDF (``spec``/``emu`` dilated by it): its link
        rates and delay; the controller keeps its period until :meth:`restart_controller`."""
        for old_lk, lk in zip(self.emu_spec.links, spec.links, strict=True):
            if lk.bw_mbps and lk.bw_mbps != old_lk.bw_mbps:
                self.net.set_link_rate(lk.a, lk.b, lk.bw_mbps)
        if self.prop_delay_us and emu.fabric and emu.fabric.prop_delay_us != self.prop_delay_us:
            self.net.set_prop_delay(emu.fabric.prop_delay_us)
            self.prop_delay_us = emu.fabric.prop_delay_us
        if self.host_prop_delay_us and emu.fabric:
            self.host_prop_delay_us = emu.fabric.prop_delay_us
        self.emu_spec, self.emu, self.tdf = spec, emu, tdf
        if self.units is None:
            self.spec = spec

    def restart_controller(self, scheme: Any, loops: Sequence[str] | None) -> None:
        """A new controller with the session's period, loops and ECN threshold that keeps the
        switches' pipelines and writes only the entries that differ."""
        self.ctl.stop()
        if loops is not None:
            self.auto_loops, self.loop_names = False, tuple(loops)
        self.ctl = self._controller()
        self._start_controller(scheme, reuse_pipeline=True)

    # ---- schemes and loops ------------------------------------------------------------------------
    def set_scheme(self, scheme: Any, target: str | tuple[str, int] | None = None,
                   **params: Any) -> Any:
        """Set a scheme on every group, one switch's or one group (``(switch, group_id)``):
        a name with fabric-unit parameters (``set_scheme("flowlet", timeout_us=50)``;
        written dilated), or a Scheme object taken as is. Whack-a-Mole's loop starts with it
        when the loops are automatic. Returns the Scheme the switches got."""
        if isinstance(scheme, str):
            built = self.emulated_scheme(scheme, params)
            if target is None:
                self.scheme_name, self.scheme_params = scheme, dict(params)
        else:
            built = scheme
        t0 = time.perf_counter()
        self.ctl.set_scheme(built, target)   # automatic loops: Whack-a-Mole's joins with it
        self.loop_names = tuple(self.ctl.loop_names)
        if target is None:
            self.last_scheme = built
        time.sleep(self.emu.settle_s)
        self.timings["set_scheme"] = self.timings.get("set_scheme", 0.0) + (
            time.perf_counter() - t0)
        return built

    def set_loops(self, loops: Sequence[str] | None, auto: bool = False) -> None:
        """Run exactly these control loops from now on (``auto``: keep adding Whack-a-Mole's
        when a scheme change needs it); None: automatic (failure and reconcile, and
        Whack-a-Mole's whenever a group uses it)."""
        if loops is None:
            self.auto_loops, self.loop_names = True, DEFAULT_LOOPS
            loops, auto = self._loops_for(), True
        self.ctl.set_loops(tuple(loops))
        self.ctl.auto_loops = auto
        self.loop_names, self.auto_loops = tuple(loops), auto

    # ---- runs --------------------------------------------------------------------------------------
    def collective(self, schedule: str = "ring_allreduce", size: str | int = "64KB",
                   hosts: Sequence[str] | None = None, *, options: dict[str, Any] | None = None,
                   seed: int = 0, out_dir: str | Path | None = None,
                   **host_settings: Any) -> CollectiveRun:
        """Run one collective (a traffic/schedules generator) on ``hosts`` (default: all, in
        spec order; rank i on hosts[i]) and judge it. ``host_settings`` override the session's
        :class:`HostSettings` for this run, in fabric units (``rto_ms=0.05``, ``window=64``).
        ``seed`` draws the schedule's random choices (the MoE's hot experts) and restarts
        every p4switch's random() before the run (:meth:`seed_data_plane`), as the experiment
        runner does per run: the same seed, the same choices from a script and the runner.
        Returns the CCT in fabric µs and the guard's verdict."""
        from traffic.schedules import GENERATORS, parse_size

        from .guard import judge_run

        if self.ctl is None:
            raise RuntimeError("the session is not started (start() or a with block)")
        if schedule not in GENERATORS:
            raise ValueError(f"unknown schedule {schedule!r} (choose from "
                             f"{', '.join(GENERATORS)})")
        names = list(hosts) if hosts else sorted(self.spec.hosts,
                                                 key=lambda h: self.spec.hosts[h].index)
        unknown = [h for h in names if h not in self.spec.hosts]
        if unknown:
            raise ValueError(f"unknown host(s): {', '.join(unknown)}")
        if len(names) < 2 or len(set(names)) != len(names):
            raise ValueError("a collective needs at least 2 distinct hosts")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
        nbytes = parse_size(size)
        base = self.units.hosts if self.units else self.emu.hosts
        try:
            h_units = dataclasses.replace(base, **host_settings)
        except TypeError as e:
            raise ValueError(f"collective: {e}") from None
        h = dilate(h_units, self.tdf) if self.units else h_units
        gen, opts = GENERATORS[schedule], dict(options or {})
        if "seed" not in opts and "seed" in inspect.signature(gen).parameters:
            opts["seed"] = seed   # a seeded generator's draws (the MoE's hot experts)
        try:
            sched = gen(len(names), nbytes, **opts)
        except TypeError as e:
            raise ValueError(f"{schedule}: {e}") from None
        out = Path(out_dir) if out_dir else (
            self.net.run_dir / f"collective-{schedule}-{time.time():.0f}")
        self.seed_data_plane(seed)
        s = self.run_schedule(sched, names, h, out)
        if out_dir:
            give_back(out, upto=Path(out_dir).parent)   # a script under sudo: the user's
        ranks = s.ranks
        mtu = h.mss + IP_HEADERS
        v = judge_run(s.measures, ranks, s.events, self.link_bps, self.tdf, mtu,
                      down_links=self.cut_links) \
            if s.measures is not None else None
        cct = s.cct_s
        retx = sum(r.totals().retransmissions for r in ranks)
        return CollectiveRun(schedule=schedule, size=str(size), hosts=names,
                             ok=s.collective_ok,
                             cct_us=None if cct is None else self.fabric_us(cct),
                             valid=v.valid if v else False,
                             reasons=v.reasons if v else ("the fabric was not measured",),
                             tdf=self.tdf, retransmissions=retx, out_dir=out,
                             guard=v.row if v else None,
                             agent_args=dict(self.last_agent_args),
                             qdepth_max=int(s.queues["qdepth_max"].max())
                             if "qdepth_max" in s.queues else None,
                             loop_events=[f"{e.loop} {e.switch or ''}: {e.what}"
                                          for e in s.events if e.loop in LOOP_EVENTS],
                             errors=s.errors)

    def run_schedule(self, schedule: Any, hosts: Sequence[str], h: HostKnobs, out: Path,
                     policy_args: dict[str, Any] | None = None,
                     during: Callable[[Sampler, RunSamples], AbstractContextManager[Any]]
                     | None = None) -> RunSamples:
        """Run a traffic.schedules Schedule (rank i on ``hosts[i]``) with host settings ``h``
        in emulation units, probing the fabric before and after (the guard's measures) and
        sampling counters and queues during it; ``during``: a context the collective runs in
        (the runner's link failure). Everything in wall units: the caller converts."""
        from traffic.schedules import dump

        from .collective import run_collective
        from .probes import FabricProbe, measures

        out.mkdir(parents=True, exist_ok=True)
        schedule.placement = None   # rank i on hosts[i]: run_collective's block placement
        sched_file = out / "schedule.json"
        dump(schedule, sched_file)
        hosts = list(hosts)
        res = RunSamples()
        t_probe = time.perf_counter()
        probe = FabricProbe(self.net, hosts)
        probe_before = probe.snapshot()
        host_before = self.host_counters(hosts)
        n_events = len(self.ctl.events)
        sampler = Sampler(self.ctl, self.emu.sample_period_s, tdf=self.tdf)
        # the sampler's first sample is the run's "before" counters (a second Read of every
        # switch, back to back with it, cost ~0.35 s per run on the demo's 20 switches)
        first = sampler.sample()
        res.counters_before = first if first is not None else self.ctl.read_counters()
        self._add_time("run: probes and counters", t_probe)
        sampler.start()
        ctx = during(sampler, res) if during else nullcontext()
        try:
            with ctx:
                kw = self.agent_args(h, policy_args)
                if self.host_prop_delay_us and h.transport == "udp":
                    from traffic.delayline import write_path_links

                    kw["prop_delay_us"] = self.host_prop_delay_us
                    kw["path_links"] = str(write_path_links(self.emu_spec,
                                                            out / "path_links.json"))
                self.last_agent_args = dict(kw)
                t_coll = time.perf_counter()
                result = run_collective(self.net, schedule=str(sched_file), hosts=hosts,
                                        timeout=h.timeout_s, out_dir=out / "traffic",
                                        start_margin=self.emu.start_margin_s, **kw)
                self._add_time("run: collective", t_coll)
                t_probe = time.perf_counter()
                probe_after = probe.snapshot()
                self._add_time("run: probes and counters", t_probe)
            res.measures = measures(probe_before, probe_after)
            res.errors += probe_before.errors + probe_after.errors
            res.errors += list(getattr(result, "errors", []))   # e.g. an agent that crashed
            res.collective_ok = bool(getattr(result, "ok", False))
            res.cct_s = getattr(result, "cct_s", None)
            res.ranks = [result.metrics[r] for r in sorted(result.metrics)]
        finally:
            t_after = time.perf_counter()
            last = sampler.finish()             # its last sample: the "after" counters
            res.links, res.queues, res.counters = sampler.tables()
            res.errors += sampler.errors
            try:
                res.counters_after = last if last is not None else self.ctl.read_counters()
                after = self.host_counters(hosts)
                res.host_tx_bytes = sum(after[x]["tx_bytes"] - host_before[x]["tx_bytes"]
                                        for x in hosts)
                res.host_tx_packets = sum(
                    after[x]["tx_packets"] - host_before[x]["tx_packets"] for x in hosts)
            except Exception as e:  # noqa: BLE001
                res.errors.append(f"counters after the run: {e}")
            res.events = list(self.ctl.events[n_events:])
            self._add_time("run: probes and counters", t_after)
        return res

    def _add_time(self, phase: str, since: float) -> None:
        self.timings[phase] = self.timings.get(phase, 0.0) + time.perf_counter() - since

    def host_counters(self, hosts: Sequence[str]) -> dict[str, dict[str, int]]:
        """The kernel's byte/packet counters of each host's interface: everything the host put
        on its link (data, ACKs, barrier beacons), to check the switch counters against."""
        out = {}
        for h in hosts:
            node = self.net.get(h)
            d = f"/sys/class/net/{node.defaultIntf().name}/statistics"
            vals = node.cmd(f"cat {d}/tx_bytes {d}/tx_packets").split()
            out[h] = {"tx_bytes": int(vals[0]), "tx_packets": int(vals[1])}
        return out

    def seed_data_plane(self, seed: int) -> None:
        """Each p4switch's random() from ``seed`` and its device id, over its control socket
        (other targets keep their own; a switch that does not answer is left as it was).
        :meth:`collective` calls it, and the experiment runner (through its Mininet backend)
        before every run."""
        from p4switch import ControlClient, ControlError

        for sw in self.net.switches:
            sock = getattr(sw, "control_socket", None)
            if sock is None or type(sw).__name__ != "P4Switch":
                continue
            try:
                with ControlClient(str(sock)) as c:
                    c.seed_random(seed * 1000 + sw.spec.device_id)
            except (ControlError, OSError):
                pass

    # ---- reading and cutting ------------------------------------------------------------------
    def counters(self, switch: str | None = None) -> pd.DataFrame:
        """Packet/byte counters over P4Runtime (every switch, or one)."""
        return self.ctl.read_counters(None if switch is None else [self._switch(switch)])

    def queues(self, clear: bool = False) -> pd.DataFrame:
        """Per port: the egress queue's maximum and last depth (packets) and its maximum
        queueing delay in fabric µs (the queue held ``qdepth_max`` packets at the fabric's
        link rate)."""
        df = self.ctl.read_queues(clear=clear)
        if not df.empty and "qdepth_max" in df and self.units and self.units.fabric:
            f = self.units.fabric
            df = df.assign(max_delay_us=df["qdepth_max"] * (f.mtu + 14) * 8 / f.link_bps * 1e6)
        return df

    def links(self) -> pd.DataFrame:
        """Per switch-switch link direction: counters since start and whether it is up."""
        return self.ctl.read_links()

    def link_load(self, before: pd.DataFrame, after: pd.DataFrame, wall_s: float) \
            -> pd.DataFrame:
        """Each link direction's load between two :meth:`links` reads ``wall_s`` apart, in
        fabric units: ``gbps`` (the bytes over the fabric time between them) and ``util``
        (of the link's fabric rate)."""
        key = ["src", "src_port", "dst", "dst_port"]
        m = after.merge(before[[*key, "tx_packets", "tx_bytes"]], on=key, how="left",
                        suffixes=("", "_prev")).fillna({"tx_packets_prev": 0,
                                                        "tx_bytes_prev": 0})
        fabric_s = max(wall_s, 1e-9) / self.tdf
        gbps = (m["tx_bytes"] - m["tx_bytes_prev"]) * 8 / fabric_s / 1e9
        rate = {(lk.a, lk.b): lk.bw_mbps for lk in self.spec.links}
        rate.update({(lk.b, lk.a): lk.bw_mbps for lk in self.spec.links})
        cap = [((rate.get((a, b)) or 0) / 1e3) or float("nan")
               for a, b in zip(m["src"], m["dst"], strict=True)]
        return after.assign(d_packets=(m["tx_packets"] - m["tx_packets_prev"]).values,
                            gbps=gbps.round(3).values, util=(gbps / cap).round(3).values)

    def fabric_time_us(self, wall: float) -> float:
        """A wall-clock instant (time.time()) -> fabric µs since the session started."""
        return self.fabric_us(wall - self.t_start)

    def events(self, n: int | None = None) -> list[FabricEvent]:
        """The last ``n`` (default all) things the controller and its loops did, each at
        its fabric time since the session started."""
        evs = list(self.ctl.events)
        return [FabricEvent(self.fabric_time_us(e.time), e.loop, e.switch, e.what)
                for e in (evs if n is None else evs[-n:] if n > 0 else [])]

    def cut(self, a: str, b: str, notify: bool = False) -> None:
        """Take the a-b link down physically (both interfaces); ``notify``: tell the
        controller at once instead of leaving the detection to its failure loop."""
        self.net.link_down(a, b)
        self.cut_links.add((min(a, b), max(a, b)))
        if notify:
            self.ctl.fail_link(a, b)

    def restore(self, a: str, b: str, notify: bool = False) -> None:
        """Bring the a-b link back up (``notify``: tell the controller too)."""
        self.net.link_up(a, b)
        self.cut_links.discard((min(a, b), max(a, b)))
        if notify:
            self.ctl.restore_link(a, b)

    def _switch(self, name: str) -> str:
        if name not in self.spec.switches:
            raise ValueError(f"no switch {name!r}")
        return name

    # ---- words -------------------------------------------------------------------------------------
    def describe(self) -> Iterator[str]:
        """The banner: the fabric modelled, how it runs here, what was dilated."""
        f = self.units.fabric if self.units else None
        rate = f.link_rate if f else "?"
        emu_rate = format_rate(self.link_bps) if self.link_bps != float("inf") else "unlimited"
        yield (f"{self.spec.name}: a {rate}b/s fabric run {self.tdf:g} times slower "
               f"(TDF {self.tdf:g}, {self.tdf_source}): links at {emu_rate}b/s here; every "
               "time and rate below is the fabric's (wall time / TDF)")
        if f:
            yield (f"  propagation {f.prop_delay_us:g} µs per link"
                   + ("" if self.prop_delay_us or not f.prop_delay_us else
                      " (added at the receiving hosts, path links × delay)"
                      if self.host_prop_delay_us else
                      f" (not emulated by target {self.target})")
                   + f", MTU {f.mtu}, queues {f.queue_packets} packets"
                   + (f", flowlet gap {f.flowlet_gap_us:g} µs" if f.flowlet_gap_us else ""))
        t = self.units.transport if self.units else self.emu.transport
        h = self.units.hosts if self.units else self.emu.hosts
        yield (f"  hosts: {t.label}, RTO {fmt_us(t.min_rto_us)} to {fmt_us(t.max_rto_us)} "
               f"(initial {fmt_us(h.rto_ms * 1e3)}), paced at {h.rate or rate}b/s; loops "
               f"{', '.join(self.loop_names) or 'none'}"
               + (" (Whack-a-Mole's joins when a group uses it)" if self.auto_loops else "")
               + f", every {fmt_us(self.emu.control_period_s / self.tdf * 1e6)}")

    def applied(self) -> dict[str, Any]:
        """What the emulation runs (wall units): the TDF, the loops and their period, the
        scheme last written on every group with its parameters, and the hosts' last
        traffic.run flags (RTO, pacing, timers). The same for the CLI, a script and an
        experiment that describe the same fabric."""
        sc = self.last_scheme
        return {"tdf": self.tdf, "loops": tuple(self.loop_names),
                "control_period_s": self.emu.control_period_s,
                "scheme": None if sc is None else {"name": sc.name, **dataclasses.asdict(sc)},
                "agent_args": dict(self.last_agent_args)}


def fmt_us(us: float | None) -> str:
    """A duration in µs as people write it: ``200 µs``, ``1.5 ms``, ``0.5 s``."""
    if us is None:
        return "?"
    if us >= 1e6:
        return f"{us / 1e6:g} s"
    return f"{us / 1e3:g} ms" if us >= 1e3 else f"{us:g} µs"


@dataclass(frozen=True)
class FabricEvent:
    """One thing the controller or a loop did, at ``time_us`` fabric µs since the session
    started (wall time since then ÷ TDF)."""

    time_us: float
    loop: str
    switch: str | None
    what: str

    def __str__(self) -> str:
        return f"{self.time_us:.1f} µs {self.loop} {self.switch or 'fabric'}: {self.what}"


def transport_args(t: Any) -> dict[str, Any]:
    """A TransportConfig's congestion control and timers as traffic.run flags."""
    return {"cc": t.cc, "cc_params": ",".join(f"{k}={v!r}" for k, v in t.cc_params) or None,
            "min_rto_ms": t.min_rto * 1e3, "max_rto_ms": t.max_rto * 1e3,
            "base_rtt_us": t.base_rtt * 1e6 or None, "ack_delay_ms": t.ack_delay * 1e3,
            "tick_ms": t.tick * 1e3}
