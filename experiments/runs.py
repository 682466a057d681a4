"""What the hosts of one run left behind, read back: their rank files, merged into the run's
summary, and the fidelity guard's verdict on the run. Shared by the runner, the calibration
ramp and the fidelity experiment (so that none of them imports another for it)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

from common.jsontypes import JsonObject
from model.dilation import to_fabric_time
from topo.guard import GuardRow, judge_run
from traffic import metrics as traffic_metrics
from traffic.metrics import JobSummary, RankMetrics

from . import metrics
from .backends import RunSamples
from .config import WorkloadConfig


@dataclass(slots=True)
class RunRow:
    """One run's row of runs.csv (docs/experiments.md): what it ran, whether it completed and
    its CCT, the fidelity guard's verdict and figures, the hosts' accounting (traffic.metrics
    JobSummary), the switches' counters against what the schedule needed, the link failure's
    timing; fabric units. ``to_dict`` gives the CSV's columns in their order."""

    workload: str
    scheme: str
    repetition: int
    iteration: int | None
    """The BSP iteration (no column for a workload without iterations)."""
    ok: bool
    cct: float | None
    wall_s: float
    guard: GuardRow
    """The guard's verdict and columns (topo/guard.GuardRow: a backend with nothing hidden
    to measure has none but its queues' tail drops)."""
    bytes_sent: int
    bytes_received: int
    bytes_conserved: bool
    packets_sent: int
    retransmissions: int
    reordered: int
    timeouts: int
    nacks: int
    trim_nacks: int
    fct_min_us: float | None
    fct_p50_us: float | None
    fct_p99_us: float | None
    fct_tail_us: float | None
    fct_spread: float | None
    """Per-flow completion (htsim's validation figures: tail, spread = tail / minimum) and
    loss recovery by timeout, NACK and trimmed-packet NACK (traffic.metrics.merge_ranks)."""
    trims: int | None
    trim: bool
    cc: str | None
    spurious: int
    ce_fraction: float | None
    mean_window: float | None
    mean_rate: float | None
    """The congestion control's figures: its name, spurious retransmissions, the CE-marked
    fraction of acknowledged packets, the mean window (packets) and the mean pacing rate over
    the line rate (rate-based algorithms)."""
    tcp_total_retrans: int | None
    tcp_reord_seen: int | None
    drops: int | None
    qdepth_max: int | None
    uplink_bytes: int | None
    inter_edge_wire_bytes: int
    counter_ratio: float | None
    host_data_wire_bytes: int
    switch_host_rx_bytes: int | None
    host_tx_bytes: int | None
    drop_reasons: str | None
    failure_at: float | None
    reroute_s: float | None
    failure_after_start_s: float | None
    errors: str | None
    dir: str
    batch_shares: str | None = None
    tdf: float = 1.0
    rerun_of: int | None = None
    """The repetition this one ran again after a step back (no column otherwise)."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"iteration", "rerun_of"})

    @property
    def valid(self) -> bool:
        return self.guard.valid

    @property
    def invalid_reason(self) -> str | None:
        return self.guard.invalid_reason

    def to_dict(self) -> JsonObject:
        out: JsonObject = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "guard":
                out.update(v.to_dict())
            elif f.name in self.OPTIONAL and v is None:
                continue
            else:
                out[f.name] = v
        return out


def load_ranks(out: Path, tdf: float = 1.0) -> list[RankMetrics]:
    """Every rank<r>.json under a run's traffic directory (one per rank), its times in fabric
    seconds (÷ ``tdf``, applied to the file's seconds before they are typed)."""
    return [RankMetrics.from_json(to_fabric_time(json.loads(p.read_text()), tdf), str(p))
            for p in sorted(out.rglob("rank*.json"))]


def merge_ranks(ranks: list[RankMetrics], expected: int) -> JobSummary:
    """traffic.metrics.merge_ranks over ranks from many host directories; completed only
    when all ``expected`` ranks reported."""
    summ = traffic_metrics.merge_ranks(ranks)
    return dataclasses.replace(summ, completed=len(ranks) == expected and summ.completed)


def verdict(s: RunSamples, spec: Any, w: WorkloadConfig, tdf: float,
            ranks: list[RankMetrics], headroom: float = 1.0) -> GuardRow:
    """The fidelity guard's columns of a run (topo/guard.py); a backend that measures
    nothing hidden (the simulator: nothing is) gives a valid run."""
    m = s.measures
    if m is None:   # the simulator hides nothing; its queues' tail drops are still a result
        return GuardRow.unmeasured(s.tail_drops)
    rates = [lk.bw_mbps for lk in spec.links if lk.bw_mbps]
    link_bps = (min(rates) * 1e6 / tdf) if rates else float("inf")
    return judge_run(m, ranks, s.events, link_bps, tdf,
                     w.mss + metrics.FRAME_HEADER_BYTES - 14,
                     w.failure.link if w.failure is not None else None, headroom).row
