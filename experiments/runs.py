"""What the hosts of one run left behind, read back: their rank files, merged into the run's
summary, and the fidelity guard's verdict on the run. Shared by the runner, the calibration
ramp and the fidelity experiment (so that none of them imports another for it)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from model.dilation import to_fabric_time
from topo.guard import judge_run
from traffic import metrics as traffic_metrics
from traffic.metrics import JobSummary, RankMetrics

from . import metrics
from .backends import RunSamples
from .config import WorkloadConfig


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
            ranks: list[RankMetrics], headroom: float = 1.0) -> dict[str, Any]:
    """The fidelity guard's columns of a run (topo/guard.py); a backend that measures
    nothing hidden (the simulator: nothing is) gives a valid run."""
    m = s.measures
    if m is None:   # the simulator hides nothing; its queues' tail drops are still a result
        return {"valid": True, "invalid_reason": None,
                **({"drops_p4_queue": s.tail_drops} if s.tail_drops is not None else {})}
    rates = [lk.bw_mbps for lk in spec.links if lk.bw_mbps]
    link_bps = (min(rates) * 1e6 / tdf) if rates else float("inf")
    return judge_run(m, ranks, s.events, link_bps, tdf,
                     w.mss + metrics.FRAME_HEADER_BYTES - 14,
                     w.failure.link if w.failure is not None else None, headroom).row
