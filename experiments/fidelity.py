"""The fidelity experiment: the same k=4 runs on the Mininet fabric and in the simulator,
compared — LB member counters (replayed and first-transmission), CCTs and the schemes' ranking
(docs/sim.md, "Fidelity"). ``python -m experiments.fidelity --vs-mininet`` (root).

The simulator's own check against the reference models (its recorded ingress replayed through
model/lb.py) is sim/refcheck.py.
"""

from __future__ import annotations

import math
import statistics
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pandas as pd

from model.schemes import scheme_class
from sim.results import member_counters

# ---- the same run on the Mininet fabric -----------------------------------------------------
#
# What is comparable, and why (docs/sim.md, "Fidelity"): for ECMP, destination rotation and
# Whack-a-Mole the member counters are functions of the frames the hosts put on the fabric,
# not of their timing — ECMP of each 5-tuple's packet count, rotation of each (switch, dst_id)'s
# count (one rot_next cell per destination), Whack-a-Mole of each group's count (one j
# counter). So (1) replaying the frames the Mininet hosts sent (captured on their interfaces)
# through the simulator's pipelines must give Mininet's counters exactly (for Whack-a-Mole only
# at the first hop: which packets a first-hop WaM group sends up each uplink depends on the
# interleaving of destinations, and that decides the counts of the groups behind it), and (2)
# the first transmissions of data packets are the same frames in both runs (same schedule,
# placement, transport, entropy). Everything else the Mininet hosts send is timing: the start
# barrier's READY beacons (every 5 ms until each peer answered), ACKs coalesced by a 0.5 ms
# timer as well as every 8 packets, retransmissions after timeouts on the loaded machine. The
# simulator has no barrier and its own ACK clock, so raw counters differ by those packets.



def _peers(spec: Any) -> dict[tuple[str, int], tuple[str, int]]:
    out: dict[tuple[str, int], tuple[str, int]] = {}
    for lk in spec.links:
        out[(lk.a, lk.a_port)] = (lk.b, lk.b_port)
        out[(lk.b, lk.b_port)] = (lk.a, lk.a_port)
    return out


def host_attachment(spec: Any) -> dict[str, tuple[str, int]]:
    """host -> (switch, switch port) its link ends on."""
    peers = _peers(spec)
    return {h: peers[(h, 0)] for h in spec.hosts}


def replay_counters(spec: Any, scheme: Any, frames: Iterable[tuple[str, bytes]]
                    ) -> pd.DataFrame:
    """Member counters of a fresh simulated fabric after forwarding ``frames`` (host, bytes as
    the host put them on its link), one at a time, hop by hop through the switches' pipelines
    (``Pipeline.process``: empty queues, so no ECN marks; LB choice happens in ingress)."""
    from sim.network import SimConfig, SimNetwork

    net = SimNetwork(spec, scheme, SimConfig(fast_path=False))
    peers = _peers(spec)
    attach = host_attachment(spec)
    for host, frame in frames:
        todo = [(*attach[host], frame)]
        hops = 0
        while todo and hops < 64:
            node, port, data = todo.pop()
            if node not in net.switches:
                continue  # reached a host
            hops += 1
            sw = net.switches[node]
            res = sw.pipe.process(data, port, int(sw.uptime_us))
            for o in res.outputs:
                if (node, o.port) in peers:
                    todo.append((*peers[(node, o.port)], o.data))
    return member_counters(net)


def collective_flags(frame: bytes) -> int | None:
    """The collective header's flags byte of a p4fabric UDP frame (None: not one)."""
    if len(frame) < 44 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return None
    ihl = (frame[14] & 0x0F) * 4
    off = 14 + ihl + 8
    if len(frame) < off + 2 or int.from_bytes(frame[14 + ihl + 2:14 + ihl + 4], "big") != 4791:
        return None
    return frame[off + 1]


def first_data(frames: Iterable[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """Data packets' first transmissions (no ACK, READY or RETX flag)."""
    from traffic.packet import F_ACK, F_READY, F_RETX

    out = []
    for h, f in frames:
        fl = collective_flags(f)
        if fl is not None and not fl & (F_ACK | F_READY | F_RETX):
            out.append((h, f))
    return out


class HostCapture:
    """tcpdump on every host's interface, outgoing IPv4 only, pcap to a pipe we read: the
    exact frames each host put on the fabric (the agents' AF_PACKET data frames included)."""

    def __init__(self, net: Any, hosts: list[str], workdir: Path) -> None:
        self.net, self.hosts, self.dir = net, hosts, workdir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.files: dict[str, tuple[IO[bytes], IO[bytes]]] = {}

    def __enter__(self) -> HostCapture:
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            for h in self.hosts:
                node = self.net.get(h)
                out = (self.dir / f"{h}.pcap").open("wb")
                err = (self.dir / f"{h}.tcpdump.log").open("wb")
                self.files[h] = (out, err)
                self.procs[h] = node.popen(
                    ["tcpdump", "-i", node.defaultIntf().name, "-Q", "out", "-n", "-U",
                     "-B", "8192", "-w", "-", "ip"],
                    stdout=out, stderr=err, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + 60
            for h in self.hosts:  # wait until each one listens (loaded machine: seconds)
                log = self.dir / f"{h}.tcpdump.log"
                while b"listening on" not in log.read_bytes():
                    if self.procs[h].poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"tcpdump on {h} did not start: "
                                           f"{log.read_text(errors='replace').strip()}")
                    time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def drain(self, quiet_s: float = 1.5, bound_s: float = 10.0) -> None:
        """Wait until no pcap grew for ``quiet_s`` (at most ``bound_s``): tcpdump may still be
        reading the run's last frames from its kernel buffer, and SIGINT loses what it has
        not read without counting it as dropped (the agents leave the moment they finish).
        1.5 s, not 0.5: a CI run at 0874e3c had the switches count 40 frames more than the
        ECMP replay of the capture (tests/experiments/test_sim_vs_mininet.py, 16 tcpdumps on
        2 cores; it passed in 3 other CI runs and 5 local ones). The likeliest cause found:
        since 78fb92e a run reads every switch's counters once less at its end, so the capture
        stops ~0.3 s sooner after the last frames, with less time for tcpdump to read them."""
        sizes: dict[str, int] = {}
        quiet_since = t0 = time.monotonic()
        while time.monotonic() - t0 < bound_s:
            now = {h: (self.dir / f"{h}.pcap").stat().st_size for h in self.procs}
            if now != sizes:
                sizes, quiet_since = now, time.monotonic()
            elif time.monotonic() - quiet_since >= quiet_s:
                return
            time.sleep(0.05)

    def stop(self) -> None:
        import signal

        if self.procs:
            self.drain()
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in self.procs.values():
            try:
                p.wait(30)
            except Exception:  # noqa: BLE001 - never leave one behind
                p.kill()
                p.wait(5)
        for out, err in self.files.values():
            out.close()
            err.close()
        self.procs.clear()
        self.files.clear()

    def dropped(self) -> int:
        """Packets tcpdump reported lost (kernel or interface): must be 0 for a replay."""
        import re

        n = 0
        for h in self.hosts:
            text = (self.dir / f"{h}.tcpdump.log").read_text(errors="replace")
            n += sum(int(x) for x in re.findall(r"(\d+) packets dropped by (?:kernel|interface)",
                                                text))
        return n

    def frames(self) -> list[tuple[str, bytes]]:
        """(host, frame) of every captured frame, in capture-time order across hosts."""
        from scapy.utils import RawPcapReader

        rows = []
        for h in self.hosts:
            p = self.dir / f"{h}.pcap"
            if p.stat().st_size == 0:
                continue
            for data, meta in RawPcapReader(str(p)):
                if len(data) < meta.wirelen:
                    raise ValueError(f"{p}: a frame was truncated by the snap length")
                rows.append((meta.sec + meta.usec * 1e-6, h, bytes(data)))
        rows.sort(key=lambda r: r[0])
        return [(h, f) for _t, h, f in rows]


@dataclass
class SideRun:
    """One scheme's run on one side: CCT, member counters, the frames the hosts sent."""

    cct_s: float | None
    ok: bool
    counters: pd.DataFrame
    frames: list[tuple[str, bytes]]
    retransmissions: int = 0
    notes: list[str] = field(default_factory=list)


def agent_transport(w: Any) -> Any:
    """The TransportConfig the Mininet agents run for workload ``w`` (traffic.run's flags)."""
    from traffic.transport import TransportConfig

    return TransportConfig(mss=w.mss, window=w.window, rto=w.rto_ms / 1000.0, min_rto=0.02,
                           max_rto=2.0)   # traffic.run's --min-rto-ms / --max-rto-ms defaults


def run_sim_side(cfg: Any, w: Any, scheme: Any, seed: int | None = None) -> SideRun:
    """The run in virtual time with the agents' transport (ACK every 8 or after 0.5 ms, the
    workload's RTO), ECN off (not-ECT frames, byte for byte the agents'), the same schedule and
    placement. ``seed`` (default the config's) seeds the switches' random streams only: a
    repetition with another seed changes what random spraying does, nothing else."""
    from sim.host import HostConfig
    from sim.network import SimConfig, SimNetwork

    spec = cfg.spec()
    hosts = cfg.hosts_of(w, spec)
    sched = w.schedule_for(len(hosts), seed=cfg.parameters.seed)
    sched.placement = list(hosts)
    hc = HostConfig(transport=agent_transport(w), qps=w.qps, path_policy=scheme.policy_spec())
    seed = cfg.parameters.seed if seed is None else seed
    net = SimNetwork(spec, scheme.build(), SimConfig(host=hc, seed=seed, record_ingress=True))
    res = net.run(sched, until_us=w.timeout_s * 1e6)
    attach = {v: k for k, v in host_attachment(spec).items()}
    sent = [(attach[(sw, port)], f) for sw, _t, port, f in net.ingress_log
            if (sw, port) in attach]
    return SideRun(res.cct_s, res.ok, member_counters(net), sent,
                   sum(f.retransmissions for r in res.ranks for f in r.flows if not f.local))


def run_mininet_side(cfg: Any, workdir: Path, repetitions: int = 1,
                     log: Any = print) -> dict[str, list[SideRun]]:
    """Every scheme of ``cfg``'s first workload ``repetitions`` times on one Mininet fabric
    (the scheme switched between runs as the runner does; repetition-major, so a drift in the
    machine's load falls on every scheme alike), hosts' frames captured in every run (the same
    conditions each time) and kept for the first repetition (the counter comparisons).
    ``ccts.json`` in ``workdir`` is rewritten after each run, so a stopped run keeps its CCTs."""
    import json

    from experiments.backends import MininetBackend
    from experiments.metrics import counter_delta
    from experiments.runs import load_ranks, merge_ranks

    spec = cfg.spec()
    w = cfg.workloads[0]
    hosts = cfg.hosts_of(w, spec)
    be = MininetBackend(cfg, spec)
    out: dict[str, list[SideRun]] = {s.label: [] for s in cfg.schemes}
    t0 = time.monotonic()
    try:
        be.up(cfg.schemes[0])
        current = cfg.schemes[0]
        for rep in range(repetitions):
            for scheme in cfg.schemes:
                if scheme != current:
                    be.set_scheme(scheme)
                    current = scheme
                sched = w.schedule_for(len(hosts), seed=cfg.parameters.seed)
                d = workdir / f"rep{rep}" / _label_dir(scheme.label)
                with HostCapture(be.net, hosts, d / "pcap") as cap:
                    s = be.run(sched, hosts, w, d)
                delta = counter_delta(s.counters_before, s.counters_after)
                lb = delta[delta["counter"] == "lb_member_ctr"]
                ctr = pd.DataFrame({"switch": lb["switch"], "group": lb["group"].astype(int),
                                    "member": lb["member"].astype(int),
                                    "packets": lb["packets"].astype(int)})
                summ = merge_ranks(load_ranks(d / "traffic"), sched.ranks)
                run = SideRun(s.cct_s, s.collective_ok, ctr,
                              cap.frames() if rep == 0 else [],
                              summ.retransmissions, list(s.errors))
                if rep == 0 and cap.dropped():
                    run.notes.append(f"tcpdump lost {cap.dropped()} frames: replay incomplete")
                out[scheme.label].append(run)
                log(f"mininet rep {rep + 1}/{repetitions} {scheme.label}: CCT "
                    f"{_secs(run.cct_s)} s, ok {run.ok}, retx {run.retransmissions} "
                    f"({time.monotonic() - t0:.0f} s in)")
                (workdir / "ccts.json").write_text(json.dumps(
                    {lb_: [r.cct_s for r in runs] for lb_, runs in out.items()}, indent=1))
    finally:
        be.down()
    return out


def path_classes(spec: Any, sched: Any, hosts: list[str]) -> dict[str, int]:
    """How many of the schedule's flows stay under one edge switch (``edge``), cross an
    aggregation switch inside a pod (``pod``), or cross the core (``core``, different pods;
    leaf-spine: different leaves) with rank r on ``hosts[r]``: only flows with more than one
    path are where hashing and spraying differ."""
    out = {"edge": 0, "pod": 0, "core": 0}
    for src, _step, snd in sched.sends():
        a, b = spec.hosts[hosts[src]], spec.hosts[hosts[snd.dst]]
        if a.switch == b.switch:
            out["edge"] += 1
        elif a.pod is not None and a.pod == b.pod:
            out["pod"] += 1
        else:
            out["core"] += 1
    return out


def _label_dir(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in label)


def _merge(**cols: pd.DataFrame) -> pd.DataFrame:
    key = ["switch", "group", "member"]
    out: pd.DataFrame | None = None
    for name, df in cols.items():
        d = df[key + ["packets"]].rename(columns={"packets": name})
        out = d if out is None else out.merge(d, on=key, how="outer")
    assert out is not None
    out = out.fillna(0)
    for name in cols:
        out[name] = out[name].astype(int)
    return out.sort_values(key, key=lambda s: s.map(_natural) if s.name == "switch" else s
                           ).reset_index(drop=True)


def _natural(name: str) -> tuple[str, int]:
    head = name.rstrip("0123456789")
    return head, int(name[len(head):] or 0)


def first_hop(spec: Any, df: pd.DataFrame) -> pd.DataFrame:
    """Rows of the switches hosts attach to (where a WaM group's input is the hosts' frames)."""
    edges = {sw for sw, _p in host_attachment(spec).values()}
    return df[df["switch"].isin(edges)]


def compare_runs(spec: Any, scheme: Any, mn: SideRun, sim: SideRun) -> pd.DataFrame:
    """Per (switch, group, member): ``mininet`` (P4Runtime delta), ``mininet_replay`` (the
    Mininet hosts' captured frames through the simulator's pipelines), ``sim`` (the
    simulator's own run), ``mininet_data1`` / ``sim_data1`` (replays of each side's first
    transmissions of data packets only)."""
    built = scheme.build()
    return _merge(mininet=mn.counters,
                  mininet_replay=replay_counters(spec, built, mn.frames),
                  sim=sim.counters,
                  mininet_data1=replay_counters(spec, built, first_data(mn.frames)),
                  sim_data1=replay_counters(spec, built, first_data(sim.frames)))


def rank(ccts: dict[str, float | None]) -> list[str]:
    """Scheme labels fastest first (runs without a CCT last)."""
    return sorted(ccts, key=lambda s: (ccts[s] is None, ccts[s] or 0.0))


# ---- ranking schemes over repetitions -------------------------------------------------------
#
# One run per scheme cannot rank schemes whose CCTs lie within the run-to-run spread. So each
# side runs every scheme N times; two schemes are *separated* on a side when their CCT ranges
# (min..max over the repetitions) do not overlap, and the two sides' rankings *agree* when every
# pair separated on both sides is in the same order. Pairs separated on one side only are
# listed: there one side resolves a difference the other cannot (or does not have). A run
# without a CCT (it did not finish) counts as infinitely slow.

@dataclass(frozen=True)
class CctRange:
    """One scheme's CCTs over the repetitions on one side (s; inf = a run that did not finish)."""

    ccts: tuple[float, ...]

    @classmethod
    def of(cls, ccts: Iterable[float | None]) -> CctRange:
        vals = tuple(math.inf if c is None else float(c) for c in ccts)
        if not vals:
            raise ValueError("a CCT range needs at least one run")
        return cls(vals)

    @property
    def median(self) -> float:
        return statistics.median(self.ccts)

    @property
    def lo(self) -> float:
        return min(self.ccts)

    @property
    def hi(self) -> float:
        return max(self.ccts)


def order(a: CctRange, b: CctRange) -> int:
    """-1 when ``a`` is separated from ``b`` and faster (every run of a finished before every
    run of b), +1 when b is, 0 when the ranges overlap (touching ends overlap: a tie)."""
    if a.hi < b.lo:
        return -1
    if b.hi < a.lo:
        return 1
    return 0


def rank_by_median(ranges: dict[str, CctRange]) -> list[str]:
    """Scheme labels by median CCT, fastest first (ties keep the given order)."""
    return sorted(ranges, key=lambda s: ranges[s].median)


def kendall_tau(x: dict[str, float], y: dict[str, float]) -> float | None:
    """Kendall's tau-b between two scorings of the same keys (1 = same order, -1 = reversed;
    ties count for neither and shrink the denominator). None when either side is all ties."""
    keys = list(x)
    if set(keys) != set(y):
        raise ValueError("the two scorings must cover the same schemes")
    conc = disc = tied_x = tied_y = 0
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            dx = (x[a] > x[b]) - (x[a] < x[b])
            dy = (y[a] > y[b]) - (y[a] < y[b])
            tied_x += dx == 0
            tied_y += dy == 0
            conc += dx * dy > 0
            disc += dx * dy < 0
    pairs = len(keys) * (len(keys) - 1) // 2
    denom = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    return (conc - disc) / denom if denom else None


@dataclass
class RankAgreement:
    """The separability-aware comparison of two sides' rankings. Pairs are (faster, slower) as
    the side that separates them sees it; ``conflicts`` are (faster on Mininet, faster in sim)."""

    both: list[tuple[str, str]] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    mininet_only: list[tuple[str, str]] = field(default_factory=list)
    sim_only: list[tuple[str, str]] = field(default_factory=list)
    neither: list[tuple[str, str]] = field(default_factory=list)
    tau: float | None = None

    @property
    def agree(self) -> bool:
        """Every pair separated on both sides is in the same order (vacuously true when no pair
        is: see ``both``)."""
        return not self.conflicts


def compare_rankings(mininet: dict[str, CctRange], sim: dict[str, CctRange]) -> RankAgreement:
    """Pair by pair: separated on both sides (same order or a conflict), on one side only, or
    on neither; plus Kendall's tau of the two median rankings."""
    if set(mininet) != set(sim):
        raise ValueError("both sides must have run the same schemes")
    out = RankAgreement()
    keys = list(mininet)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            om, os_ = order(mininet[a], mininet[b]), order(sim[a], sim[b])
            pm = (a, b) if om < 0 else (b, a)
            ps = (a, b) if os_ < 0 else (b, a)
            if om and os_ and om == os_:
                out.both.append(pm)
            elif om and os_:
                out.conflicts.append((pm[0], ps[0]))
            elif om:
                out.mininet_only.append(pm)
            elif os_:
                out.sim_only.append(ps)
            else:
                out.neither.append((a, b))
    out.tau = kendall_tau({s: r.median for s, r in mininet.items()},
                          {s: r.median for s, r in sim.items()})
    return out


FIDELITY_EXPERIMENT: dict[str, Any] = {
    "name": "fidelity",
    "backend": "mininet",
    "topology": {"kind": "fattree", "k": 4, "bw_mbps": 10},
    "schemes": ["ecmp", "rotate", "wam", {"name": "flowlet", "params": {"timeout_us": 500}},
                "random"],
    "workloads": [{"name": "a2a", "schedule": "alltoall", "size": "32KB", "rate": "10M",
                   "window": 4, "timeout_s": 60}],
    "parameters": {"seed": 1, "loops": [], "sample_period_s": 0.5},
}
"""The default comparison: k=4 at the demo's 10 Mb/s, an AllToAll of 2 KB per pair (2
packets), control loops off (no probes, no Whack-a-Mole reweighting: static entries)."""


@dataclass(slots=True)
class SchemeSides:
    """One scheme on both sides: the first repetition's runs (frames, counters), every
    repetition's, whether only its first hop can match (``first_hop_only``: the scheme's
    choices downstream depend on timing), and the per-member counter table (schemes whose
    choices both sides make alike: ``comparable``; None otherwise)."""

    mininet: SideRun
    sim: SideRun
    mininet_runs: list[SideRun]
    sim_runs: list[SideRun]
    first_hop_only: bool
    table: pd.DataFrame | None = None


@dataclass(slots=True)
class FidelityResult:
    """The comparison :func:`vs_mininet` made: per scheme label both sides' runs, each side's
    CCT ranges (side -> scheme label -> range) and median ranking, their agreement; the
    schedule's flows by path class, the hosts the ranks ran on, the ideal bound (s)."""

    repetitions: int
    schemes: dict[str, SchemeSides]
    ranges: dict[str, dict[str, CctRange]]
    rank_mininet: list[str]
    rank_sim: list[str]
    agreement: RankAgreement
    paths: dict[str, int] | None = None
    hosts: list[str] | None = None
    ideal_s: float | None = None


def vs_mininet(cfg: Any, workdir: Path, log: Any = print,
               repetitions: int | None = None) -> FidelityResult:
    """Run ``cfg``'s first workload under each scheme ``repetitions`` times (default the
    config's) on Mininet and in the simulator (seed = the config's + i in repetition i); return
    per scheme the first repetition's side runs and counter table and every repetition's runs,
    each side's CCT ranges and median ranking, and the separability-aware comparison. The
    simulator goes first: it is cheap, and a broken workload shows before the fabric is up."""
    n = cfg.repetitions if repetitions is None else repetitions
    if n < 1:
        raise ValueError(f"repetitions must be >= 1, got {n}")
    spec = cfg.spec()
    w = cfg.workloads[0]
    hosts = cfg.hosts_of(w, spec)
    sched = w.schedule_for(len(hosts), seed=cfg.parameters.seed)
    from experiments.metrics import ideal_bounds

    paths = path_classes(spec, sched, hosts)
    log(f"{w.name}: {len(sched.sends())} flows, by path: {paths}; ranks on {hosts}")
    workdir.mkdir(parents=True, exist_ok=True)
    sims: dict[str, list[SideRun]] = {}
    for scheme in cfg.schemes:
        sims[scheme.label] = []
        for i in range(n):
            r = run_sim_side(cfg, w, scheme, seed=cfg.parameters.seed + i)
            if i:
                r.frames = []  # the counter comparisons use the first repetition
            sims[scheme.label].append(r)
        log(f"sim: {scheme.label}: CCT {', '.join(_secs(r.cct_s) for r in sims[scheme.label])}")
    log(f"mininet: {n} x {len(cfg.schemes)} runs of {w.name} on {spec.name} (fabric lock "
        f"{cfg.parameters.lock_timeout_s:g} s)")
    mn = run_mininet_side(cfg, workdir, n, log)
    schemes: dict[str, SchemeSides] = {}
    for scheme in cfg.schemes:
        m, sim = mn[scheme.label][0], sims[scheme.label][0]
        sc = scheme_class(scheme.name)
        schemes[scheme.label] = SchemeSides(
            m, sim, mn[scheme.label], sims[scheme.label], sc.first_hop_only,
            compare_runs(spec, scheme, m, sim) if sc.comparable else None)
    ranges = {"mininet": {lb: CctRange.of(r.cct_s for r in e.mininet_runs)
                          for lb, e in schemes.items()},
              "sim": {lb: CctRange.of(r.cct_s for r in e.sim_runs) for lb, e in schemes.items()}}
    return FidelityResult(
        n, schemes, ranges, rank_by_median(ranges["mininet"]), rank_by_median(ranges["sim"]),
        compare_rankings(ranges["mininet"], ranges["sim"]), paths, hosts,
        float(ideal_bounds(spec, sched, hosts, w.mss)["ideal_s"].sum()))


def _diff(t: pd.DataFrame, a: str, b: str) -> str:
    bad = int((t[a] != t[b]).sum())
    return "equal" if bad == 0 else f"{bad}/{len(t)} differ (|Δ| {int((t[a] - t[b]).abs().sum())})"


def _secs(x: float | None) -> str:
    return f"{x:.4f}" if x is not None else "—"


def replay_check(spec: Any, t: pd.DataFrame, first_hop_only: bool = False) -> str:
    """Mininet's counters against the replay of its hosts' frames: exact at the first hop (the
    frames the hosts sent, nothing lost yet; a ``first_hop_only`` scheme: only there, see
    above); behind it the replay counts every frame the fabric lost (tail drops, ...) that
    Mininet did not, so Mininet may only be lower there."""
    first = first_hop(spec, t)
    out = f"first hop {_diff(first, 'mininet', 'mininet_replay')}"
    if first_hop_only:
        return out
    rest = t.drop(first.index)
    over = int((rest["mininet"] > rest["mininet_replay"]).sum())
    lost = int((rest["mininet_replay"] - rest["mininet"]).sum())
    out += (f"; behind it {_diff(rest, 'mininet', 'mininet_replay')}, replay - mininet = "
            f"{lost} (lost in the fabric)")
    return out + (f", {over} rows where Mininet counted MORE" if over else "")


def report(spec: Any, res: FidelityResult) -> str:
    """The comparison as Markdown: one summary row per scheme and both CCT rankings."""
    from traffic.packet import F_ACK, F_READY, F_RETX

    lines = ["| scheme | CCT mininet (s) | CCT sim (s) | mininet frames: data / retx / ACK / "
             "READY | sim frames: data / retx / ACK | mininet vs replay of its frames "
             "| data first-tx, mininet vs sim | raw mininet vs sim |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]

    def kinds(frames: list[tuple[str, bytes]]) -> list[int]:
        n = [0, 0, 0, 0]
        for _h, f in frames:
            fl = collective_flags(f)
            if fl is None:
                continue
            n[3 if fl & F_READY else 2 if fl & F_ACK else 1 if fl & F_RETX else 0] += 1
        return n

    for label, e in res.schemes.items():
        m, s = e.mininet, e.sim
        t = e.table
        if t is not None:
            first_only = e.first_hop_only
            data = _diff(first_hop(spec, t) if first_only else t, "mininet_data1", "sim_data1")
            rep, raw = replay_check(spec, t, first_only), _diff(t, "mininet", "sim")
        else:
            rep = data = raw = "n/a (timing-dependent scheme)"
        mk, sk = kinds(m.frames), kinds(s.frames)
        lines.append(f"| {label} | {_secs(m.cct_s)} | {_secs(s.cct_s)} | "
                     f"{' / '.join(map(str, mk))} | {' / '.join(map(str, sk[:3]))} | {rep} | "
                     f"{data} | {raw} |")
    lines[0] = lines[0].replace("CCT mininet (s) | CCT sim (s)",
                                "CCT mininet, rep 1 (s) | CCT sim, rep 1 (s)")
    lines += ["", *rank_report(res)]
    for label, e in res.schemes.items():
        for n in e.mininet.notes:
            lines.append(f"note ({label}, mininet): {n}")
    return "\n".join(lines)


def _pairs(pairs: list[tuple[str, str]], sep: str = " < ") -> str:
    return ", ".join(f"{a}{sep}{b}" for a, b in pairs) or "none"


def rank_report(res: FidelityResult) -> list[str]:
    """CCT median and range per scheme and side over the repetitions, both median rankings,
    which pairs each side separates and whether the rankings agree, Kendall's tau."""
    n = res.repetitions
    ranges = res.ranges
    ag = res.agreement
    lines = [f"CCT over {n} repetition(s) per scheme and side, s: median [min, max]"
             " (sim repetition i: seed + i)", "",
             "| scheme | Mininet median | Mininet range | sim median | sim range | sim runs |",
             "| --- | --- | --- | --- | --- | --- |"]
    for label in ranges["mininet"]:
        m, s = ranges["mininet"][label], ranges["sim"][label]
        same = "identical (deterministic)" if n > 1 and len(set(s.ccts)) == 1 else \
            ", ".join(_secs(c) for c in s.ccts)
        lines.append(f"| {label} | {_secs(m.median)} | [{_secs(m.lo)}, {_secs(m.hi)}] | "
                     f"{_secs(s.median)} | [{_secs(s.lo)}, {_secs(s.hi)}] | {same} |")
    tau = "undefined (all tied)" if ag.tau is None else f"{ag.tau:+.2f}"
    both = len(ag.both) + len(ag.conflicts)
    if ag.conflicts:
        verdict = (f"DISAGREE: {len(ag.conflicts)} of the {both} pairs separated on both sides "
                   f"are in opposite orders")
    elif both:
        verdict = f"AGREE on all {both} pairs separated on both sides"
    else:
        verdict = "no pair is separated on both sides: nothing to agree on (vacuous)"
    lines += ["", f"ranking by median CCT, Mininet: {' < '.join(res.rank_mininet)}",
              f"ranking by median CCT, sim:     {' < '.join(res.rank_sim)}",
              f"Kendall's tau-b of the median rankings: {tau}",
              f"rankings: {verdict}",
              f"separated on both sides, same order: {_pairs(ag.both)}",
              f"separated on both sides, opposite orders (Mininet's faster, sim's faster): "
              f"{_pairs(ag.conflicts, sep=' vs ')}",
              f"separated on Mininet only: {_pairs(ag.mininet_only)}",
              f"separated in the sim only: {_pairs(ag.sim_only)}",
              f"separated on neither side: {len(ag.neither)} pair(s)"]
    if res.paths is not None:
        lines.append(f"flows by path (rank r on the r-th listed host): {res.paths}")
    if res.ideal_s is not None:
        lines.append(f"ideal bound (busiest NIC or bisection, no step dependencies, "
                     f"experiments.metrics.ideal_bounds): {res.ideal_s:.3f} s")
    return lines


def main(argv: list[str] | None = None) -> int:
    import argparse
    import os

    import yaml

    from experiments.config import ConfigError, from_dict

    ap = argparse.ArgumentParser(
        prog="python -m experiments.fidelity",
        description="The same k=4 run on the Mininet fabric and in the simulator: per-member "
                    "LB counters and the CCT ranking of the schemes compared.")
    ap.add_argument("--vs-mininet", action="store_true", required=True,
                    help="run the comparison (needs root and Mininet)")
    ap.add_argument("--config", help="experiment file (its first workload and its schemes); "
                                     "default: a 2 KB-per-pair AllToAll on k=4 at 10 Mb/s")
    ap.add_argument("--schemes", nargs="+", help="override the schemes (names)")
    ap.add_argument("--repetitions", type=_positive, metavar="N",
                    help="runs per scheme and side (default: the config's repetitions, else 1)")
    ap.add_argument("--out", default="results/fidelity", help="where the captures, tables "
                                                               "and report go (%(default)s)")
    a = ap.parse_args(argv)
    try:
        d = yaml.safe_load(Path(a.config).read_text()) if a.config else dict(FIDELITY_EXPERIMENT)
        if not isinstance(d, dict):
            raise TypeError("expected an experiment mapping at the top level")
        if a.schemes:
            d["schemes"] = list(a.schemes)
        d["backend"] = "mininet"
        cfg = from_dict(d)
    except (OSError, yaml.YAMLError, ConfigError, AttributeError, TypeError) as e:
        ap.error("config: " + " ".join(str(e).split()))
    if os.geteuid() != 0:
        ap.error("the Mininet side needs root (network namespaces): run it with sudo")
    import sys
    from datetime import UTC, datetime

    root = Path(a.out) / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    load0, t0 = os.getloadavg(), time.monotonic()
    res = vs_mininet(cfg, root, repetitions=a.repetitions)
    load1 = os.getloadavg()
    text = report(cfg.spec(), res) + (
        f"\n\ncommand: python -m experiments.fidelity {' '.join(sys.argv[1:] if argv is None else argv)}"
        f"\nwall time {time.monotonic() - t0:.0f} s; load average (1, 5, 15 min) at the start "
        f"{' '.join(f'{x:.1f}' for x in load0)}, at the end {' '.join(f'{x:.1f}' for x in load1)}")
    for label, outcome in res.schemes.items():
        if outcome.table is not None:
            outcome.table.to_csv(root / f"counters_{_label_dir(label)}.csv", index=False)
    (root / "report.md").write_text(text + "\n")
    print(text)
    print(f"-> {root}")
    return 0


def _positive(text: str) -> int:
    import argparse

    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return n


if __name__ == "__main__":
    import sys

    sys.exit(main())
