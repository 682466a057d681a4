"""Ring collectives (Patarasuk & Yuan): bandwidth-optimal, each rank talks only to neighbours.

Rank r sends to (r+1) mod N and receives from (r-1) mod N. The buffer is cut into N chunks;
reduce-scatter takes N-1 steps, all-gather N-1 more, so AllReduce is 2(N-1) steps of S/N bytes.

By default a step waits for its receive and for its own send's last ACK (lock-step: one RTT
per step). With ``slots`` (NCCL's NCCL_STEPS: the send buffer's slots) the ring is pipelined
as NCCL's is: a step waits only for its receive (the data dependency) and for the send of the
step ``slots - 1`` before it, so at most ``slots`` steps' sends are un-ACKed per rank; a
consecutive step's send to the same neighbour then overlaps the previous one on one connection
(traffic.transport.Connection). The wire bytes, and so the ideal bound, are the same.
"""

from __future__ import annotations

from .builder import LockstepBuilder
from .format import Schedule, ScheduleError
from .sizes import split

MAX_SLOTS = 64


def pipeline(s: Schedule, slots: int) -> Schedule:
    """``s`` with every rank's step k waiting for the sends of its step k - slots + 1 instead
    of its own (slots 0: unchanged; 1: the same as lock-step)."""
    if not 0 <= slots <= MAX_SLOTS:
        raise ScheduleError("slots", f"must be 0 (lock-step) .. {MAX_SLOTS}, got {slots}")
    if slots <= 1:
        return s
    for prog in s.programs:
        for k, st in enumerate(prog):
            st.wait_sends = False
            if k - slots + 1 >= 0:
                st.wait_acked = [x.flow for x in prog[k - slots + 1].sends]
    s.meta["slots"] = slots
    return s.validate()


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


def ring_allreduce(ranks: int, size: int, slots: int = 0) -> Schedule:
    """AllReduce of a `size`-byte buffer: 2(N-1) steps of ~size/N bytes per rank (``slots``:
    pipelined, see the module)."""
    _check(ranks, size)
    b = LockstepBuilder(ranks)
    cid = b.collective("ring_allreduce", size)
    chunks = split(size, ranks)
    _reduce_scatter(b, cid, chunks)
    _all_gather(b, cid, chunks, owned=1)
    return pipeline(b.build("ring_allreduce", size=size), slots)


def ring_allgather(ranks: int, size: int, slots: int = 0) -> Schedule:
    """AllGather into a `size`-byte output buffer (each rank contributes ~size/N)."""
    _check(ranks, size)
    b = LockstepBuilder(ranks)
    cid = b.collective("allgather", size)
    _all_gather(b, cid, split(size, ranks), owned=0)
    return pipeline(b.build("allgather", size=size), slots)


def ring_reduce_scatter(ranks: int, size: int, slots: int = 0) -> Schedule:
    """ReduceScatter of a `size`-byte input buffer (each rank ends with ~size/N reduced)."""
    _check(ranks, size)
    b = LockstepBuilder(ranks)
    cid = b.collective("reducescatter", size)
    _reduce_scatter(b, cid, split(size, ranks))
    return pipeline(b.build("reducescatter", size=size), slots)
