"""Helper for lock-step collective algorithms: every rank gets a step, transfers pair them up."""

from __future__ import annotations

from .format import Collective, Recv, Schedule, Send, Step


class LockstepBuilder:
    """Allocates flow ids and puts each transfer's send and receive in the same step index,
    which is how ring and butterfly algorithms are described in the literature."""

    def __init__(self, ranks: int, first_flow: int = 0) -> None:
        self.ranks = ranks
        self.programs: list[list[Step]] = [[] for _ in range(ranks)]
        self.collectives: list[Collective] = []
        self.next_flow = first_flow

    def collective(self, name: str, nbytes: int) -> int:
        cid = len(self.collectives)
        self.collectives.append(Collective(cid, name, nbytes))
        return cid

    def step(self, collective: int, label: str) -> list[Step]:
        """Append one (empty) step to every rank and return them, indexed by rank."""
        steps = [Step(collective=collective, label=label) for _ in range(self.ranks)]
        for prog, st in zip(self.programs, steps, strict=True):
            prog.append(st)
        return steps

    def transfer(self, steps: list[Step], src: int, dst: int, nbytes: int) -> None:
        """src sends nbytes to dst in this step; dst's step waits for it. Empty chunks vanish."""
        if nbytes <= 0 or src == dst:
            return
        flow = self.next_flow
        self.next_flow += 1
        steps[src].sends.append(Send(dst, nbytes, flow))
        steps[dst].recvs.append(Recv(src, flow))

    def build(self, name: str, **meta: object) -> Schedule:
        s = Schedule(name=name, ranks=self.ranks, programs=self.programs,
                     collectives=self.collectives, meta=dict(meta))
        s.validate()
        return s
