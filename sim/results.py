"""What a simulation run reports: per-rank metrics in traffic.metrics' types, job-wide CCTs,
the switches' LB member counters (as the controller reads them on Mininet) and run statistics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from common.jsontypes import JsonObject
from traffic.metrics import CollectiveTime, RankMetrics, fct_summary, job_collectives

if TYPE_CHECKING:
    import pandas as pd

    from p4switch import ExactMatch, MatchValue

    from .host import Job
    from .network import SimNetwork

LB_MAX_MEMBERS = 64
LB_MEMBER_CTR = "MyIngress.lb_member_ctr"
LB_MEMBER = "MyIngress.lb_member"


@dataclass(frozen=True)
class Progress:
    """Where a run is: virtual time, events and packet-hops so far, network flows fully
    acknowledged out of all the job's network flows, wall seconds since the run started."""

    now_us: float
    events: int
    packet_hops: int
    flows_done: int
    flows_total: int
    wall_s: float


@dataclass
class SimResult:
    ranks: list[RankMetrics]
    collectives: list[CollectiveTime]
    """One per collective, job-wide."""
    end_us: float
    wall_s: float
    packet_hops: int
    """Packets that entered a switch (each switch traversal counts once)."""
    fast_hops: int
    events: int
    tail_drops: int
    pipeline_drops: int
    link_losses: int
    trims: int = 0
    """Packets the switches' queues cut to their headers (SimConfig.trim)."""
    stats: dict[str, float] = field(default_factory=dict)
    """Run statistics by name (switches, hosts, build and install seconds)."""

    @property
    def ok(self) -> bool:
        return bool(self.ranks) and all(r.completed for r in self.ranks)

    @property
    def cct_s(self) -> float | None:
        """Completion time of the whole job: first step start to last step finish."""
        if not self.collectives:
            return None
        return max(c.finish for c in self.collectives) - min(c.start for c in self.collectives)

    @property
    def hops_per_s(self) -> float:
        return self.packet_hops / self.wall_s if self.wall_s > 0 else 0.0

    def flows(self) -> pd.DataFrame:
        rows = [{**{k: getattr(f, k) for k in ("flow", "src", "dst", "step", "collective",
                                                 "bytes", "packets", "packets_sent", "posted",
                                                 "start", "finish", "retransmissions",
                                                 "timeouts", "nacks", "local")},
                 "fct": f.fct} for r in self.ranks for f in r.flows]
        import pandas as pd  # only here: a run's process need not load it

        return pd.DataFrame(rows)

    def received(self) -> pd.DataFrame:
        rows = [{k: getattr(x, k) for k in ("flow", "src", "dst", "bytes", "packets",
                                             "packets_received", "arrivals", "duplicates",
                                             "reordered", "start", "finish")}
                for r in self.ranks for x in r.received]
        import pandas as pd  # only here: a run's process need not load it

        return pd.DataFrame(rows)

    def summary(self) -> JsonObject:
        # plain sums, not a DataFrame of every flow: a k=16 AllToAll has a million of them
        net = [f for r in self.ranks for f in r.flows if not f.local]
        return {
            "ok": self.ok, "cct_s": self.cct_s, "end_us": self.end_us,
            "wall_s": round(self.wall_s, 3), "packet_hops": self.packet_hops,
            "hops_per_s": round(self.hops_per_s), "fast_share": round(
                self.fast_hops / self.packet_hops, 3) if self.packet_hops else 0.0,
            "events": self.events, "tail_drops": self.tail_drops,
            "pipeline_drops": self.pipeline_drops, "link_losses": self.link_losses,
            "retransmissions": sum(f.retransmissions for f in net),
            "timeouts": sum(f.timeouts for f in net),
            "nacks": sum(f.nacks for f in net),
            "trim_nacks": sum(f.trim_nacks for f in net),
            "trims": self.trims,
            **fct_summary([f.fct for f in net]).to_dict(),
            "reordered": int(sum(x.reordered for r in self.ranks for x in r.received)),
            "bytes_sent": int(sum(f.bytes for r in self.ranks for f in r.flows)),
            "bytes_received": int(sum(x.bytes for r in self.ranks for x in r.received)),
            **self.stats,
        }

    @classmethod
    def collect(cls, net: SimNetwork, job: Job, end_us: float, wall_s: float,
                ranks: list[RankMetrics] | None = None, events: int | None = None) -> SimResult:
        """``ranks``/``events``: those of a split run (sim.parallel), gathered from its parts."""
        net.sync()
        if ranks is None:
            ranks = [m for h in dict.fromkeys(job.rank_hosts) for m in h.results()]
        ranks.sort(key=lambda m: m.rank)
        sws = net.switches.values()
        return cls(
            ranks=ranks, collectives=job_collectives(c for m in ranks for c in m.collectives),
            end_us=end_us,
            wall_s=wall_s, packet_hops=sum(s.packets_in for s in sws),
            fast_hops=sum(s.fast_packets for s in sws),
            events=net.loop.events_run if events is None else events,
            tail_drops=sum(s.tail_drops() for s in sws),
            pipeline_drops=sum(s.pipeline_drops for s in sws),
            link_losses=sum(d.lost_packets for pair in net.links for d in pair),
            trims=sum(s.trims() for s in sws),
            stats={"switches": len(net.switches), "hosts": len(net.hosts),
                   "build_s": round(net.build_s, 3), "install_s": round(net.install_s, 3)})


def _exact(m: MatchValue) -> int:
    """The value of an exact key (lb_member's keys are exact)."""
    return cast("ExactMatch", m).value


def member_counters(net: SimNetwork) -> pd.DataFrame:
    """lb_member_ctr of every installed (group, member index): switch, group, member, port,
    packets, bytes — the rows ``FabricController.read_counters`` gives for that counter."""
    rows = []
    for name, sw in net.switches.items():
        se = net.entries[name]
        members = sorted((_exact(m["meta.lb.group_id"]), _exact(m["meta.lb.member_idx"]),
                          e.params_dict["port"])
                         for e in se.entries if e.table == LB_MEMBER
                         for m in (e.match_dict,))
        for gid, idx, port in members:
            pk, by = sw.pipe.counter_read(LB_MEMBER_CTR, gid * LB_MAX_MEMBERS + idx)
            rows.append({"switch": name, "group": gid, "member": idx, "port": port,
                         "packets": pk, "bytes": by})
    import pandas as pd  # only here: a run's process need not load it

    return pd.DataFrame(rows, columns=["switch", "group", "member", "port", "packets", "bytes"])
