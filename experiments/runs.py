"""What the hosts of one run left behind, read back: their rank files, merged into the run's
summary, and the fidelity guard's verdict on the run. Shared by the runner, the calibration
ramp and the fidelity experiment (so that none of them imports another for it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from topo.guard import judge_run
from traffic import metrics as traffic_metrics

from . import metrics
from .backends import RunSamples
from .config import WorkloadConfig


def load_ranks(out: Path) -> list[dict[str, Any]]:
    """Every rank<r>.json under a run's traffic directory (one per rank)."""
    return [json.loads(p.read_text()) for p in sorted(out.rglob("rank*.json"))]


def merge_ranks(ranks: list[dict[str, Any]], expected: int) -> dict[str, Any]:
    """traffic.metrics.merge_ranks over ranks from many host directories, plus what a run of
    the runner needs: completion against the expected rank count, agents' errors, packets."""
    summ = traffic_metrics.merge_ranks(ranks)
    summ.update(
        completed=len(ranks) == expected and summ["completed"],
        errors=[f"rank {r['rank']}: {r['error']}" for r in ranks if r.get("error")],
        packets_sent=sum(r["totals"].get("packets_sent", 0) for r in ranks),
        tcp_total_retrans=_tcp_sum(ranks, "tcp_total_retrans"),
        tcp_reord_seen=_tcp_sum(ranks, "tcp_reord_seen"))
    return summ


def _tcp_sum(ranks: list[dict[str, Any]], key: str) -> int | None:
    vals = [r["totals"][key] for r in ranks if r["totals"].get(key) is not None]
    return sum(vals) if vals else None


def verdict(s: RunSamples, spec: Any, w: WorkloadConfig, tdf: float,
            ranks: list[dict[str, Any]], headroom: float = 1.0) -> dict[str, Any]:
    """The fidelity guard's columns of a run (topo/guard.py); a backend that measures
    nothing hidden (the simulator: nothing is) gives a valid run."""
    m = s.extra.get("measures")
    if m is None:   # the simulator hides nothing; its queues' tail drops are still a result
        sim = s.extra.get("sim") or {}
        return {"valid": True, "invalid_reason": None,
                **({"drops_p4_queue": sim["tail_drops"]} if "tail_drops" in sim else {})}
    rates = [lk.bw_mbps for lk in spec.links if lk.bw_mbps]
    link_bps = (min(rates) * 1e6 / tdf) if rates else float("inf")
    return judge_run(m, ranks, s.events, link_bps, tdf,
                     w.mss + metrics.FRAME_HEADER_BYTES - 14,
                     w.failure.link if w.failure is not None else None, headroom).row
