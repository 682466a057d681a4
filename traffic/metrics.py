"""Host-side measurements: per flow, per step, per collective; one JSON + one CSV per rank.

Times are wall-clock seconds (time.time()) so that records from different hosts of one machine
(Mininet) or of NTP/PTP-synchronised machines can be merged: a collective's completion time
(CCT) is the last rank's finish minus the first rank's start.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .schedules import Schedule


@dataclass
class FlowRecord:
    """A flow this rank sent. posted: the step posted it; start/finish: first packet sent,
    last packet acknowledged; fct = finish - posted."""

    flow: int
    src: int
    dst: int
    step: int
    collective: int
    bytes: int
    packets: int
    packets_sent: int
    posted: float
    start: float | None
    finish: float | None
    retransmissions: int = 0
    timeouts: int = 0
    nacks: int = 0
    trim_nacks: int = 0   # NACKs of packets a switch trimmed (in ``nacks``), resent at once
    acked_packets: int = 0
    local: bool = False
    tcp: dict[str, Any] | None = None   # TCP mode: the sender's TCP_INFO, summed over QPs
    connections: list[dict[str, Any]] = field(default_factory=list)  # TCP mode, per QP
    sports: list[int] = field(default_factory=list)         # the path policy's entropy set
    sport_packets: list[int] = field(default_factory=list)  # packets sent on each of them
    ce_acked: int = 0   # acknowledged packets whose ECN echo was CE
    cc: str | None = None                # the congestion control (traffic.congestion)
    mean_window: float | None = None     # its window, packets, averaged over the ACKs
    mean_rate: float | None = None       # its pacing rate over the line rate, averaged over
    #                                      the ACKs (rate-based algorithms)
    srtt: float | None = None            # RFC 6298 smoothed RTT at the end, seconds
    rto: float | None = None             # the RTO at the end, seconds
    spurious: int = 0                    # retransmissions the receiver reported duplicate
    #                                      (D-SACK echo: sender-side detection, RFC 3708)

    @property
    def fct(self) -> float | None:
        return None if self.finish is None else self.finish - self.posted


@dataclass
class RecvRecord:
    """A flow this rank received; reordered counts first transmissions that arrived after a
    higher sequence number, reorder_distance is the histogram of (highest - seq)."""

    flow: int
    src: int
    dst: int
    bytes: int
    packets: int
    packets_received: int
    arrivals: int
    duplicates: int
    reordered: int
    reorder_distance: dict[int, int]
    start: float | None
    finish: float | None
    tcp: dict[str, Any] | None = None   # TCP mode: the receiver's TCP_INFO, summed over QPs
    connections: list[dict[str, Any]] = field(default_factory=list)  # TCP mode, per QP


@dataclass
class StepRecord:
    rank: int
    step: int
    label: str
    collective: int
    compute_start: float
    start: float          # sends posted (compute over)
    finish: float

    @property
    def duration(self) -> float:
        return self.finish - self.start


@dataclass
class RankMetrics:
    rank: int
    host: str
    job: int
    schedule: str
    transport: str = "udp"
    path_policy: str = "single"   # traffic.policies.PolicySpec.label of the run
    start: float | None = None
    finish: float | None = None
    completed: bool = False
    error: str | None = None
    flows: list[FlowRecord] = field(default_factory=list)
    received: list[RecvRecord] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    collectives: list[dict[str, Any]] = field(default_factory=list)
    send_lag_us: list[int] | None = None
    """Log-linear histogram (common.histogram.LogHistogram counts) of how late the agent's loop
    woke for paced sends and timers; None where not measured (TCP mode, the simulator)."""
    agent_drops: dict[str, int | None] | None = None
    """The host agent's drop sites, on its first local rank only (one agent per host):
    ``udp_socket_drops`` (the receive socket overflowed), ``tx_refused`` (sends the host
    kernel refused: its qdisc full, no buffer), ``rx_malformed``, ``rx_stale`` (datagrams of
    an earlier run); None where not measured."""
    cpu_s: float | None = None
    """CPU seconds (user + system) the agent's process spent in its event loop, for all its
    local ranks together: bench/agent_bench.py's per-packet cost. None where not measured."""

    def collective_times(self, s: Schedule) -> list[dict[str, Any]]:
        """This rank's view of each collective: from its first step's start (compute excluded)
        to its last step's finish."""
        names = {c.id: c.name for c in s.collectives}
        out: dict[int, dict[str, Any]] = {}
        for st in self.steps:
            c = out.setdefault(st.collective, {"collective": st.collective,
                                               "name": names.get(st.collective, ""),
                                               "start": st.start, "finish": st.finish})
            c["start"] = min(c["start"], st.start)
            c["finish"] = max(c["finish"], st.finish)
        for c in out.values():
            c["cct"] = c["finish"] - c["start"]
        return [out[k] for k in sorted(out)]

    def totals(self) -> dict[str, Any]:
        net = [f for f in self.flows if not f.local]
        return {
            "bytes_sent": sum(f.bytes for f in self.flows),
            "bytes_received": sum(r.bytes for r in self.received),
            "packets_sent": sum(f.packets_sent for f in net),
            "retransmissions": sum(f.retransmissions for f in net),
            "timeouts": sum(f.timeouts for f in net),
            "reordered": sum(r.reordered for r in self.received),
            "duplicates": sum(r.duplicates for r in self.received),
            "acked_packets": sum(f.acked_packets for f in net),
            "ce_acked": sum(f.ce_acked for f in net),
            "spurious_sender": sum(f.spurious for f in net),
            "mean_window": _mean(f.mean_window for f in net),
            "mean_rate": _mean(f.mean_rate for f in net),
            "duration": (self.finish - self.start) if self.finish and self.start else None,
            **self.tcp_totals(),
        }

    def tcp_totals(self) -> dict[str, Any]:
        """TCP mode: TCP_INFO counters summed over this rank's connections ({} in UDP mode).
        Sender side: retransmissions, reordering events, D-SACKs, timeouts, the largest
        reordering degree; receiver side: out-of-order segments queued."""
        sent = [f.tcp for f in self.flows if f.tcp]
        got = [r.tcp for r in self.received if r.tcp]
        if not sent and not got:
            return {}

        def total(recs: list[dict[str, Any]], key: str) -> int | None:
            vals = [x[key] for x in recs if x.get(key) is not None]
            return sum(vals) if vals else None

        reo = [x["reordering_max"] for x in sent if x.get("reordering_max") is not None]
        return {
            "tcp_total_retrans": total(sent, "total_retrans"),
            "tcp_reord_seen": total(sent, "reord_seen"),
            "tcp_dsack_dups": total(sent, "dsack_dups"),
            "tcp_total_rto": total(sent, "total_rto"),
            "tcp_reordering_max": max(reo) if reo else None,
            "tcp_rcv_ooopack": total(got, "rcv_ooopack"),
        }

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        for f, rec in zip(d["flows"], self.flows, strict=True):
            f["fct"] = rec.fct
        for s_, step in zip(d["steps"], self.steps, strict=True):
            s_["duration"] = step.duration
        for r in d["received"]:
            dist = r["reorder_distance"]
            n = sum(dist.values())
            r["reorder_distance_max"] = max(dist, default=0)
            r["reorder_distance_mean"] = (sum(k * v for k, v in dist.items()) / n) if n else 0.0
            r["reorder_distance"] = {str(k): v for k, v in dist.items()}
        d["totals"] = self.totals()
        return d

    def write(self, outdir: str | Path) -> tuple[Path, Path]:
        """rank<r>.json (everything) and rank<r>_flows.csv (one row per flow, both ways)."""
        outdir = Path(outdir)
        outdir.mkdir(parents=True, exist_ok=True)
        jp = outdir / f"rank{self.rank}.json"
        jp.write_text(json.dumps(self.to_json(), indent=1))
        cp = outdir / f"rank{self.rank}_flows.csv"
        cols = ["direction", "flow", "src", "dst", "bytes", "packets", "start", "finish", "fct",
                "retransmissions", "timeouts", "reordered", "duplicates", "reorder_distance_max",
                *(f"tcp_{k}" for k in _TCP_CSV)]
        with cp.open("w", newline="") as fh:
            w = csv.DictWriter(fh, cols)
            w.writeheader()
            for f in self.flows:
                w.writerow({"direction": "local" if f.local else "send", "flow": f.flow,
                            "src": f.src, "dst": f.dst, "bytes": f.bytes, "packets": f.packets,
                            "start": f.posted, "finish": f.finish, "fct": f.fct,
                            "retransmissions": f.retransmissions, "timeouts": f.timeouts,
                            **_tcp_cols(f.tcp)})
            for r in self.received:
                w.writerow({"direction": "recv", "flow": r.flow, "src": r.src, "dst": r.dst,
                            "bytes": r.bytes, "packets": r.packets, "start": r.start,
                            "finish": r.finish,
                            "fct": (r.finish - r.start) if r.finish and r.start else None,
                            "reordered": r.reordered, "duplicates": r.duplicates,
                            "reorder_distance_max": max(r.reorder_distance, default=0),
                            **_tcp_cols(r.tcp)})
        return jp, cp


def _mean(values: Any) -> float | None:
    v = [x for x in values if x is not None]
    return sum(v) / len(v) if v else None


_TCP_CSV = ("total_retrans", "reordering_max", "reord_seen", "dsack_dups", "rcv_ooopack",
            "rtt_max")


def _tcp_cols(tcp: dict[str, Any] | None) -> dict[str, Any]:
    return {f"tcp_{k}": tcp.get(k) for k in _TCP_CSV} if tcp else {}


FCT_PERCENTILES = (50, 90, 99)


def fct_summary(fcts: list[float | None]) -> dict[str, Any]:
    """The field's per-flow figures (htsim's validation reports them): flow completion times
    in µs — minimum, percentiles, the tail (the slowest flow) — and the spread, tail over
    minimum (1: every flow as fast as the fastest); ``flows_unfinished`` counts the flows
    without a finish, left out of the rest."""
    done = sorted(x * 1e6 for x in fcts if x is not None)
    out: dict[str, Any] = {"flows": len(fcts), "flows_unfinished": len(fcts) - len(done)}
    if not done:
        return {**out, "fct_min_us": None, "fct_tail_us": None, "fct_spread": None,
                **{f"fct_p{p}_us": None for p in FCT_PERCENTILES}}
    out["fct_min_us"] = round(done[0], 3)
    for p in FCT_PERCENTILES:   # nearest rank: an FCT some flow really had
        out[f"fct_p{p}_us"] = round(done[max(0, -(-p * len(done) // 100) - 1)], 3)
    out["fct_tail_us"] = round(done[-1], 3)
    out["fct_spread"] = round(done[-1] / done[0], 4) if done[0] > 0 else None
    return out


def summarize(outdir: str | Path) -> dict[str, Any]:
    """Merge every rank<r>.json of a run: job-wide CCT per collective and byte accounting."""
    return merge_ranks([json.loads(p.read_text())
                        for p in sorted(Path(outdir).glob("rank*.json"))])


def merge_ranks(ranks: list[dict[str, Any]]) -> dict[str, Any]:
    """Job-wide view of loaded rank metrics (from one directory or many hosts' directories):
    per collective the first start and last finish, byte accounting, retransmissions."""
    colls: dict[int, dict[str, Any]] = {}
    for r in ranks:
        for c in r["collectives"]:
            m = colls.setdefault(c["collective"], {"collective": c["collective"],
                                                   "name": c["name"], "start": c["start"],
                                                   "finish": c["finish"]})
            m["start"] = min(m["start"], c["start"])
            m["finish"] = max(m["finish"], c["finish"])
    for c in colls.values():
        c["cct"] = c["finish"] - c["start"]
    sent = {(f["flow"]): f["bytes"] for r in ranks for f in r["flows"] if not f["local"]}
    got = {(f["flow"]): f["bytes"] for r in ranks for f in r["received"]}
    return {
        "ranks": len(ranks),
        "completed": all(r["completed"] for r in ranks),
        "collectives": [colls[k] for k in sorted(colls)],
        "bytes_sent": sum(sent.values()),
        "bytes_received": sum(got.values()),
        "flows_mismatched": sorted(f for f in sent if got.get(f) != sent[f]),
        "retransmissions": sum(r["totals"]["retransmissions"] for r in ranks),
        **_loss_summary(ranks),
        "reordered": sum(r["totals"]["reordered"] for r in ranks),
        **_cc_summary(ranks),
        "path_policy": ranks[0].get("path_policy", "single") if ranks else None,
        **_tcp_summary(ranks),
    }


def _loss_summary(ranks: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-flow figures htsim's validation reports (``fct_summary``) and how losses were
    recovered: by timeout, by NACK, by the NACK of a trimmed packet."""
    net = [f for r in ranks for f in r["flows"] if not f.get("local")]
    return {"timeouts": sum(f.get("timeouts") or 0 for f in net),
            "nacks": sum(f.get("nacks") or 0 for f in net),
            "trim_nacks": sum(f.get("trim_nacks") or 0 for f in net),
            **fct_summary([f.get("fct") for f in net])}


def _cc_summary(ranks: list[dict[str, Any]]) -> dict[str, Any]:
    """Congestion control job-wide: spurious retransmissions (copies that arrived at a
    receiver which already had the packet: the retransmission was not needed; and the same
    counted by the senders from the receivers' D-SACK echoes, ``spurious_sender``), the fraction
    of acknowledged packets that came back CE-marked, the window and rate averaged over the
    flows (each flow's own average over its ACKs)."""
    tot = [r["totals"] for r in ranks]
    acked = sum(t.get("acked_packets", 0) for t in tot)
    flows = [f for r in ranks for f in r["flows"] if not f["local"]]
    ccs = sorted({f.get("cc") for f in flows if f.get("cc")})
    return {"spurious": sum(t.get("duplicates", 0) for t in tot),
            "spurious_sender": sum(t.get("spurious_sender", 0) for t in tot),
            "ce_fraction": sum(t.get("ce_acked", 0) for t in tot) / acked if acked else None,
            "mean_window": _mean(f.get("mean_window") for f in flows),
            "mean_rate": _mean(f.get("mean_rate") for f in flows),
            "cc": ",".join(ccs) or None}


def _tcp_summary(ranks: list[dict[str, Any]]) -> dict[str, Any]:
    """Job-wide sums of the TCP mode's TCP_INFO counters (nothing for UDP runs)."""
    keys = ("tcp_total_retrans", "tcp_reord_seen", "tcp_dsack_dups", "tcp_total_rto",
            "tcp_rcv_ooopack")
    tcp = [r["totals"] for r in ranks if "tcp_total_retrans" in r["totals"]]
    if not tcp:
        return {}
    out: dict[str, Any] = {"transport": "tcp"}
    for k in keys:
        vals = [t[k] for t in tcp if t.get(k) is not None]
        out[k] = sum(vals) if vals else None
    reo = [t["tcp_reordering_max"] for t in tcp if t.get("tcp_reordering_max") is not None]
    out["tcp_reordering_max"] = max(reo) if reo else None
    return out
