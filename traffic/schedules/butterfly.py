"""Butterfly AllReduce algorithms for power-of-two rank counts (Thakur, Rabenseifner & Gropp).

Halving-doubling (Rabenseifner): reduce-scatter by recursive halving then all-gather by recursive
doubling; 2 log2(N) steps, same bytes as the ring but partners are far apart (r XOR d), which
crosses the fabric's core. Recursive doubling: log2(N) steps, each exchanging the whole buffer;
latency-optimal, bandwidth-heavy.
"""

from __future__ import annotations

from .builder import LockstepBuilder
from .format import Schedule, ScheduleError
from .sizes import split


def _check(ranks: int, size: int) -> None:
    if ranks < 2 or ranks & (ranks - 1):
        raise ScheduleError("ranks", f"butterfly algorithms need a power of two >= 2, got {ranks}")
    if size < 1:
        raise ScheduleError("size", f"must be >= 1 byte, got {size}")


def halving_doubling_allreduce(ranks: int, size: int) -> Schedule:
    _check(ranks, size)
    b = LockstepBuilder(ranks)
    cid = b.collective("halving_doubling_allreduce", size)
    chunks = split(size, ranks)
    lo, hi = [0] * ranks, [ranks] * ranks  # chunk range [lo, hi) each rank is responsible for
    d = ranks // 2
    while d >= 1:
        steps = b.step(cid, f"recursive-halving d={d}")
        for r in range(ranks):
            mid = (lo[r] + hi[r]) // 2
            give = (lo[r], mid) if r & d else (mid, hi[r])
            b.transfer(steps, r, r ^ d, sum(chunks[give[0]:give[1]]))
        for r in range(ranks):
            mid = (lo[r] + hi[r]) // 2
            lo[r], hi[r] = (mid, hi[r]) if r & d else (lo[r], mid)
        d //= 2
    d = 1
    while d < ranks:
        steps = b.step(cid, f"recursive-doubling d={d}")
        for r in range(ranks):
            b.transfer(steps, r, r ^ d, sum(chunks[lo[r]:hi[r]]))
        new = [(min(lo[r], lo[r ^ d]), max(hi[r], hi[r ^ d])) for r in range(ranks)]
        lo, hi = [x for x, _ in new], [y for _, y in new]
        d *= 2
    return b.build("halving_doubling_allreduce", size=size)


def recursive_doubling_allreduce(ranks: int, size: int) -> Schedule:
    _check(ranks, size)
    b = LockstepBuilder(ranks)
    cid = b.collective("recursive_doubling_allreduce", size)
    d = 1
    while d < ranks:
        steps = b.step(cid, f"recursive-doubling d={d}")
        for r in range(ranks):
            b.transfer(steps, r, r ^ d, size)
        d *= 2
    return b.build("recursive_doubling_allreduce", size=size)
