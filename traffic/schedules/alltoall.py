"""AllToAll: every rank sends a distinct block to every other rank (expert parallelism,
embedding exchange). N(N-1) flows at once make it the most incast-prone collective."""

from __future__ import annotations

from .builder import LockstepBuilder
from .format import Schedule, ScheduleError
from .sizes import split

ALGORITHMS = ("direct", "scattered", "pairwise")


def check_alltoall(ranks: int, size: int, algorithm: str) -> None:
    if ranks < 2:
        raise ScheduleError("ranks", f"a collective needs >= 2 ranks, got {ranks}")
    if size < 1:
        raise ScheduleError("size", f"must be >= 1 byte, got {size}")
    if algorithm not in ALGORITHMS:
        raise ScheduleError("algorithm", f"unknown AllToAll algorithm {algorithm!r}, "
                            f"choose from {', '.join(ALGORITHMS)}")


def add_alltoall(b: LockstepBuilder, cid: int, matrix: list[list[int]], algorithm: str,
                 label: str) -> None:
    """Add an AllToAll whose block from i to j is matrix[i][j] bytes.

    direct: one step, all N-1 sends posted together (what NCCL does), each rank's in peer
    order 0, 1, …, N-1 — a sender serves its flows round-robin in that order, so every rank's
    first packet goes to rank 0, its second to rank 1: a synchronised incast at each receiver
    in turn; scattered: the same single step, rank r's sends posted in the order r+1, r+2, …,
    r-1 (MPICH's "scattered" AllToAll), so each round of first packets is a permutation;
    pairwise: N-1 steps, in step k rank r sends to r+k and receives from r-k, which bounds
    incast to one flow.
    """
    n = b.ranks
    if algorithm == "direct":
        steps = b.step(cid, label)
        for i in range(n):
            for j in range(n):
                b.transfer(steps, i, j, matrix[i][j])
    elif algorithm == "scattered":
        steps = b.step(cid, label)
        for i in range(n):
            for k in range(1, n):
                j = (i + k) % n
                b.transfer(steps, i, j, matrix[i][j])
    else:
        for k in range(1, n):
            steps = b.step(cid, f"{label} pairwise {k}")
            for i in range(n):
                b.transfer(steps, i, (i + k) % n, matrix[i][(i + k) % n])


def alltoall(ranks: int, size: int, algorithm: str = "direct") -> Schedule:
    """Uniform AllToAll; `size` is each rank's send buffer, split evenly over the N ranks
    (the block a rank keeps for itself is not sent)."""
    check_alltoall(ranks, size, algorithm)
    b = LockstepBuilder(ranks)
    cid = b.collective("alltoall", size)
    add_alltoall(b, cid, [split(size, ranks) for _ in range(ranks)], algorithm, "alltoall")
    return b.build("alltoall", size=size, algorithm=algorithm)
