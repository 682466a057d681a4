"""An in-process, discrete-event link that loses, delays and reorders packets.

It exercises the transport without sockets or root, deterministically (seeded), so tests can
assert exactly-once delivery under loss and heavy reordering, and experiments can study how a
reorder-tolerant transport behaves before running Mininet.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field
from typing import cast

from .transport import Ack, ReceiverFlow, SenderFlow, TransportConfig


@dataclass
class LinkModel:
    loss: float = 0.0          # probability a packet (data or ACK) is dropped
    delay: float = 50e-6       # base one-way delay, seconds
    jitter: float = 0.0        # extra uniform delay in [0, jitter): reorders packets
    gap: float = 1e-6          # sender pacing: seconds between packets
    seed: int = 0


@dataclass
class TransferResult:
    sender: SenderFlow
    receiver: ReceiverFlow
    delivered: list[int] = field(default_factory=list)   # seqs handed to the app, in order
    first_tx_arrivals: list[int] = field(default_factory=list)  # non-RETX arrivals, in order
    end_time: float = 0.0


def simulate_transfer(nbytes: int, cfg: TransportConfig, link: LinkModel,
                      max_time: float = 10.0) -> TransferResult:
    """Run one flow to completion (or `max_time` simulated seconds) over `link`."""
    rng = random.Random(link.seed)
    snd = SenderFlow(nbytes, cfg)
    rcv = ReceiverFlow(snd.npkts, cfg)
    res = TransferResult(snd, rcv)
    events: list[tuple[float, int, str, object]] = []
    n = 0

    def push(t: float, kind: str, obj: object) -> None:
        nonlocal n
        n += 1
        heapq.heappush(events, (t, n, kind, obj))

    def transmit(t: float, kind: str, obj: object) -> None:
        if rng.random() >= link.loss:
            push(t + link.delay + rng.random() * link.jitter, kind, obj)

    now = 0.0
    push(0.0, "send", None)
    push(cfg.ack_delay, "tick", None)
    while events and not (snd.done and rcv.done):
        now, _, kind, obj = heapq.heappop(events)
        if now > max_time:
            break
        if kind == "send":
            pkt = snd.next_packet(now)
            if pkt is not None:
                transmit(now, "data", pkt)
            if not snd.done:
                push(now + link.gap, "send", None)
        elif kind == "data":
            seq, retx = cast("tuple[int, bool]", obj)
            if not retx:
                res.first_tx_arrivals.append(seq)
            new, acks = rcv.on_data(seq, snd.length(seq), retx, now)
            if new:
                res.delivered.append(seq)
            for ack in acks:
                transmit(now, "ack", ack)
        elif kind == "ack":
            assert isinstance(obj, Ack)
            snd.on_ack(obj, now)
        elif kind == "tick":
            snd.on_tick(now)
            for ack in rcv.on_tick(now):
                transmit(now, "ack", ack)
            push(now + cfg.ack_delay, "tick", None)
    res.end_time = now
    return res
