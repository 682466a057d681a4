"""Host-side measurements: per flow, per step, per collective; one JSON + one CSV per rank.

Times are wall-clock seconds (time.time()) so that records from different hosts of one machine
(Mininet) or of NTP/PTP-synchronised machines can be merged: a collective's completion time
(CCT) is the last rank's finish minus the first rank's start.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from common.jsontypes import JsonObject

from .schedules import Schedule

TcpCounters = dict[str, float | None]
"""TCP mode: TCP_INFO counters by kernel field name (traffic.tcpinfo.aggregate, summed over a
flow's connections, or one connection's ``TcpInfo.to_dict``); None: not returned."""


class RecordError(ValueError):
    """A rank record (rank<r>.json, an agent's reply) that does not parse: one line saying
    where and what."""


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
    tcp: TcpCounters | None = None   # TCP mode: the sender's TCP_INFO, summed over QPs
    connections: list[TcpCounters] = field(default_factory=list)  # TCP mode, per QP
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
    tcp: TcpCounters | None = None   # TCP mode: the receiver's TCP_INFO, summed over QPs
    connections: list[TcpCounters] = field(default_factory=list)  # TCP mode, per QP


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


@dataclass(slots=True)
class CollectiveTime:
    """One collective's span in seconds: a rank's own (its first step's start, compute
    excluded, to its last step's finish) or the job's (first rank's start to last rank's
    finish, :func:`job_collectives`); ``cct`` = finish - start."""

    collective: int
    name: str
    start: float
    finish: float
    cct: float


def job_collectives(spans: Iterable[CollectiveTime]) -> list[CollectiveTime]:
    """Per collective id, in id order, the span over all of ``spans`` (the ranks' own): the
    first start and the last finish (the name of the first seen)."""
    out: dict[int, CollectiveTime] = {}
    for c in spans:
        m = out.get(c.collective)
        out[c.collective] = replace(c) if m is None else CollectiveTime(
            c.collective, m.name, min(m.start, c.start), max(m.finish, c.finish), 0.0)
    return [CollectiveTime(c.collective, c.name, c.start, c.finish, c.finish - c.start)
            for c in (out[k] for k in sorted(out))]


@dataclass(frozen=True, slots=True)
class TcpTotals:
    """TCP mode: TCP_INFO counters summed over connections (a rank's, or the job's over its
    ranks); ``reordering_max`` is the largest reordering degree; None: no connection said."""

    total_retrans: int | None
    reord_seen: int | None
    dsack_dups: int | None
    total_rto: int | None
    reordering_max: int | None
    rcv_ooopack: int | None

    def to_dict(self) -> JsonObject:
        """The ``tcp_``-prefixed columns of a rank's totals (rank<r>.json)."""
        return {f"tcp_{f.name}": getattr(self, f.name) for f in fields(self)}

    @classmethod
    def over(cls, parts: list[TcpTotals]) -> TcpTotals:
        """The sums (and the largest reordering degree) over ``parts``."""
        def total(key: str) -> int | None:
            vals = [getattr(p, key) for p in parts if getattr(p, key) is not None]
            return sum(vals) if vals else None
        reo = [p.reordering_max for p in parts if p.reordering_max is not None]
        return cls(total("total_retrans"), total("reord_seen"), total("dsack_dups"),
                   total("total_rto"), max(reo) if reo else None, total("rcv_ooopack"))


@dataclass(frozen=True, slots=True)
class RankTotals:
    """A rank's sums over its flows (``totals`` in rank<r>.json): bytes both ways, its network
    flows' packets, retransmissions, timeouts, ACKs (CE-marked among them), spurious
    retransmissions its senders detected, mean window and rate; its received flows'
    reordering and duplicates; ``tcp`` in TCP mode only."""

    bytes_sent: int
    bytes_received: int
    packets_sent: int
    retransmissions: int
    timeouts: int
    reordered: int
    duplicates: int
    acked_packets: int
    ce_acked: int
    spurious_sender: int
    mean_window: float | None
    mean_rate: float | None
    duration: float | None
    tcp: TcpTotals | None = None

    def to_dict(self) -> JsonObject:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "tcp"}
        return {**d, **(self.tcp.to_dict() if self.tcp else {})}


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
    collectives: list[CollectiveTime] = field(default_factory=list)
    send_lag_us: list[int] | None = None
    """Log-linear histogram (common.histogram.LogHistogram counts) of how late the agent's loop
    woke for paced sends and timers; None where not measured (TCP mode, the simulator)."""
    read_lag_us: list[int] | None = None
    """Log-linear histogram of how long datagrams waited in the host's receive socket before
    the agent read them (kernel receive timestamp to read), µs of wall time; measured where
    the agent adds the propagation delay (traffic.delayline), which it counts from the
    kernel's timestamp so that this wait is not added to the path; None elsewhere."""
    agent_drops: dict[str, int | None] | None = None
    """The host agent's drop sites, on its first local rank only (one agent per host):
    ``udp_socket_drops`` (the receive socket overflowed), ``tx_refused`` (sends the host
    kernel refused: its qdisc full, no buffer), ``rx_malformed``, ``rx_stale`` (datagrams of
    an earlier run); None where not measured."""
    cpu_s: float | None = None
    """CPU seconds (user + system) the agent's process spent in its event loop, for all its
    local ranks together: bench/agent_bench.py's per-packet cost. None where not measured."""

    def collective_times(self, s: Schedule) -> list[CollectiveTime]:
        """This rank's view of each collective: from its first step's start (compute excluded)
        to its last step's finish."""
        names = {c.id: c.name for c in s.collectives}
        return job_collectives(
            CollectiveTime(st.collective, names.get(st.collective, ""), st.start, st.finish, 0.0)
            for st in self.steps)

    def totals(self) -> RankTotals:
        net = [f for f in self.flows if not f.local]
        return RankTotals(
            bytes_sent=sum(f.bytes for f in self.flows),
            bytes_received=sum(r.bytes for r in self.received),
            packets_sent=sum(f.packets_sent for f in net),
            retransmissions=sum(f.retransmissions for f in net),
            timeouts=sum(f.timeouts for f in net),
            reordered=sum(r.reordered for r in self.received),
            duplicates=sum(r.duplicates for r in self.received),
            acked_packets=sum(f.acked_packets for f in net),
            ce_acked=sum(f.ce_acked for f in net),
            spurious_sender=sum(f.spurious for f in net),
            mean_window=_mean(f.mean_window for f in net),
            mean_rate=_mean(f.mean_rate for f in net),
            duration=(self.finish - self.start) if self.finish and self.start else None,
            tcp=self.tcp_totals())

    def tcp_totals(self) -> TcpTotals | None:
        """TCP mode: TCP_INFO counters summed over this rank's connections (None in UDP mode).
        Sender side: retransmissions, reordering events, D-SACKs, timeouts, the largest
        reordering degree; receiver side: out-of-order segments queued."""
        sent = [f.tcp for f in self.flows if f.tcp]
        got = [r.tcp for r in self.received if r.tcp]
        if not sent and not got:
            return None

        def total(recs: list[TcpCounters], key: str) -> int | None:
            vals = [int(v) for x in recs if (v := x.get(key)) is not None]
            return sum(vals) if vals else None

        reo = [int(v) for x in sent if (v := x.get("reordering_max")) is not None]
        return TcpTotals(
            total_retrans=total(sent, "total_retrans"), reord_seen=total(sent, "reord_seen"),
            dsack_dups=total(sent, "dsack_dups"), total_rto=total(sent, "total_rto"),
            reordering_max=max(reo) if reo else None, rcv_ooopack=total(got, "rcv_ooopack"))

    def to_json(self) -> JsonObject:
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
        d["totals"] = self.totals().to_dict()
        return d

    @classmethod
    def from_json(cls, d: Any, where: str = "rank record") -> RankMetrics:
        """A rank record as :meth:`to_json` wrote it (rank<r>.json, an agent's reply), typed
        again; its derived figures (fct, duration, totals, ...) are recomputed from the
        records. :class:`RecordError` names what is wrong."""
        if not isinstance(d, Mapping):
            raise RecordError(f"{where}: expected an object, got {type(d).__name__}")

        def items(key: str) -> list[Any]:
            v = d.get(key, [])
            if not isinstance(v, list):
                raise RecordError(f"{where}: {key} is not a list")
            return v

        return _build(cls, d, where,
                      flows=[_build(FlowRecord, x, f"{where}: flows[{i}]")
                             for i, x in enumerate(items("flows"))],
                      received=[_recv(x, f"{where}: received[{i}]")
                                for i, x in enumerate(items("received"))],
                      steps=[_build(StepRecord, x, f"{where}: steps[{i}]")
                             for i, x in enumerate(items("steps"))],
                      collectives=[_build(CollectiveTime, x, f"{where}: collectives[{i}]")
                                   for i, x in enumerate(items("collectives"))])

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


def _build(cls: Any, d: Any, where: str, **parsed: Any) -> Any:
    """The dataclass ``cls`` from the JSON object ``d``: each field from its key (``parsed``
    first); keys that are no field (derived figures) are ignored, a missing field with a
    default takes it, one without raises :class:`RecordError`."""
    if not isinstance(d, Mapping):
        raise RecordError(f"{where}: expected an object, got {type(d).__name__}")
    kw: dict[str, object] = {}
    for f in fields(cls):
        if f.name in parsed:
            kw[f.name] = parsed[f.name]
        elif f.name in d:
            kw[f.name] = d[f.name]
        elif f.default is MISSING and f.default_factory is MISSING:
            raise RecordError(f"{where}: no {f.name!r}")
    return cls(**kw)


def _recv(d: Any, where: str) -> RecvRecord:
    """A received flow; its reorder histogram's keys are strings in JSON."""
    dist = d.get("reorder_distance") if isinstance(d, Mapping) else None
    try:
        hist = {int(k): int(v) for k, v in (dist or {}).items()}
    except (AttributeError, TypeError, ValueError):
        raise RecordError(f"{where}: reorder_distance is not a histogram") from None
    rec: RecvRecord = _build(RecvRecord, d, where, reorder_distance=hist)
    return rec


def _mean(values: Any) -> float | None:
    v = [x for x in values if x is not None]
    return sum(v) / len(v) if v else None


_TCP_CSV = ("total_retrans", "reordering_max", "reord_seen", "dsack_dups", "rcv_ooopack",
            "rtt_max")


def _tcp_cols(tcp: TcpCounters | None) -> dict[str, float | None]:
    return {f"tcp_{k}": tcp.get(k) for k in _TCP_CSV} if tcp else {}


FCT_PERCENTILES = (50, 90, 99)
"""The percentiles :class:`FctSummary` reports (its ``p50_us`` ... fields)."""


@dataclass(frozen=True, slots=True)
class FctSummary:
    """The field's per-flow figures (htsim's validation reports them): flow completion times
    in µs — minimum, percentiles, the tail (the slowest flow) — and the spread, tail over
    minimum (1: every flow as fast as the fastest); ``flows_unfinished`` counts the flows
    without a finish, left out of the rest (all None when no flow finished)."""

    flows: int
    flows_unfinished: int
    min_us: float | None = None
    p50_us: float | None = None
    p90_us: float | None = None
    p99_us: float | None = None
    tail_us: float | None = None
    spread: float | None = None

    def percentile_us(self, p: int) -> float | None:
        value: float | None = getattr(self, f"p{p}_us")
        return value

    def to_dict(self) -> JsonObject:
        """The ``fct_*`` columns (the simulator's summary JSON, in its order)."""
        head = {"flows": self.flows, "flows_unfinished": self.flows_unfinished,
                "fct_min_us": self.min_us}
        pct = {f"fct_p{p}_us": self.percentile_us(p) for p in FCT_PERCENTILES}
        tail = {"fct_tail_us": self.tail_us, "fct_spread": self.spread}
        return {**head, **tail, **pct} if self.min_us is None else {**head, **pct, **tail}


def fct_summary(fcts: list[float | None]) -> FctSummary:
    """:class:`FctSummary` of flows' completion times (seconds; None: unfinished)."""
    done = sorted(x * 1e6 for x in fcts if x is not None)
    if not done:
        return FctSummary(len(fcts), len(fcts))
    pct = {f"p{p}_us": round(done[max(0, -(-p * len(done) // 100) - 1)], 3)
           for p in FCT_PERCENTILES}   # nearest rank: an FCT some flow really had
    return FctSummary(len(fcts), len(fcts) - len(done), min_us=round(done[0], 3),
                      tail_us=round(done[-1], 3),
                      spread=round(done[-1] / done[0], 4) if done[0] > 0 else None, **pct)


@dataclass(frozen=True, slots=True)
class JobSummary:
    """Job-wide view of a run's rank records (:func:`merge_ranks`): per collective the first
    start and last finish, byte accounting, loss recovery and per-flow completion, the
    congestion control's figures, TCP's counters in TCP mode."""

    ranks: int
    completed: bool
    """Every rank record says it completed (the runner also wants every rank to be there:
    experiments.runs.merge_ranks)."""
    collectives: list[CollectiveTime]
    bytes_sent: int
    bytes_received: int
    flows_mismatched: list[int]
    """Flows whose bytes received differ from the bytes sent."""
    retransmissions: int
    timeouts: int
    nacks: int
    trim_nacks: int
    fct: FctSummary
    reordered: int
    spurious: int
    """Copies that arrived at a receiver which already had the packet."""
    spurious_sender: int
    """The same counted by the senders from the receivers' D-SACK echoes."""
    ce_fraction: float | None
    mean_window: float | None
    mean_rate: float | None
    cc: str | None
    path_policy: str | None
    errors: list[str]
    """``rank <r>: <error>`` of each rank that reported one."""
    packets_sent: int
    tcp: TcpTotals | None = None

    @property
    def bytes_conserved(self) -> bool:
        """Every byte sent was received, flow by flow."""
        return self.bytes_sent == self.bytes_received and not self.flows_mismatched


def summarize(outdir: str | Path) -> JobSummary:
    """Merge every rank<r>.json of a run: job-wide CCT per collective and byte accounting."""
    return merge_ranks([RankMetrics.from_json(json.loads(p.read_text()), str(p))
                        for p in sorted(Path(outdir).glob("rank*.json"))])


def merge_ranks(ranks: list[RankMetrics]) -> JobSummary:
    """Job-wide view of rank records (from one directory or many hosts' directories): per
    collective the first start and last finish, byte accounting, retransmissions, how losses
    were recovered (by timeout, NACK, the NACK of a trimmed packet), the per-flow figures
    (:func:`fct_summary`) and the congestion control's: spurious retransmissions, the
    fraction of acknowledged packets that came back CE-marked, the window and rate averaged
    over the flows (each flow's own average over its ACKs)."""
    sent = {f.flow: f.bytes for r in ranks for f in r.flows if not f.local}
    got = {f.flow: f.bytes for r in ranks for f in r.received}
    tot = [r.totals() for r in ranks]
    net = [f for r in ranks for f in r.flows if not f.local]
    acked = sum(t.acked_packets for t in tot)
    tcp = [t.tcp for t in tot if t.tcp is not None]
    return JobSummary(
        ranks=len(ranks), completed=all(r.completed for r in ranks),
        collectives=job_collectives(c for r in ranks for c in r.collectives),
        bytes_sent=sum(sent.values()), bytes_received=sum(got.values()),
        flows_mismatched=sorted(f for f in sent if got.get(f) != sent[f]),
        retransmissions=sum(t.retransmissions for t in tot),
        timeouts=sum(f.timeouts for f in net), nacks=sum(f.nacks for f in net),
        trim_nacks=sum(f.trim_nacks for f in net), fct=fct_summary([f.fct for f in net]),
        reordered=sum(t.reordered for t in tot),
        spurious=sum(t.duplicates for t in tot),
        spurious_sender=sum(t.spurious_sender for t in tot),
        ce_fraction=sum(t.ce_acked for t in tot) / acked if acked else None,
        mean_window=_mean(f.mean_window for f in net),
        mean_rate=_mean(f.mean_rate for f in net),
        cc=",".join(sorted({f.cc for f in net if f.cc})) or None,
        path_policy=ranks[0].path_policy if ranks else None,
        errors=[f"rank {r.rank}: {r.error}" for r in ranks if r.error],
        packets_sent=sum(t.packets_sent for t in tot),
        tcp=TcpTotals.over(tcp) if tcp else None)
