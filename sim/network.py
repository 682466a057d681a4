"""A FabricSpec as a simulated network: switches running fabric.p4, hosts, links, one clock.

The fabric is programmed exactly as the emulated one: ``model.routing.
compute_fabric_entries`` computes the entries, ``model.pipeline_target.install_on_pipeline``
writes them into each switch's Pipeline. The program is compiled and its pipeline code generated once per process
(``pipeline_template``); every switch gets its own Pipeline instance of that code (its own
tables, registers, counters). A link failure at time t
cuts the link then, and — like the controller's failure loop, ``reroute_after_us`` later — the
entries are recomputed without it and the difference is applied to every switch.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import random
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from model.entries import diff_entries
from model.paths import PathModel
from model.pipeline_target import apply_diff_on_pipeline, install_on_pipeline
from model.routing import EcnThreshold, compute_fabric_entries
from model.schemes import DEFAULT_SCHEME
from model.spec import CPU_PORT, FabricSpec
from p4switch import DEFAULT_QUEUE_DEPTH, Pipeline, Program
from traffic.schedules import Schedule

from .events import EventLoop
from .frames import ACK_AT
from .host import HostConfig, Job, SimHost
from .link import Link
from .parallel import SplitOutcome, run_split
from .results import Progress, SimResult
from .switch import SimSwitch, choose_pipeline

if TYPE_CHECKING:
    from controller.loops import ControlLoops, WamPolicy

FABRIC_P4 = Path(__file__).resolve().parents[1] / "p4src" / "fabric.p4"
DROP_PORT = 511
_HOST_ROOT = 1 << 40      # event keys of what a host schedules when it starts (sim.events)
_FAILURE_ROOT = 2 << 40   # and of a scheduled link failure
_LOOPS_ROOT = 3 << 40     # and of the control loops' ticks


@functools.cache
def fabric_program(path: str = str(FABRIC_P4)) -> Program:
    """The P4 program compiled by p4switch's front end, once per process."""
    from p4switch import compile_file

    return compile_file(path)


_TEMPLATES: dict[int, tuple[Program, Pipeline]] = {}


def pipeline_template(program: Program) -> Pipeline:
    """One generated-and-compiled Pipeline per program and process, never programmed: every
    simulated switch is ``new_instance`` of it (its own state, the shared code), so a k=16
    fabric's 320 switches cost one code generation, not 320."""
    hit = _TEMPLATES.get(id(program))
    if hit is None or hit[0] is not program:
        hit = _TEMPLATES[id(program)] = (
            program, Pipeline(program, drop_port=DROP_PORT, cpu_port=CPU_PORT))
    return hit[1]


class RoutePorts:
    """The ports a packet may leave one fabric.p4 switch on, from its installed entries: the
    longest-prefix ``ipv4_lpm`` route's ``set_nhop`` port, every ``lb_member`` port of its
    ``set_lb_group`` group, none for a drop or CPU route. Cached per destination address.
    ``ports(frame)`` is None for what it cannot tell (not IPv4).

    Each route is kept resolved, as (mask, prefix, ports); ``shared`` (one dict for every
    switch of a network) makes equal ones one tuple: a k=16 fabric's switches hold 41k routes
    and far fewer distinct ones."""

    def __init__(self, entries: Iterable[Any],
                 shared: dict[tuple[int, int, tuple[int, ...]],
                              tuple[int, int, tuple[int, ...]]] | None = None) -> None:
        routes = []
        members: dict[int, set[int]] = {}
        for e in entries:
            if e.table == "MyIngress.ipv4_lpm":
                m = e.match_dict["hdr.ipv4.dstAddr"]
                routes.append((m.prefix_len, m.value, e.action, e.params_dict))
            elif e.table == "MyIngress.lb_member":
                members.setdefault(e.match_dict["meta.lb.group_id"].value, set()).add(
                    e.params_dict["port"])
        routes.sort(key=lambda r: -r[0])
        groups = {g: tuple(sorted(p)) for g, p in members.items()}
        same = {} if shared is None else shared
        self._routes: list[tuple[int, int, tuple[int, ...]]] = []
        for plen, value, action, params in routes:
            mask = ((1 << plen) - 1) << (32 - plen) if plen else 0
            if action == "MyIngress.set_nhop":
                ports: tuple[int, ...] = (params["port"],)
            elif action == "MyIngress.set_lb_group":
                ports = groups.get(params["group_id"], ())
            else:
                ports = ()
            r = (mask, value & mask, ports)
            self._routes.append(same.setdefault(r, r))
        self._cache: dict[bytes, tuple[int, ...]] = {}

    def _lookup(self, dst: int) -> tuple[int, ...]:
        for mask, prefix, ports in self._routes:
            if dst & mask == prefix:
                return ports
        return ()

    def ports(self, frame: bytes) -> tuple[int, ...] | None:
        if frame[12:14] != b"\x08\x00" or len(frame) < 34:
            return None
        key = frame[30:34]
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._lookup(int.from_bytes(key, "big"))
        return hit


TRIM_BYTES = ACK_AT
"""What a trimmed packet keeps: Ethernet, IPv4, UDP and the collective header (the sequence
number the receiver NACKs), as UEC switches keep a packet's headers."""


@dataclass(frozen=True)
class LinkFailure:
    """Link(s) between ``a`` and ``b`` go down at ``at_us``; the fabric routes around them
    ``reroute_after_us`` later (None: never — the data plane alone must cope)."""

    a: str
    b: str
    at_us: float
    reroute_after_us: float | None = 1000.0


@dataclass
class SimConfig:
    """Everything but topology, scheme and workload. ``rate_bps`` overrides every link's
    ``bw_mbps`` (None: use the spec; a spec link without a rate is then unlimited)."""

    rate_bps: float | None = None
    prop_delay_us: float = 1.0
    queue_depth: int = DEFAULT_QUEUE_DEPTH
    ecn_threshold: EcnThreshold = 20
    """Packets (a step), a (K_min, K_max) ramp, or a function of a port's rate to either
    (model.routing.EcnThreshold, EcnRamp)."""
    host: HostConfig = field(default_factory=HostConfig)
    fast_path: bool = True
    seed: int = 0
    record_ingress: bool = False
    """Keep every (switch, time, port, frame) arriving at a switch: for fidelity tests."""
    trim: bool = False
    """Packet trimming at every switch queue (p4switch.queues; UEC's, off as in v1model): a
    full queue cuts a data packet to its headers and forwards it first; the receiver NACKs it
    and the sender resends it at once."""
    workers: int = 1
    """Processes to split each run over (sim.parallel; results are the same for any number):
    2 on a 2-core machine halves a big run's time; 1 for many small runs side by side."""
    ray_address: str | None = None
    """With ``workers`` > 1: run the parts other than the first as Ray tasks on the cluster at
    this address ("local": a Ray started here) instead of forked processes (sim.rayparts),
    so that one run spans machines; the results are the same."""
    prop_at_hosts: bool = False
    """Add the propagation delay where the eBPF emulation can (no netem in its kernel): at
    the receiving host, the path's links × ``prop_delay_us`` (the fabric's shortest path
    between the two hosts, as traffic.delayline counts it), and none on the links. The
    frames then reach every queue on their path earlier than on a fabric with delay on each
    link; this models the same placement as the emulation, so the two compare. One process
    only (a split run's lookahead is the links' delay)."""
    start_skew_us: float = 0.0
    """The hosts' start skew: each host starts its ranks at an offset drawn uniformly from
    [0, start_skew_us) by ``seed`` and the host's name (:func:`start_offset_us`), as real
    hosts (and the emulation's agents) never start a collective at the same instant. 0: every
    host at time 0. Why it matters: with every host at 0 the event order is the same in every
    run, and flows that share a link split it the same way each time — ECMP's collided ring
    flows took 271.2 µs in every repetition of the demo, while hosts started ~0.01-1 µs
    apart give 223-301 µs, 248-261 µs on average (docs/sim.md, "Hosts' start skew")."""
    pipeline: str = "native"
    """Which code executes the P4 program per hop: "native" (the program compiled to C,
    p4switch.native, built once per machine; falls back to Python with one line on stderr
    where the program or the machine cannot) or "python" (the pipeline's generated Python).
    The results are the same (tests/pipeline/test_native.py, the golden fingerprints)."""
    core: str = "c"
    """What runs the event loop, the wires, the queues and the switch hop: "c" (sim.core:
    compiled with the native pipeline, no Python between hops; where a switch runs the
    Python pipeline, or no compiler is at hand, the Python path runs instead) or "python"
    (sim.events, sim.link, sim.switch). The results are the same (tests/sim/test_core.py)."""
    host_path: str = "c"
    """What runs the hosts' per-packet transport on the C core: "c" (sim.hostc: a data
    frame in and its ACK out, an ACK in and the next data frame out, without Python; where
    the transport or path policy is one it does not run, the Python hosts) or "python"
    (sim.host with traffic.transport). The results are the same (tests/sim/test_hostc.py)."""


def start_offset_us(seed: int, host: str, skew_us: float) -> float:
    """When ``host`` starts its ranks (SimConfig.start_skew_us): uniform in [0, skew_us),
    drawn from ``seed`` and the host's name alone, so the same in one process or split over
    several and whatever other hosts the job has."""
    if not skew_us >= 0:
        raise ValueError(f"start skew {skew_us!r} µs: must be >= 0")
    if skew_us == 0:
        return 0.0
    return random.Random(f"start-skew:{seed}:{host}").random() * skew_us


@dataclass(frozen=True)
class PartRecipe:
    """What a part of a split run on another machine (sim.rayparts) needs to build its own
    copy of a network and its job: calling it does (a picklable call)."""

    spec: FabricSpec
    scheme: Any
    cfg: SimConfig
    program: Program | None
    schedule: Schedule
    failures: list[LinkFailure]

    def __call__(self) -> tuple[SimNetwork, Job]:
        net = SimNetwork(self.spec, self.scheme,
                         dataclasses.replace(self.cfg, workers=1, ray_address=None),
                         self.program)
        return net, net.prepare(self.schedule, self.failures, core=False)


class SimNetwork:
    """Build with a spec and a scheme (name or model.schemes.Scheme), then ``run``."""

    def __init__(self, spec: FabricSpec, scheme: Any = DEFAULT_SCHEME, config: SimConfig | None = None,
                 program: Program | None = None) -> None:
        self.spec = spec
        self.scheme = scheme
        self.cfg = config or SimConfig()
        self.loop = EventLoop()
        t0 = time.perf_counter()
        self._program = program
        prog = program or fabric_program()
        self._program_is_fabric = program is None
        self.switches: dict[str, SimSwitch] = {}
        template = pipeline_template(prog)
        for name, sw in spec.switches.items():
            pipe = choose_pipeline(template.new_instance(seed=self.cfg.seed * 100_003
                                                         + sw.device_id), self.cfg.pipeline)
            self.switches[name] = SimSwitch(name, pipe, self.loop, self.cfg.queue_depth,
                                            self.cfg.fast_path,
                                            trim_bytes=TRIM_BYTES if self.cfg.trim else None)
        self.build_s = time.perf_counter() - t0
        self.hosts: dict[str, SimHost] = {n: SimHost(h, self.loop) for n, h in spec.hosts.items()}
        self.ingress_log: list[tuple[str, float, int, bytes]] = []
        if self.cfg.record_ingress:
            for ssw in self.switches.values():
                ssw.receive = self._recorder(ssw)  # type: ignore[method-assign]  # records, then receives
        self.links: list[tuple[Link, Link]] = []
        link_prop = 0.0 if self.cfg.prop_at_hosts else self.cfg.prop_delay_us
        if self.cfg.prop_at_hosts and self.cfg.prop_delay_us > 0:
            from traffic.delayline import path_links

            ips = {h.ip: n for n, h in spec.hosts.items()}
            for n, host in self.hosts.items():
                host.hold_us = {socket.inet_aton(ip): links * self.cfg.prop_delay_us
                                for ip, links in path_links(spec, host.ip).items()
                                if ips[ip] != n}
        for lk in spec.links:
            rate = self.cfg.rate_bps or (lk.bw_mbps * 1e6 if lk.bw_mbps else None)
            ab = Link(lk.a, lk.a_port, lk.b, lk.b_port, rate, link_prop)
            ba = Link(lk.b, lk.b_port, lk.a, lk.a_port, rate, link_prop)
            self._attach(ab)
            self._attach(ba)
            self.links.append((ab, ba))
        t0 = time.perf_counter()
        self._failed: set[frozenset[str]] = set()
        self.detected_failed: frozenset[int] = frozenset()
        """Links the control loops' failure loop routes around (indexes into spec.links)."""
        self.weights: dict[tuple[str, int], dict[int, float]] = {}
        """Member weights of LB groups, as Whack-a-Mole's loop set them."""
        self.entries = compute_fabric_entries(spec, scheme, ecn_threshold=self.cfg.ecn_threshold)
        self._install_all()
        self.install_s = time.perf_counter() - t0
        self.events: list[tuple[float, str]] = []
        self.control_events: list[tuple[float, str, str | None, str]] = []
        """What the control loops did: (virtual µs, loop, switch, what)."""
        self.loops: ControlLoops | None = None
        """The controller's loops ticking in virtual time (``start_loops``)."""
        self._loop_period_us = 0.0
        self._host_index = {n: i for i, n in enumerate(self.hosts)}
        self._failures = 0
        self.split: SplitOutcome | None = None
        """How the last run went, if it was split over processes."""

    def _recorder(self, sw: SimSwitch) -> Any:
        inner = sw.receive
        log = self.ingress_log

        def receive(now: float, arg: tuple[int, bytes]) -> None:
            log.append((sw.name, now, arg[0], arg[1]))
            inner(now, arg)

        return receive

    def _node_receive(self, name: str) -> Any:
        sw = self.switches.get(name)
        return sw.receive if sw is not None else self.hosts[name].receive

    def _attach(self, link: Link) -> None:
        peer = self._node_receive(link.dst)
        if link.src in self.switches:
            self.switches[link.src].connect(link.src_port, link, peer, link.dst_port)
        else:
            self.hosts[link.src].connect(link, peer, link.dst_port)

    def _install_all(self) -> None:
        for name, sw in self.switches.items():
            install_on_pipeline(sw.pipe, self.entries[name])
        self._set_oracles()

    def _set_oracles(self) -> None:
        """Give each switch the egress-port candidates of its routes (for the fast path);
        only for the controller's fabric.p4 contract, whose tables they are read from."""
        if self._program_is_fabric:
            shared: dict[Any, Any] = {}
            for name, sw in self.switches.items():
                sw.port_oracle = RoutePorts(self.entries[name].entries, shared).ports
        set_routes = getattr(self.loop, "set_routes", None)
        if set_routes is not None:  # the C core reads them (sim.core)
            set_routes()

    # -- failures ---------------------------------------------------------------------------
    def fail_link(self, failure: LinkFailure) -> None:
        """Schedule a failure (call before or during ``run``)."""
        with self.loop.root(_FAILURE_ROOT + self._failures):
            self.loop.schedule(failure.at_us, self._cut, failure)
        self._failures += 1

    def _links_between(self, a: str, b: str) -> list[Link]:
        return [d for pair in self.links for d in pair if {d.src, d.dst} == {a, b}]

    def _cut(self, now: float, f: LinkFailure) -> None:
        found = self._links_between(f.a, f.b)
        if not found:
            raise KeyError(f"no link {f.a}-{f.b} in {self.spec.name}")
        for d in found:
            d.fail(now)
        self.events.append((now, f"link {f.a}-{f.b} down"))
        if f.reroute_after_us is not None:
            self.loop.schedule(now + f.reroute_after_us, self._reroute, frozenset((f.a, f.b)))

    def _reroute(self, now: float, pair: frozenset[str]) -> None:
        self._failed.add(pair)
        changed = self.reprogram()
        self.events.append((now, f"rerouted around {'-'.join(sorted(pair))}: "
                                 f"{changed} entries changed"))

    def reprogram(self, loop: str = "", why: str = "") -> int:
        """Recompute every switch's entries (failed links, weights) and apply the difference
        to the pipelines, as the controller writes its diff; returns the entries changed."""
        new = compute_fabric_entries(self.spec, self.scheme,
                                     [*self._failed, *self.detected_failed],
                                     weights=self.weights, ecn_threshold=self.cfg.ecn_threshold)
        changed = 0
        for name, sw in self.switches.items():
            d = diff_entries(self.entries[name].entries, new[name].entries)
            changed += apply_diff_on_pipeline(sw.pipe, d)
        self.entries = new
        self._set_oracles()
        if loop:
            self.control_events.append((self.loop.now, loop, None,
                                        f"{why}: {changed} entries changed"))
        return changed

    # -- control loops ----------------------------------------------------------------------
    def start_loops(self, names: Iterable[str], period_us: float, miss_periods: int = 2,
                    policy: WamPolicy | None = None) -> None:
        """Run the controller's control loops ``names`` (controller.loops) every
        ``period_us`` of virtual time from ``period_us`` on, over this network's pipelines
        (sim.control); call before ``run``. Without loops nothing is scheduled: results are
        those of a fabric whose controller only installed it."""
        from .control import make_loops

        if period_us <= 0:
            raise ValueError(f"the control period must be > 0 µs, not {period_us}")
        loops = make_loops(self, list(names), miss_periods, policy)
        if not loops.active:
            return
        self.loops, self._loop_period_us = loops, period_us
        with self.loop.root(_LOOPS_ROOT):
            self.loop.schedule(period_us, self._tick)

    def _tick(self, now: float, _: Any) -> None:
        assert self.loops is not None
        self.loops.tick()
        if len(self.loop):  # something else will still happen: the loops go on
            self.loop.schedule(now + self._loop_period_us, self._tick)

    # -- running ----------------------------------------------------------------------------
    def sync(self) -> None:
        """Bring the queues' statistics and the links' counters up to date (the C core keeps
        them in C while it runs; sim.core). Results call it; nothing to do on the Python path."""
        sync = getattr(self.loop, "sync", None)
        if sync is not None:
            sync()

    def progress(self, flows_total: int, wall_s: float) -> Progress:
        return Progress(
            now_us=self.loop.now, events=self.loop.events_run,
            packet_hops=sum(s.packets_in for s in self.switches.values()),
            flows_done=sum(h.flows_done for h in self.hosts.values()),
            flows_total=flows_total, wall_s=wall_s)

    def place(self, schedule: Schedule) -> list[SimHost]:
        """Rank -> host: the schedule's placement, else rank r on the r-th host of the spec."""
        names = schedule.placement or list(self.spec.hosts)[:schedule.ranks]
        if len(names) < schedule.ranks:
            raise ValueError(f"{schedule.ranks} ranks but only {len(self.spec.hosts)} hosts "
                             f"in {self.spec.name} (give the schedule a placement)")
        try:
            return [self.hosts[n] for n in names]
        except KeyError as e:
            raise ValueError(f"placement names unknown host {e.args[0]!r}") from None

    def start_hosts(self, hosts: Iterable[SimHost]) -> None:
        """Start ``hosts``' ranks at time 0 (or at their start offset: ``start_skew_us``),
        each under its own root key, so a host's events are keyed alike whether or not the
        others start in this process."""
        for h in hosts:
            with self.loop.root(_HOST_ROOT + self._host_index[h.name]):
                h.start(0.0, start_offset_us(self.cfg.seed, h.name, self.cfg.start_skew_us))

    def engage_core(self) -> None:
        """Run on the C core from here on where the config asks for it (sim.core)."""
        if self.cfg.core == "c":
            from .core import engage

            engage(self)

    def prepare(self, schedule: Schedule, failures: Iterable[LinkFailure] = (),
                core: bool = True) -> Job:
        """``schedule``'s job on this network: its ranks placed on their hosts, ``failures``
        scheduled, the end a propagation delay after its last rank (what ``run`` sets up; a
        part of a split run on another machine sets up its own copy the same way).
        ``core=False``: not on the C core yet (a split run's parts engage it themselves, once
        they hold only their own switches: sim.parallel)."""
        if self.cfg.core not in ("c", "python"):
            raise ValueError(f"core {self.cfg.core!r}: 'c' or 'python'")
        if self.cfg.host_path not in ("c", "python"):
            raise ValueError(f"host_path {self.cfg.host_path!r}: 'c' or 'python'")
        if core:
            self.engage_core()
        rank_hosts = self.place(schedule)
        job = Job(schedule, rank_hosts, self.cfg.host)
        if self.cfg.host.path_policy.pin:  # hosts pin split subflows with the fabric's hashes
            job.path_model = PathModel(self.spec, self.scheme)
        for r, h in enumerate(rank_hosts):
            h.add_rank(r, job)
        for f in failures:
            self.fail_link(f)
        grace = self.cfg.prop_delay_us
        self.loop.horizon = float("inf")  # a previous run's end
        job.on_done = lambda now: self.loop.stop_before(now + grace)
        return job

    def run(self, schedule: Schedule, until_us: float = 10e6,
            failures: Iterable[LinkFailure] = (),
            progress: Callable[[Progress], None] | None = None,
            progress_every: int = 1 << 17) -> SimResult:
        """Run one job to completion (or ``until_us`` of virtual time). ``progress`` is
        called every ``progress_every`` events and once at the end (a k=16 AllToAll runs for
        minutes; ``python -m sim`` draws a bar with it); it cannot change results. The run
        ends a propagation delay after the last rank finished (what a split run can tell
        apart), or at ``until_us``. With ``config.workers`` > 1 it is split over that many
        processes (sim.parallel), with the same results."""
        failures = list(failures)
        self.place(schedule)  # a bad placement fails before anything is set up
        workers = self.cfg.workers
        if workers < 1:
            raise ValueError(f"workers must be >= 1, not {workers}")
        if workers > 1 and self.cfg.prop_at_hosts:
            raise ValueError("a run with the propagation delay at the hosts cannot be split "
                             "over processes (workers must be 1)")
        if workers > 1 and self.loops is not None:
            raise ValueError("control loops read and write every switch each period: a run "
                             "with loops cannot be split over processes (workers must be 1)")
        # The fabric built so far (pipelines, entries, hosts: ~900k objects at k=16) lives
        # until the run ends; frozen, the cyclic GC's full collections skip it instead of
        # walking it again and again (measured at k=16: GC 14 % of the run's CPU -> 5 %).
        # From here to the results the cyclic GC is off altogether: a run allocates its
        # flows' state as it goes (a million flows in a k=16 AllToAll), every object of it
        # lives to the end, and the collector walked them again and again — 44 of 120 CPU
        # seconds in the first 9 µs of such a run. The hot path makes no reference cycles
        # (frames, event tuples, per-flow records), so reference counting frees its
        # garbage; what a cycle might hold is collected after the run. Results cannot
        # change: nothing here relies on when garbage is collected.
        freeze = gc.isenabled() and not gc.get_freeze_count()
        if freeze:
            gc.freeze()
        enabled = gc.isenabled()
        gc.disable()
        try:
            job = self.prepare(schedule, failures, core=workers == 1)
            rank_hosts = job.rank_hosts
            t0 = time.perf_counter()
            self.split = None
            if workers > 1:
                recipe = None
                if self.cfg.ray_address:  # the other parts build their own copy with this
                    recipe = PartRecipe(self.spec, self.scheme, self.cfg, self._program,
                                        schedule, failures)
                self.split = out = run_split(self, job, workers, until_us, progress,
                                             job.network_flows(), progress_every,
                                             recipe=recipe)
                return SimResult.collect(self, job, out.end_us, time.perf_counter() - t0,
                                         ranks=out.ranks, events=out.events)
            self.start_hosts(dict.fromkeys(rank_hosts))
            if progress is None:
                end = self.loop.run(until=until_us)
            else:
                total = job.network_flows()
                while True:
                    end = self.loop.run(until=until_us, max_events=progress_every)
                    progress(self.progress(total, time.perf_counter() - t0))
                    if self.loop.done:
                        break
            wall = time.perf_counter() - t0
            # collected with the GC still off: two records per flow, all kept
            return SimResult.collect(self, job, end, wall)
        finally:
            if enabled:
                gc.enable()
            if freeze:
                gc.unfreeze()
