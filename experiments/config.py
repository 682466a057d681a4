"""The experiment file: topology + schemes + workloads + parameters + repetitions, in YAML.

An experiment answers one question ("which scheme finishes these collectives fastest on this
fabric?") reproducibly, so everything that decides a result is in the file and copied next to the
results. Loading validates the whole file before anything starts: a typo must not surface after
the fabric has been up for five minutes. Every error names the field by its dotted path, e.g.
``workloads[1].size: '12XB' is not a size`` (docs/experiments.md has the full schema).
"""

from __future__ import annotations

import dataclasses
import inspect
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controller.loops import LOOP_NAMES, ControlLoop
from model.dilation import Dim, dim, format_rate, parse_rate
from model.schemes import SCHEMES, Scheme, scheme_from_name
from model.spec import (
    FabricSpec,
    SpecError,
    degrade_links,
    fat_tree,
    leaf_spine,
    random_switch_links,
)
from model.targets import AUTO_TARGET, TARGET_NAMES, Target, resolve_auto
from topo.priority import SwitchPriority
from topo.units import (
    FABRIC_DEFAULTS,
    FABRIC_TRANSPORT,
    TDF_AUTO,
    FabricConfig,
    TransportSettings,
    fabric_transport,
    with_flowlet_gap,
)
from traffic.schedules import GENERATORS, Schedule, ScheduleError, bsp_training, parse_size
from traffic.schedules.cm import failed_links, load_cm, read_cm
from traffic.schedules.placement import Placement

BACKENDS = ("mininet", "sim")
TOPOLOGIES = ("fattree", "leafspine")
TRANSPORTS = ("udp", "tcp")
TM_SCHEDULE = "tm"
"""A workload's ``schedule`` when it runs an htsim connection matrix (its ``tm`` file)."""
SIM_START_SKEW_S = 0.5e-6
"""The simulator's default host start skew, fabric seconds: the emulated agents of the demo's
ring started 0-0.7 µs apart (eBPF target, TDF 5,000; their ranks' start times), and any
skew from 0.01 µs up gives the simulated ring under ECMP the same mean (docs/sim.md)."""
_SCHEDULE_OPTIONS = {"algorithm", "skew", "alpha", "hot", "hot_fraction", "tokens", "seed",
                     "combine", "slots"}


class ConfigError(ValueError):
    """A bad experiment file; ``field`` is the dotted path of the offending field."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}" if field_path else message)
        self.field = field_path


# ---- the schema ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class TopologyConfig:
    """Which fabric to build: a k-ary fat-tree or a leaf-spine, every link at ``bw_mbps``."""

    kind: str = "fattree"
    k: int = 4
    leaves: int = 4
    spines: int = 2
    hosts_per_leaf: int = 2
    uplinks: int = 1
    bw_mbps: float | None = dim(Dim.RATE, 100.0)
    oversub: float = 1.0
    """R:1 at the edge (leaf): its uplinks at ``bw_mbps``/R (model.spec.fat_tree)."""
    degrade_links: int = 0
    """That many switch links, drawn with ``degrade_seed``, at ``degrade_fraction`` of their
    rate for the whole experiment (model.spec.degrade_links)."""
    degrade_fraction: float = 0.25
    degrade_seed: int = 0

    def spec(self) -> FabricSpec:
        if self.kind == "fattree":
            s = fat_tree(self.k, self.bw_mbps, self.oversub)
        else:
            s = leaf_spine(self.leaves, self.spines, self.hosts_per_leaf, self.uplinks,
                           self.bw_mbps, self.oversub)
        if self.degrade_links:
            s = degrade_links(s, random_switch_links(s, self.degrade_links, self.degrade_seed),
                              self.degrade_fraction)
        return s


@dataclass(frozen=True)
class SchemeConfig:
    """One load-balancing scheme by registry name plus its parameters (e.g. flowlet timeout),
    and the hosts' path policy (traffic/policies.py; ``path_policy`` keys policy, pin, spray,
    avoid_us, entropy_set), so host-based designs over ECMP are rows next to switch spraying."""

    name: str
    params: dict[str, Any] = dim(Dim.PARAMS, default_factory=dict)
    path_policy: dict[str, Any] | None = dim(Dim.PARAMS, None)

    @property
    def label(self) -> str:
        lb = self.name
        if self.params:
            lb += "(" + ",".join(f"{k}={v}" for k, v in self.params.items()) + ")"
        if self.path_policy:
            lb += "+" + self.policy_spec().label
        return lb

    def policy_spec(self) -> Any:
        """The hosts' traffic.policies.PolicySpec (``single`` without a path_policy)."""
        from traffic.policies import PolicySpec, parse_policy

        pp = self.path_policy or {}
        if not pp:
            return PolicySpec()
        kw: dict[str, Any] = {"pin": bool(pp.get("pin", False)),
                              "mode": str(pp.get("spray", "rr")),
                              "entropy_set": str(pp.get("entropy_set", "random"))}
        if pp.get("avoid_us") is not None:
            kw["hold"] = float(pp["avoid_us"]) * 1e-6
        return parse_policy(str(pp.get("policy", "single")), **kw)

    def traffic_args(self, topology: TopologyConfig) -> dict[str, Any]:
        """The path policy as traffic.run flags (Mininet backend)."""
        pp = self.path_policy or {}
        if not pp:
            return {}
        out: dict[str, Any] = {"path_policy": pp.get("policy", "single"),
                               "spray": pp.get("spray"), "avoid_us": pp.get("avoid_us"),
                               "entropy_set": pp.get("entropy_set")}
        if pp.get("pin"):
            out["pin"] = True
            out["fabric"] = (f"fattree:{topology.k}" if topology.kind == "fattree" else
                             f"leafspine:{topology.leaves}:{topology.spines}:"
                             f"{topology.hosts_per_leaf}:{topology.uplinks}")
        return out

    def build(self) -> Scheme:
        """The scheme object the controller and the simulator program."""
        return scheme_from_name(self.name, **self.params)


@dataclass(frozen=True)
class BspConfig:
    """BSP training iterations around the workload's collective (traffic/schedules/bsp.py).

    ``lb_bsp``: at each iteration boundary re-size each worker's batch to its measured compute
    speed (LB-BSP), so the next iteration's compute phases end together.
    """

    iterations: int = 3
    compute_us: float = dim(Dim.TIME, 0.0)
    stragglers: tuple[int, ...] = ()
    straggler_factor: float = 2.0
    straggler_prob: float = 0.0
    jitter: float = 0.0
    lb_bsp: bool = False


@dataclass(frozen=True)
class FailureConfig:
    """Take a switch-switch link down ``at_s`` seconds into the collective (both interfaces,
    ``net.link_down``), and up again ``restore_s`` seconds in (None: at the end of the run).
    ``notify``: also tell the controller at once (``ctl.fail_link``) instead of leaving the
    detection to its failure loop."""

    link: tuple[str, str]
    at_s: float = dim(Dim.TIME, 0.2)
    restore_s: float | None = dim(Dim.TIME, None)
    notify: bool = False
    reroute: bool = True
    """sim backend: False = the fabric never routes around the link (the data plane and the
    hosts must cope alone: the failure loop is off for this workload); True = the
    controller's failure loop, when ``parameters.loops`` has it, finds it and reroutes."""


@dataclass(frozen=True)
class WorkloadConfig:
    """One collective job the hosts run under every scheme."""

    name: str
    schedule: str
    size: int
    hosts: tuple[str, ...] | None = None
    """Host names the ranks are placed on, one rank each (None: every host of the fabric)."""
    placement: str = Placement.BLOCK
    """A ``traffic.schedules.placement.Placement``: ``block`` (and ``round_robin``, the same with
    one rank per host): rank r on the r-th host; ``random``: a seeded shuffle of them, so that a
    ring's neighbours sit in different pods and its few flows must share the core (low
    entropy)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Generator options (AllToAll ``algorithm``; MoE ``skew``, ``alpha``, ``hot``, ...)."""
    transport: str = "udp"
    rate: str | None = dim(Dim.RATE, None)
    qps: int = 1
    mss: int = 1400
    window: int = 256
    rto_ms: float = dim(Dim.TIME, 200.0)
    """Retransmission timeout. The agent's 20 ms default suits a quiet machine; 20 Python
    switches sharing two cores can hold a packet longer than that, and every spurious timeout
    resends the whole window."""
    timeout_s: float = dim(Dim.WALL, 60.0)
    """A hard bound on the run, on the machine's clock (WALL: not dilated)."""
    linger_rtos: float | None = dim(Dim.COUNT, None)
    """After its last step an agent keeps ACKing until no data arrived for this many initial
    RTOs (None: the agent's 10, sized for retransmissions over dead paths). A count of RTOs:
    the RTO is dilated, the count is not."""
    bsp: BspConfig | None = None
    failure: FailureConfig | None = None
    tm: str | None = None
    """An htsim connection matrix (``.cm``, docs/htsim.md) to run instead of a generated
    schedule (``schedule`` is then ``tm``); its node n is the workload's rank n."""

    def schedule_for(self, ranks: int, speeds: list[float] | None = None,
                     iterations: int | None = None, seed: int = 0) -> Schedule:
        """The schedule this workload runs on ``ranks`` ranks (BSP: ``iterations`` of them,
        each rank's compute scaled by ``speeds``, its batch share relative to an even split).
        ``seed`` (the repetition's): a seeded generator's draws — the MoE's hot experts and
        token samples — unless the options fix a ``seed``, so that repetitions sample the
        workload, not one instance of it (one Zipf placement of the hot experts decided the
        ECMP hash lottery of every repetition); BSP passes it to the iterations instead."""
        if self.tm is not None:
            return load_cm(self.tm, ranks)
        gen = GENERATORS[self.schedule]

        def base() -> Schedule:
            return gen(ranks, self.size, **self.options)

        if self.bsp is None:
            if "seed" not in self.options and "seed" in inspect.signature(gen).parameters:
                return gen(ranks, self.size, seed=seed, **self.options)
            return base()
        b = self.bsp
        return bsp_training(base, iterations or b.iterations, b.compute_us, list(b.stragglers),
                            b.straggler_prob, b.straggler_factor, speeds=speeds,
                            jitter=b.jitter, seed=seed)


@dataclass(frozen=True)
class Parameters:
    """Run-level knobs shared by every workload and scheme."""

    target: str = Target.P4SWITCH.value
    sample_period_s: float = dim(Dim.TIME, 0.25)
    """How often the sampler reads counters, queues and links during a run."""
    control_period_s: float = dim(Dim.TIME, 0.5)
    loops: tuple[str, ...] = (ControlLoop.FAILURE.value, ControlLoop.RECONCILE.value)
    settle_s: float = dim(Dim.TIME, 0.3)
    """Pause after a scheme change so in-flight packets of the previous run drain."""
    seed: int = 0
    start_margin_s: float = dim(Dim.WALL, 4.0)
    """Hosts' agents start together this long after launch. Until every agent has heard every
    peer they beacon READY every 5 ms; on a loaded 2-core machine the 16 interpreters take
    seconds to start, and that barrier traffic must drain before the first step is timed."""
    lock_timeout_s: float = dim(Dim.WALL, 300.0)
    """How long to wait for the machine-wide fabric lock (another fabric running) before
    giving up with an error naming its holder."""
    sim_workers: int = 1
    """sim backend: processes each run is split over (sim.parallel; the results are the same
    for any number). 2 on a 2-core machine for one big run; keep 1 in a sweep, whose runs
    already fill the cores."""
    sim_ray: str | None = None
    """sim backend, with ``sim_workers`` > 1: run the parts other than the first as Ray tasks
    on the cluster at this address ("local": a Ray started here), so that one run spans
    machines (sim.rayparts; the results are the same). None: forked processes."""
    sim_prop_at_hosts: bool = False
    """sim backend: add the propagation delay at the receiving host (path links × delay)
    instead of on each link, where the eBPF target's emulation adds it (sim.network's
    ``prop_at_hosts``; traffic/delayline.py), so the two sides compare. Default: true when
    ``target`` is ebpf."""
    sim_start_skew_s: float = dim(Dim.TIME, SIM_START_SKEW_S)
    """sim backend: the hosts' start skew (sim.network's ``start_skew_us``): each host starts
    its ranks at an offset drawn uniformly below this from the repetition's seed, so that each
    repetition of the simulator is one draw of the hosts' timing, as each emulated one is
    (docs/sim.md, "Hosts' start skew"). 0: every host at once, the same event order in every
    repetition."""
    socket_buffer: int | None = None
    """Bytes of each switch port's AF_PACKET socket buffers (None: p4switch's 8 MiB). Small
    keeps the queueing in the P4 egress queues; the fidelity guard says when it is too small
    (drops outside the pipeline)."""
    tdf: float | str = 1.0
    """Time-dilation factor of the Mininet backend (with a ``fabric`` block): a number, or
    ``auto`` for this machine's calibrated one (experiments.calibrate). The simulator runs
    TDF 1."""
    switch_priority: str = SwitchPriority.REALTIME.value
    """Mininet backend: the switch processes' CPU scheduling (topo/priority.py):
    ``realtime`` (SCHED_RR 1, falling back to nice), ``nice`` or ``none``."""
    wall_budget_s: float | None = dim(Dim.WALL, None)
    """Wall-clock seconds the runner may take, calibration included, counted from its start or
    from ``experiments.run --since`` (make demo: its own start, set-up included): a repetition beyond
    ``repetitions`` (``max_repetitions``) starts only if the time so far plus its estimate
    (experiments/eta.py) fits. The ``repetitions`` themselves always run. None: no bound."""


@dataclass(frozen=True)
class ExperimentConfig:
    name: str
    topology: TopologyConfig
    schemes: tuple[SchemeConfig, ...]
    workloads: tuple[WorkloadConfig, ...]
    parameters: Parameters = Parameters()
    fabric: FabricConfig | None = None
    """The modelled fabric (None: a file in the emulation's own units, run at TDF 1)."""
    transport: TransportSettings = TransportSettings()
    repetitions: int = 1
    max_repetitions: int | None = None
    """Up to this many repetitions of a scheme where the grouping is a close call after
    ``repetitions`` (experiments.stats.close_calls: an overlap test within 2 standard errors of
    flipping): the runner adds repetitions of the two schemes until it is not, or this cap.
    None: exactly ``repetitions``."""
    backend: str = "mininet"
    description: str = ""
    source: dict[str, Any] = field(default_factory=dict)
    """The parsed YAML as given (stored with the results)."""

    def spec(self) -> FabricSpec:
        return self.topology.spec()

    def hosts_of(self, w: WorkloadConfig, spec: FabricSpec | None = None) -> list[str]:
        """The host names of a workload's ranks, rank order."""
        if w.hosts is not None:
            hosts = list(w.hosts)
        else:
            spec = spec or self.spec()
            hosts = sorted(spec.hosts, key=lambda h: spec.hosts[h].index)
        if w.placement == Placement.RANDOM:
            rng = random.Random(self.parameters.seed)
            rng.shuffle(hosts)
        return hosts


# ---- parsing helpers ----------------------------------------------------------------------------
def _obj(v: Any, path: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ConfigError(path, f"expected a mapping, got {type(v).__name__}")
    return v


def _keys(d: dict[str, Any], path: str, allowed: set[str],
          required: set[str] | frozenset[str] = frozenset()) \
        -> None:
    for k in d:
        if k not in allowed:
            raise ConfigError(_join(path, str(k)), "unknown field")
    for k in sorted(required):
        if k not in d:
            raise ConfigError(_join(path, k), "required field missing")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _int(d: dict[str, Any], k: str, path: str, default: int, lo: int | None = None,
         hi: int | None = None) -> int:
    v = d.get(k, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(_join(path, k), f"{v!r} is not an integer")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise ConfigError(_join(path, k), f"must be {rng}, got {v}")
    return v


def _num(d: dict[str, Any], k: str, path: str, default: float | None, lo: float | None = None,
         positive: bool = False) -> float | None:
    v = d.get(k, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ConfigError(_join(path, k), f"{v!r} is not a number")
    if positive and v <= 0:
        raise ConfigError(_join(path, k), f"must be > 0, got {v}")
    if lo is not None and v < lo:
        raise ConfigError(_join(path, k), f"must be >= {lo}, got {v}")
    return float(v)


def _str(d: dict[str, Any], k: str, path: str, default: str | None,
         choices: tuple[str, ...] | None = None) -> str:
    v = d.get(k, default)
    if not isinstance(v, str):
        raise ConfigError(_join(path, k), f"{v!r} is not a string")
    if choices and v not in choices:
        raise ConfigError(_join(path, k), f"{v!r} is not one of {', '.join(choices)}")
    return v


def _bool(d: dict[str, Any], k: str, path: str, default: bool) -> bool:
    v = d.get(k, default)
    if not isinstance(v, bool):
        raise ConfigError(_join(path, k), f"{v!r} is not true/false")
    return v


def _list(v: Any, path: str) -> list[Any]:
    if not isinstance(v, list):
        raise ConfigError(path, f"expected a list, got {type(v).__name__}")
    return v


# ---- sections -----------------------------------------------------------------------------------
def _topology(v: Any) -> TopologyConfig:
    p = "topology"
    d = _obj(v, p)
    _keys(d, p, {"kind", "k", "leaves", "spines", "hosts_per_leaf", "uplinks", "bw_mbps",
                 "oversub", "degrade"}, {"kind"})
    kind = _str(d, "kind", p, None, TOPOLOGIES)
    bw = _num(d, "bw_mbps", p, 100.0, positive=True)
    more: dict[str, Any] = {"oversub": _num(d, "oversub", p, 1.0, lo=1.0) or 1.0}
    if "degrade" in d:
        dp = _join(p, "degrade")
        dg = _obj(d["degrade"], dp)
        _keys(dg, dp, {"links", "fraction", "seed"}, {"links"})
        more.update(degrade_links=_int(dg, "links", dp, 0, 0, 1 << 16),
                    degrade_fraction=_num(dg, "fraction", dp, 0.25, positive=True) or 0.25,
                    degrade_seed=_int(dg, "seed", dp, 0, 0, 1 << 31))
    if kind == "fattree":
        extra = {"leaves", "spines", "hosts_per_leaf", "uplinks"} & set(d)
        if extra:
            raise ConfigError(_join(p, sorted(extra)[0]), "is a leafspine field, not fattree")
        k = _int(d, "k", p, 4, 2, 16)
        if k % 2:
            raise ConfigError(_join(p, "k"), f"must be even, got {k}")
        t = TopologyConfig(kind=kind, k=k, bw_mbps=bw, **more)
    else:
        if "k" in d:
            raise ConfigError(_join(p, "k"), "is a fattree field, not leafspine")
        t = TopologyConfig(kind=kind, leaves=_int(d, "leaves", p, 4, 1, 250),
                           spines=_int(d, "spines", p, 2, 1, 250),
                           hosts_per_leaf=_int(d, "hosts_per_leaf", p, 2, 1, 250),
                           uplinks=_int(d, "uplinks", p, 1, 1, 16), bw_mbps=bw, **more)
    try:
        t.spec()
    except SpecError as e:
        raise ConfigError(p, str(e)) from None
    return t


def _registry_names() -> tuple[str, ...]:
    return tuple(SCHEMES)


def _scheme(v: Any, path: str) -> SchemeConfig:
    names = _registry_names()
    policy: dict[str, Any] | None = None
    if isinstance(v, str):
        name, params = v, {}
    else:
        d = _obj(v, path)
        _keys(d, path, {"name", "params", "path_policy"}, {"name"})
        name = _str(d, "name", path, None)
        params = _obj(d.get("params", {}), _join(path, "params"))
        if "path_policy" in d:
            pp_path = _join(path, "path_policy")
            pp = d["path_policy"]
            policy = {"policy": pp} if isinstance(pp, str) else dict(_obj(pp, pp_path))
            _keys(policy, pp_path, {"policy", "pin", "spray", "avoid_us", "entropy_set"},
                  {"policy"})
            try:
                SchemeConfig(name, {}, policy).policy_spec()
            except (TypeError, ValueError) as e:
                raise ConfigError(pp_path, str(e)) from None
        path = _join(path, "name")
    if name not in names:
        raise ConfigError(path, f"unknown scheme {name!r}, choose from {', '.join(names)}")
    s = SchemeConfig(name, dict(params), policy)
    try:
        s.build()
    except ImportError:
        pass  # no controller here: the parameters are checked when a run builds the scheme
    except (TypeError, ValueError) as e:
        raise ConfigError(path.removesuffix(".name") + ".params", str(e)) from None
    return s


def _bsp(v: Any, path: str) -> BspConfig:
    d = _obj(v, path)
    _keys(d, path, {"iterations", "compute_us", "stragglers", "straggler_factor",
                    "straggler_prob", "jitter", "lb_bsp"}, {"iterations"})
    strag = _list(d.get("stragglers", []), _join(path, "stragglers"))
    for i, r in enumerate(strag):
        if isinstance(r, bool) or not isinstance(r, int) or r < 0:
            raise ConfigError(f"{path}.stragglers[{i}]", f"{r!r} is not a rank")
    prob = _num(d, "straggler_prob", path, 0.0, lo=0.0)
    if prob is not None and prob > 1:
        raise ConfigError(_join(path, "straggler_prob"), f"must be in [0, 1], got {prob}")
    fac = _num(d, "straggler_factor", path, 2.0, lo=1.0)
    return BspConfig(iterations=_int(d, "iterations", path, 3, 1, 1000),
                     compute_us=_num(d, "compute_us", path, 0.0, lo=0.0) or 0.0,
                     stragglers=tuple(strag), straggler_factor=fac or 2.0,
                     straggler_prob=prob or 0.0, jitter=_num(d, "jitter", path, 0.0, lo=0.0) or 0.0,
                     lb_bsp=_bool(d, "lb_bsp", path, False))


def _failure(v: Any, path: str, spec: FabricSpec) -> FailureConfig:
    d = _obj(v, path)
    _keys(d, path, {"link", "at_s", "restore_s", "notify", "reroute"}, {"link"})
    link = _list(d["link"], _join(path, "link"))
    if len(link) != 2 or not all(isinstance(x, str) for x in link):
        raise ConfigError(_join(path, "link"), f"{link!r} is not two switch names")
    a, b = link
    for i, n in enumerate(link):
        if n not in spec.switches:
            raise ConfigError(f"{path}.link[{i}]", f"{n!r} is not a switch of {spec.name}")
    if not spec.links_between(a, b):
        raise ConfigError(_join(path, "link"), f"no link between {a} and {b} in {spec.name}")
    at = _num(d, "at_s", path, 0.2, lo=0.0) or 0.0
    restore = _num(d, "restore_s", path, None, lo=0.0)
    if restore is not None and restore <= at:
        raise ConfigError(_join(path, "restore_s"), f"must be after at_s ({at}), got {restore}")
    return FailureConfig((a, b), at, restore, _bool(d, "notify", path, False),
                         _bool(d, "reroute", path, True))


def _size(d: dict[str, Any], path: str) -> int:
    v = d["size"]
    if isinstance(v, bool) or not isinstance(v, int | str):
        raise ConfigError(_join(path, "size"), f"{v!r} is not a size")
    try:
        n = parse_size(v)
    except ValueError:
        raise ConfigError(_join(path, "size"), f"{v!r} is not a size "
                          "(use e.g. 4096, 64KiB, 1MB)") from None
    if n < 1:
        raise ConfigError(_join(path, "size"), f"must be >= 1 byte, got {v!r}")
    return n


def _rate(d: dict[str, Any], path: str) -> str | None:
    v = d.get("rate")
    if v is None:
        return None
    from argparse import ArgumentTypeError

    from traffic.run import _rate as parse_rate
    try:
        if parse_rate(str(v)) <= 0:
            raise ValueError
    except (ValueError, ArgumentTypeError):
        raise ConfigError(_join(path, "rate"), f"{v!r} is not a rate (use e.g. 50M, 1G)") \
            from None
    return str(v)


def _workload(v: Any, path: str, spec: FabricSpec) -> WorkloadConfig:
    d = _obj(v, path)
    _keys(d, path, {"name", "schedule", "size", "hosts", "placement", "options", "transport", "rate", "qps",
                    "mss", "window", "rto_ms", "timeout_s", "linger_rtos", "bsp", "failure",
                    "tm"},
          set() if "tm" in d else {"schedule", "size"})
    tm = None
    if "tm" in d:
        tm = _str(d, "tm", path, None)
        for k in ("schedule", "size", "options", "bsp"):
            if k in d:
                raise ConfigError(_join(path, k), "not with tm (the matrix is the workload)")
        try:
            size = sum(f.size for f in read_cm(tm).flows)
        except ScheduleError as e:
            raise ConfigError(_join(path, "tm"), str(e)) from None
        sched = TM_SCHEDULE
    else:
        sched = _str(d, "schedule", path, None, tuple(GENERATORS))
        size = _size(d, path)
    hosts = None
    if "hosts" in d:
        hl = _list(d["hosts"], _join(path, "hosts"))
        for i, h in enumerate(hl):
            if h not in spec.hosts:
                raise ConfigError(f"{path}.hosts[{i}]", f"{h!r} is not a host of {spec.name}")
        if len(set(hl)) != len(hl):
            raise ConfigError(_join(path, "hosts"), "lists a host twice")
        if len(hl) < 2:
            raise ConfigError(_join(path, "hosts"), "a collective needs >= 2 hosts")
        hosts = tuple(hl)
    opts = dict(_obj(d.get("options", {}), _join(path, "options")))
    accepted = set(inspect.signature(GENERATORS[sched]).parameters) - {"ranks", "size"} \
        if tm is None else set()
    for k in opts:
        if k not in accepted or k not in _SCHEDULE_OPTIONS:
            raise ConfigError(f"{path}.options.{k}", f"not an option of {sched} "
                              f"(its options: {', '.join(sorted(accepted)) or 'none'})")
    w = WorkloadConfig(
        name=_str(d, "name", path, sched), schedule=sched, size=size, hosts=hosts,
        placement=_str(d, "placement", path, Placement.BLOCK, tuple(Placement)), options=opts,
        transport=_str(d, "transport", path, "udp", TRANSPORTS), rate=_rate(d, path),
        qps=_int(d, "qps", path, 1, 1, 64), mss=_int(d, "mss", path, 1400, 64, 8900),
        window=_int(d, "window", path, 256, 1, 65536),
        rto_ms=_num(d, "rto_ms", path, 200.0, positive=True) or 200.0,
        timeout_s=_num(d, "timeout_s", path, 60.0, positive=True) or 60.0,
        linger_rtos=_num(d, "linger_rtos", path, None, positive=True),
        bsp=_bsp(d["bsp"], _join(path, "bsp")) if "bsp" in d else None,
        failure=_failure(d["failure"], _join(path, "failure"), spec) if "failure" in d else None,
        tm=tm)
    ranks = len(w.hosts) if w.hosts else len(spec.hosts)
    if w.bsp:
        for i, r in enumerate(w.bsp.stragglers):
            if r >= ranks:
                raise ConfigError(f"{path}.bsp.stragglers[{i}]",
                                  f"rank {r} out of range 0..{ranks - 1}")
    try:
        w.schedule_for(ranks, iterations=1)
    except ScheduleError as e:
        if tm is not None:
            raise ConfigError(_join(path, "tm"), str(e)) from None
        sub = "bsp" if e.field in {"iterations", "compute_us", "jitter"} else "options"
        raise ConfigError(f"{path}.{sub}.{e.field}", str(e).split(": ", 1)[-1]) from None
    except (TypeError, ValueError) as e:
        raise ConfigError(_join(path, "options"), str(e)) from None
    return w


def _fabric(v: Any) -> FabricConfig:
    p = "fabric"
    d = _obj(v, p)
    _keys(d, p, {"link_rate", "prop_delay_us", "mtu", "queue_packets", "flowlet_gap_us",
                 "trim"}, {"link_rate"})
    rate = d["link_rate"]
    try:
        bps = parse_rate(rate)
        if bps <= 0:
            raise ValueError
    except (TypeError, ValueError):
        raise ConfigError(_join(p, "link_rate"), f"{rate!r} is not a rate (use e.g. 100G)") \
            from None
    return FabricConfig(link_rate=format_rate(bps),
                        prop_delay_us=_num(d, "prop_delay_us", p, 1.0, lo=0.0) or 0.0,
                        mtu=_int(d, "mtu", p, 1500, 576, 9216),
                        queue_packets=_int(d, "queue_packets", p, 64, 1, 1 << 20),
                        flowlet_gap_us=_num(d, "flowlet_gap_us", p, None, positive=True),
                        trim=_bool(d, "trim", p, False))


def _transport(v: Any, has_fabric: bool) -> TransportSettings:
    from traffic.congestion import REGISTRY, cc_params

    p = "transport"
    d = _obj(v, p)
    _keys(d, p, {"cc", "params", "min_rto_us", "max_rto_us", "ecn_threshold", "ecn_kmin",
                 "ack_delay_us",
                 "tick_us", "pace_credit_us"})
    cc = _str(d, "cc", p, "dctcp", tuple(REGISTRY))
    params = dict(_obj(d.get("params", {}), _join(p, "params")))
    try:
        cc_params(cc, params)
    except ValueError as e:
        key, _, msg = str(e).partition(": ")
        raise ConfigError(f"{p}.params.{key}" if key in params else f"{p}.params",
                          msg if key in params else str(e)) from None
    lo = _num(d, "min_rto_us", p, FABRIC_TRANSPORT["min_rto_us"] if has_fabric else None,
              positive=True)
    hi = _num(d, "max_rto_us", p, FABRIC_TRANSPORT["max_rto_us"] if has_fabric else None,
              positive=True)
    if lo is not None and hi is not None and hi < lo:
        raise ConfigError(_join(p, "max_rto_us"), f"must be >= min_rto_us ({lo:g}), got {hi:g}")
    k = d.get("ecn_threshold")
    if k is not None:
        k = _int(d, "ecn_threshold", p, 0, 0, 1 << 19)
    kmin = d.get("ecn_kmin")
    if kmin is not None:
        kmin = _int(d, "ecn_kmin", p, 0, 0, (1 << 19) - 1)
        if k == 0:
            raise ConfigError(_join(p, "ecn_kmin"), "a ramp needs marking (ecn_threshold 0 "
                              "turns it off)")
        if k is not None and kmin > k:
            raise ConfigError(_join(p, "ecn_kmin"), f"must be <= ecn_threshold ({k}), got "
                              f"{kmin}")
    timers = {"ack_delay_us": _num(d, "ack_delay_us", p, None, positive=True),
              "tick_us": _num(d, "tick_us", p, None, positive=True),
              "pace_credit_us": _num(d, "pace_credit_us", p, None, lo=0.0)}
    if has_fabric:   # the fabric's defaults fill in what the file leaves out
        return fabric_transport(cc, params, lo, hi, k, ecn_kmin=kmin, **timers)
    return TransportSettings(cc=cc, params=params, min_rto_us=lo, max_rto_us=hi,
                             ecn_threshold=k, ecn_kmin=kmin, **timers)


def _tdf(d: dict[str, Any], p: str) -> float | str:
    v = d.get("tdf", 1.0)
    if v == TDF_AUTO:
        return TDF_AUTO
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 1:
        raise ConfigError(_join(p, "tdf"), f"{v!r} is not a time-dilation factor "
                          f"(a number >= 1, or {TDF_AUTO!r})")
    return float(v)


def in_fabric_units(t: TopologyConfig, schemes: tuple[SchemeConfig, ...],
                    workloads: tuple[WorkloadConfig, ...], f: FabricConfig) \
        -> tuple[TopologyConfig, tuple[SchemeConfig, ...], tuple[WorkloadConfig, ...]]:
    """What the fabric block implies for the other sections: every link at its rate, hosts
    paced at it unless a workload says otherwise, flowlet schemes without a timeout at its
    flowlet gap."""
    t = dataclasses.replace(t, bw_mbps=f.link_bps / 1e6)
    workloads = tuple(w if w.rate else dataclasses.replace(w, rate=f.link_rate)
                      for w in workloads)
    schemes = tuple(dataclasses.replace(s, params=with_flowlet_gap(s.name, s.params,
                                                                   f.flowlet_gap_us))
                    for s in schemes)
    return t, schemes, workloads


def _parameters(v: Any) -> Parameters:
    p = "parameters"
    d = _obj(v, p)
    _keys(d, p, {"target", "sample_period_s", "control_period_s", "loops", "settle_s", "seed",
                 "lock_timeout_s", "start_margin_s", "sim_workers", "sim_ray", "tdf",
                 "socket_buffer", "sim_prop_at_hosts", "sim_start_skew_s",
                 "switch_priority", "wall_budget_s"})
    loops = _list(d.get("loops", list(Parameters.loops)), _join(p, "loops"))
    for i, lp in enumerate(loops):
        if lp not in LOOP_NAMES:
            raise ConfigError(f"{p}.loops[{i}]", f"{lp!r} is not one of "
                              f"{', '.join(LOOP_NAMES)}")
    target = _str(d, "target", p, Target.P4SWITCH.value, TARGET_NAMES)
    return Parameters(target=target,
                      sim_prop_at_hosts=_bool(d, "sim_prop_at_hosts", p,
                                              target == Target.EBPF.value),
                      sample_period_s=_num(d, "sample_period_s", p, 0.25, positive=True) or 0.25,
                      control_period_s=_num(d, "control_period_s", p, 0.5, positive=True) or 0.5,
                      loops=tuple(loops), settle_s=_num(d, "settle_s", p, 0.3, lo=0.0) or 0.0,
                      seed=_int(d, "seed", p, 0, 0),
                      lock_timeout_s=_num(d, "lock_timeout_s", p, 300.0, lo=0.0) or 0.0,
                      start_margin_s=_num(d, "start_margin_s", p, 4.0, lo=0.0) or 0.0,
                      sim_workers=_int(d, "sim_workers", p, 1, 1, 64),
                      sim_ray=_str(d, "sim_ray", p, None) or None if "sim_ray" in d else None,
                      sim_start_skew_s=_num(d, "sim_start_skew_s", p, SIM_START_SKEW_S,
                                            lo=0.0) or 0.0,
                      tdf=_tdf(d, p),
                      socket_buffer=_int(d, "socket_buffer", p, 0, 4096) or None
                      if "socket_buffer" in d else None,
                      switch_priority=_str(d, "switch_priority", p,
                                           SwitchPriority.REALTIME.value,
                                           tuple(x.value for x in SwitchPriority)),
                      wall_budget_s=_num(d, "wall_budget_s", p, None, positive=True))


def concrete_target(name: str, note: Callable[[str], None]) -> str:
    """``name`` with ``auto`` resolved on this machine (model.targets.resolve_auto): the eBPF
    target where it can run, else p4switch, saying why through ``note`` (one line)."""
    from p4switch import ebpf_unavailable_reason

    target, why = resolve_auto(name, ebpf_unavailable_reason() if name == AUTO_TARGET else None)
    if name == AUTO_TARGET:
        note(f"target auto: {target}" + (f" ({why})" if why else
                                          " (the kernel data plane: switches cost no CPU)"))
    return target


def with_target(cfg: ExperimentConfig, target: str) -> ExperimentConfig:
    """``cfg`` on switch target ``target`` (a command line's ``--target``, ``auto`` already
    resolved by :func:`concrete_target`): the simulator's
    side then places the propagation delay as that target does (``sim_prop_at_hosts`` on for
    ebpf). ValueError naming the choices for an unknown target."""
    if target not in TARGET_NAMES:
        raise ValueError(f"--target: {target!r} is not one of "
                         f"{', '.join((*TARGET_NAMES, AUTO_TARGET))}")
    p = cfg.parameters
    # the file as run (config.yaml, experiment.json) names the target the run used
    source = {**cfg.source, "parameters": {**cfg.source.get("parameters", {}), "target": target}}
    return dataclasses.replace(cfg, source=source, parameters=dataclasses.replace(
        p, target=target,
        sim_prop_at_hosts=p.sim_prop_at_hosts or target == Target.EBPF.value))


def from_dict(d: Any) -> ExperimentConfig:
    """Validate a parsed experiment file; raises ConfigError naming the bad field."""
    d = _obj(d, "")
    _keys(d, "", {"name", "description", "backend", "topology", "schemes", "workloads",
                  "parameters", "repetitions", "max_repetitions", "fabric", "transport"},
          {"name", "topology", "schemes", "workloads"})
    name = _str(d, "name", "", None)
    if not name or any(c in name for c in "/\\ ") or name.startswith("."):
        raise ConfigError("name", f"{name!r} must be a non-empty word (it names the results "
                          "directory)")
    topo = _topology(d["topology"])
    spec = topo.spec()
    schemes = tuple(_scheme(s, f"schemes[{i}]")
                    for i, s in enumerate(_list(d["schemes"], "schemes")))
    if not schemes:
        raise ConfigError("schemes", "needs at least one scheme")
    labels = [s.label for s in schemes]
    for i, lb in enumerate(labels):
        if labels.index(lb) != i:
            raise ConfigError(f"schemes[{i}]", f"{lb} is listed twice")
    workloads = tuple(_workload(w, f"workloads[{i}]", spec)
                      for i, w in enumerate(_list(d["workloads"], "workloads")))
    if not workloads:
        raise ConfigError("workloads", "needs at least one workload")
    names = [w.name for w in workloads]
    for i, n in enumerate(names):
        if names.index(n) != i:
            raise ConfigError(f"workloads[{i}].name", f"{n!r} is used twice")
    params = _parameters(d.get("parameters", {}))
    fabric = None
    if "fabric" in d:
        if "bw_mbps" in _obj(d["topology"], "topology"):
            raise ConfigError("topology.bw_mbps", "the fabric block states the link rate "
                              "(fabric.link_rate); leave bw_mbps out")
        fabric = _fabric(d["fabric"])
        topo, schemes, workloads = in_fabric_units(topo, schemes, workloads, fabric)
        given = d.get("parameters", {})
        defaults: dict[str, Any] = {k: v for k, v in FABRIC_DEFAULTS.items()
                                    if hasattr(params, k) and k not in given}
        params = dataclasses.replace(params, **defaults)
        raw = d["workloads"]
        workloads = tuple(w if "rto_ms" in raw[i] else
                          dataclasses.replace(w, rto_ms=FABRIC_DEFAULTS["rto_ms"])
                          for i, w in enumerate(workloads))
    elif params.tdf != 1.0:
        raise ConfigError("parameters.tdf", "time dilation needs a fabric block (the file's "
                          "times are otherwise the emulation's own)")
    backend = _str(d, "backend", "", "mininet", BACKENDS)
    if fabric is not None and fabric.trim and backend != "sim" \
            and params.target != Target.P4SWITCH:
        raise ConfigError("fabric.trim", f"target {params.target} does not trim packets "
                          "(BMv2 and the eBPF target's qdiscs tail-drop): use target p4switch")
    for i, w in enumerate(workloads):
        if w.tm is not None and read_cm(w.tm).failures:
            if backend != "sim" or topo.kind != "fattree":
                raise ConfigError(f"workloads[{i}].tm", "a matrix with failures runs on the "
                                  "sim backend and a fat tree only")
            try:
                failed_links(read_cm(w.tm).failures, topo.k)
            except ValueError as e:
                raise ConfigError(f"workloads[{i}].tm", str(e)) from None
    return ExperimentConfig(
        name=name, topology=topo, schemes=schemes, workloads=workloads,
        parameters=params, fabric=fabric,
        transport=_transport(d.get("transport", {}), fabric is not None),
        repetitions=_int(d, "repetitions", "", 1, 1, 1000),
        max_repetitions=_int(d, "max_repetitions", "", 1, _int(d, "repetitions", "", 1, 1, 1000),
                             1000) if "max_repetitions" in d else None,
        backend=backend,
        description=_str(d, "description", "", ""), source=d)


def load(path: str | Path) -> ExperimentConfig:
    """Read and validate an experiment YAML file. Errors: ``FILE: field: message``."""
    path = Path(path)
    try:
        d = yaml.safe_load(path.read_text())
    except OSError as e:
        raise ConfigError("", f"{path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError("", f"{where}: not valid YAML: {getattr(e, 'problem', e)}") from None
    try:
        return from_dict(d)
    except ConfigError as e:
        e.args = (f"{path}: {e}",)
        raise
