"""MoE-skewed AllToAll: the token dispatch (and combine) of expert parallelism.

A gate sends each token to its top-k experts; expert popularity is far from uniform, so a few
ranks receive most of the bytes. Popularity is either Zipf(alpha) over a seeded ranking of the
experts, or "hot": `hot` experts share `hot_fraction` of the tokens and the rest share the
remainder. One expert lives on each rank.
"""

from __future__ import annotations

import numpy as np

from .alltoall import add_alltoall, check_alltoall
from .builder import LockstepBuilder
from .format import Schedule, ScheduleError

SKEWS = ("zipf", "hot", "uniform")


def expert_popularity(experts: int, skew: str = "zipf", alpha: float = 1.2, hot: int = 1,
                      hot_fraction: float = 0.8, seed: int = 0) -> np.ndarray:
    """Probability that a token picks each expert; which experts are popular is seeded."""
    if skew == "zipf":
        if alpha < 0:
            raise ScheduleError("alpha", f"must be >= 0, got {alpha}")
        w = 1.0 / np.arange(1, experts + 1) ** alpha
    elif skew == "hot":
        if not 1 <= hot <= experts:
            raise ScheduleError("hot", f"must be in 1..{experts}, got {hot}")
        if not 0 <= hot_fraction <= 1:
            raise ScheduleError("hot_fraction", f"must be in [0, 1], got {hot_fraction}")
        cold = experts - hot
        w = np.array([hot_fraction / hot] * hot
                     + [(1 - hot_fraction) / cold if cold else 0.0] * cold)
    elif skew == "uniform":
        w = np.ones(experts)
    else:
        raise ScheduleError("skew", f"unknown skew {skew!r}, choose from {', '.join(SKEWS)}")
    p = w / w.sum()
    return p[np.random.default_rng(seed).permutation(experts).argsort()]


def _largest_remainder(total: int, p: np.ndarray) -> list[int]:
    exact = total * p
    base = np.floor(exact).astype(int)
    rest = total - int(base.sum())
    order = np.argsort(-(exact - base), kind="stable")
    base[order[:rest]] += 1
    return [int(x) for x in base]


def moe_alltoall(ranks: int, size: int, skew: str = "zipf", alpha: float = 1.2, hot: int = 1,
                 hot_fraction: float = 0.8, tokens: int = 0, seed: int = 0,
                 combine: bool = True, algorithm: str = "direct") -> Schedule:
    """`size` = bytes each rank dispatches (tokens x top-k x token bytes).

    tokens == 0: blocks follow the popularity exactly (largest-remainder rounding);
    tokens > 0: each rank samples that many token->expert choices (multinomial, seeded), so
    blocks are random with the popularity as mean. combine adds the reverse AllToAll.
    """
    check_alltoall(ranks, size, algorithm)
    if tokens < 0:
        raise ScheduleError("tokens", f"must be >= 0, got {tokens}")
    if tokens > size:
        raise ScheduleError("tokens", f"{tokens} tokens do not fit in {size} bytes")
    p = expert_popularity(ranks, skew, alpha, hot, hot_fraction, seed)
    rng = np.random.default_rng(seed + 1)
    matrix = []
    for _ in range(ranks):
        if tokens:
            counts = rng.multinomial(tokens, p)
            matrix.append([int(c) * (size // tokens) for c in counts])
        else:
            matrix.append(_largest_remainder(size, p))
    b = LockstepBuilder(ranks)
    cid = b.collective("moe_dispatch", size)
    add_alltoall(b, cid, matrix, algorithm, "moe dispatch")
    if combine:
        cid = b.collective("moe_combine", size)
        add_alltoall(b, cid, [list(col) for col in zip(*matrix, strict=True)], algorithm,
                     "moe combine")
    return b.build("moe_alltoall", size=size, skew=skew, alpha=alpha, hot=hot,
                   hot_fraction=hot_fraction, tokens=tokens, seed=seed,
                   popularity=[float(x) for x in p])
