"""LB-BSP (Chen et al., "Semi-dynamic load balancing", SoCC 2018): re-size each worker's batch
at an iteration boundary to its measured speed, so that the next compute phases end together.

In a BSP iteration every worker computes on its share of the global batch, then all join a
collective; the slowest worker's compute decides when the collective can finish. If worker r took
c_r seconds for batch share b_r, its speed is b_r / c_r; giving each worker a share proportional
to its speed makes the predicted compute times equal (sum of shares stays 1). Pure: the runner
measures, this decides.
"""

from __future__ import annotations

from collections.abc import Sequence


def rebalance(shares: Sequence[float], compute_s: Sequence[float],
              floor: float = 0.05) -> list[float]:
    """New batch shares (summing to 1) proportional to each worker's measured speed.

    ``shares``: this iteration's batch fractions; ``compute_s``: the compute time each worker
    took on them. A worker that reported no time (0) keeps its share's speed as the mean's;
    ``floor``: no worker drops below this fraction of an even share (a worker measured slow
    once must still be measured next time).
    """
    n = len(shares)
    if n == 0 or len(compute_s) != n:
        raise ValueError(f"{len(shares)} shares for {len(compute_s)} compute times")
    if any(s <= 0 for s in shares):
        raise ValueError("batch shares must be > 0")
    speeds = [s / c if c > 0 else 0.0 for s, c in zip(shares, compute_s, strict=True)]
    known = [v for v in speeds if v > 0]
    if not known:
        return [1.0 / n] * n
    mean = sum(known) / len(known)
    speeds = [v if v > 0 else mean for v in speeds]
    total = sum(speeds)
    new = [max(v / total, floor / n) for v in speeds]
    norm = sum(new)
    return [v / norm for v in new]


def speed_factors(shares: Sequence[float]) -> list[float]:
    """Batch shares -> bsp_training's per-rank compute factors (1.0 = an even share)."""
    n = len(shares)
    return [s * n for s in shares]
