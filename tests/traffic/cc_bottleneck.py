"""A pure in-process bottleneck: flows driven by traffic.congestion algorithms share one queue.

One FIFO served at ``rate_bps``, CE-marking packets that find at least ``k`` packets queued
(fabric.p4's step marking), a one-way ``delay`` each way, one ACK per packet echoing its mark
and giving an RTT sample. Each sender's NIC serialises at the same line rate and, for a
rate-based algorithm, paces at the algorithm's rate; a window-based one stops at its window.
No loss (the queue is unbounded): the tests look at what the algorithms do to the queue.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from traffic.congestion import CcContext, CongestionControl, make_cc

PKT = 1500


@dataclass
class Bottleneck:
    cc: str
    flows: int = 4
    rate_bps: float = 100e9
    delay: float = 5e-6
    k: float = 12
    params: dict | None = None
    samples: list[tuple[float, int]] = field(default_factory=list)   # (t, queue length)
    rtts: list[tuple[float, float]] = field(default_factory=list)    # (t, RTT)
    delivered: list[list[float]] = field(default_factory=list)       # per flow: ACK times
    rates: list[list[tuple[float, float]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        ctx = CcContext(self.rate_bps, PKT, 10_000, 2 * self.delay + PKT * 8 / self.rate_bps)
        self.algs: list[CongestionControl] = [make_cc(self.cc, ctx, self.params)
                                              for _ in range(self.flows)]
        self.delivered = [[] for _ in range(self.flows)]
        self.rates = [[] for _ in range(self.flows)]

    def run(self, until: float, marks_off_at: float = math.inf,
            starts: list[float] | None = None) -> Bottleneck:
        tx = PKT * 8 / self.rate_bps
        ev: list[tuple[float, int, str, int, float]] = []
        n = 0

        def push(t: float, kind: str, f: int, x: float = 0.0) -> None:
            nonlocal n
            n += 1
            heapq.heappush(ev, (t, n, kind, f, x))

        inflight = [0] * self.flows
        nic_free = [0.0] * self.flows
        pace = [0.0] * self.flows
        waiting = [False] * self.flows
        queue: list[tuple[int, float, bool]] = []   # (flow, send time, marked)
        head = 0
        busy_until = 0.0
        for f, t0 in enumerate(starts or [0.0] * self.flows):
            push(t0, "try", f)
        while ev:
            t, _, kind, f, x = heapq.heappop(ev)
            if t > until:
                break
            if kind == "try":
                waiting[f] = False
                a = self.algs[f]
                a.advance(t)
                if inflight[f] >= a.window:
                    continue                      # an ACK will try again
                go = max(t, nic_free[f], pace[f] if a.rate_bps is not None else 0.0)
                if go > t:
                    if not waiting[f]:
                        waiting[f] = True
                        push(go, "try", f)
                    continue
                inflight[f] += 1
                nic_free[f] = t + tx
                a.on_send(t, PKT)
                if a.rate_bps is not None:
                    pace[f] = max(pace[f], t) + PKT * 8 / a.rate_bps
                push(t + tx + self.delay, "arrive", f, t)
                push(nic_free[f], "try", f)
                waiting[f] = True
            elif kind == "arrive":
                qlen = len(queue) - head
                marked = qlen >= self.k and t < marks_off_at
                queue.append((f, x, marked))
                self.samples.append((t, qlen + 1))
                if qlen == 0:
                    busy_until = max(busy_until, t) + tx
                    push(busy_until, "depart", -1)
            elif kind == "depart":
                g, sent, marked = queue[head]
                head += 1
                push(t + self.delay, "ack", g, sent if not marked else -sent - 1)
                if len(queue) - head:
                    busy_until = t + tx
                    push(busy_until, "depart", -1)
                if head > 4096:
                    del queue[:head]
                    head = 0
            else:  # ack
                marked = x < 0
                sent = -x - 1 if marked else x
                inflight[f] -= 1
                a = self.algs[f]
                rtt = t - sent
                self.rtts.append((t, rtt))
                a.on_ack(t, 1, int(marked), rtt)
                self.delivered[f].append(t)
                if a.rate_bps is not None:
                    self.rates[f].append((t, a.rate_bps))
                if not waiting[f]:
                    push(t, "try", f)
        return self

    def throughputs(self, t0: float, t1: float) -> list[float]:
        """Packets per second each flow got acknowledged in [t0, t1)."""
        return [sum(1 for t in d if t0 <= t < t1) / (t1 - t0) for d in self.delivered]

    def mean_queue(self, t0: float, t1: float) -> float:
        q = [x for t, x in self.samples if t0 <= t < t1]
        return sum(q) / len(q)

    def mean_rtt(self, t0: float, t1: float) -> float:
        r = [x for t, x in self.rtts if t0 <= t < t1]
        return sum(r) / len(r)


def jain(xs: list[float]) -> float:
    """Jain's fairness index: 1 for equal shares, 1/n for one flow taking everything."""
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))
