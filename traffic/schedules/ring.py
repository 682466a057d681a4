"""Ring collectives (Patarasuk & Yuan): bandwidth-optimal, each rank talks only to neighbours.

Rank r sends to (r+1) mod N and receives from (r-1) mod N. The buffer is cut into N chunks;
reduce-scatter takes N-1 steps, all-gather N-1 more, so AllReduce is 2(N-1) steps of S/N bytes.
"""

from __future__ import annotations

from .builder import LockstepBuilder
from .format import Schedule, ScheduleError
from .sizes import split


def _check(ranks: int, size: int) -> None:
    if ranks < 2:
        raise ScheduleError("ranks", f"a collective needs >= 2 ranks, got {ranks}")
    if size < 1:
        raise ScheduleError("size", f"must be >= 1 byte, got {size}")


def _reduce_scatter(b: LockstepBuilder, cid: int, chunks: list[int]) -> None:
    n = b.ranks
    for k in range(n - 1):
        steps = b.step(cid, f"reduce-scatter {k}")
        for r in range(n):
            b.transfer(steps, r, (r + 1) % n, chunks[(r - k) % n])


def _all_gather(b: LockstepBuilder, cid: int, chunks: list[int], owned: int) -> None:
    """Rank r starts owning chunk (r + owned) mod N (1 after reduce-scatter, 0 for a plain
    AllGather) and forwards its newest chunk one hop per step."""
    n = b.ranks
    for k in range(n - 1):
        steps = b.step(cid, f"all-gather {k}")
        for r in range(n):
            b.transfer(steps, r, (r + 1) % n, chunks[(r + owned - k) % n])


def ring_allreduce(ranks: int, size: int) -> Schedule:
    """AllReduce of a `size`-byte buffer: 2(N-1) steps of ~size/N bytes per rank."""
    _check(ranks, size)
    b = LockstepBuilder(ranks)
    cid = b.collective("ring_allreduce", size)
    chunks = split(size, ranks)
    _reduce_scatter(b, cid, chunks)
    _all_gather(b, cid, chunks, owned=1)
    return b.build("ring_allreduce", size=size)


def ring_allgather(ranks: int, size: int) -> Schedule:
    """AllGather into a `size`-byte output buffer (each rank contributes ~size/N)."""
    _check(ranks, size)
    b = LockstepBuilder(ranks)
    cid = b.collective("allgather", size)
    _all_gather(b, cid, split(size, ranks), owned=0)
    return b.build("allgather", size=size)


def ring_reduce_scatter(ranks: int, size: int) -> Schedule:
    """ReduceScatter of a `size`-byte input buffer (each rank ends with ~size/N reduced)."""
    _check(ranks, size)
    b = LockstepBuilder(ranks)
    cid = b.collective("reducescatter", size)
    _reduce_scatter(b, cid, split(size, ranks))
    return b.build("reducescatter", size=size)
