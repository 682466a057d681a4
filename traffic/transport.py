"""A reliable, reorder-tolerant transport for one message (flow), free of I/O and clocks.

Packet spraying delivers out of order by design. TCP reads reordering as loss (3 dupACKs) and
halves its window; RDMA's go-back-N retransmits everything after the hole. This transport, like
the selective-repeat designs of IRN and UEC, keeps a per-flow bitmap at the receiver, accepts any
order, and retransmits only what is lost: on a timeout, or on a NACK that the receiver sends only
once a hole has stayed open while `nack_gap` later packets arrived (so plain reordering does not
trigger it). Callers pass `now` (seconds) in, so the same code runs in the host agent, in the
in-process lossy channel of the tests, and in a simulator.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TransportConfig:
    mss: int = 1400           # payload bytes per packet (fits a 1500-byte MTU with our headers)
    window: int = 256         # packets a flow may have unacknowledged
    rto: float = 0.02         # retransmission timeout, seconds
    ack_every: int = 8        # receiver coalesces this many packets per ACK
    ack_delay: float = 0.0005  # ... but never holds an ACK longer than this
    nack_gap: int = 64        # NACK a hole once this many later packets arrived


@dataclass(frozen=True)
class Ack:
    cum: int        # every seq < cum has arrived
    base: int       # first sequence number the SACK bitmap describes
    sack: int       # bit i: seq base+i has arrived
    nack: bool = False
    ce: int = 0     # ECN echo, bit i: seq base+i arrived CE-marked (aligned with ``sack``)


SACK_BITS = 64
_BITCHAR = bytes.maketrans(b"\x00\x01", b"01")


def packets_for(nbytes: int, mss: int) -> int:
    return max(1, math.ceil(nbytes / mss))


class SenderFlow:
    """Segments `nbytes` into packets and decides which sequence number to send next."""

    def __init__(self, nbytes: int, cfg: TransportConfig) -> None:
        self.cfg = cfg
        self.nbytes = nbytes
        self.npkts = packets_for(nbytes, cfg.mss)
        self.acked = bytearray(self.npkts)
        self.n_acked = 0
        self.cum = 0
        self.next_new = 0
        self.sent_at = [0.0] * self.npkts
        self._timeline: deque[tuple[float, int]] = deque()
        self._retx: deque[int] = deque()
        self._queued = bytearray(self.npkts)
        self.packets_sent = 0
        self.retransmissions = 0
        self.timeouts = 0
        self.nacks = 0
        self.start: float | None = None
        self.finish: float | None = None
        self.newly_acked: list[int] | None = None
        """When a list (a path policy wants per-packet feedback): every sequence number that
        an ACK newly acknowledged is appended, for the caller to drain after ``on_ack``."""

    @property
    def done(self) -> bool:
        return self.n_acked == self.npkts

    def length(self, seq: int) -> int:
        """Payload bytes carried by packet `seq` (the last one is short)."""
        if seq == self.npkts - 1:
            return self.nbytes - seq * self.cfg.mss
        return self.cfg.mss

    def next_packet(self, now: float) -> tuple[int, bool] | None:
        """(seq, is_retransmission) to put on the wire now, or None if blocked."""
        while self._retx:
            seq = self._retx.popleft()
            self._queued[seq] = 0
            if not self.acked[seq]:
                self.retransmissions += 1
                return self._sent(seq, now), True
        if self.next_new < self.npkts and self.next_new - self.n_acked < self.cfg.window:
            if self.start is None:
                self.start = now
            self.next_new += 1
            return self._sent(self.next_new - 1, now), False
        return None

    def _sent(self, seq: int, now: float) -> int:
        self.sent_at[seq] = now
        self._timeline.append((now, seq))
        self.packets_sent += 1
        return seq

    def _mark(self, seq: int) -> None:
        if seq < self.npkts and not self.acked[seq]:
            self.acked[seq] = 1
            self.n_acked += 1
            if self.newly_acked is not None:
                self.newly_acked.append(seq)

    def _queue(self, seq: int) -> None:
        if not self.acked[seq] and not self._queued[seq]:
            self._queued[seq] = 1
            self._retx.append(seq)

    def on_ack(self, ack: Ack, now: float) -> None:
        cum = min(ack.cum, self.npkts)
        for seq in range(self.cum, cum):
            self._mark(seq)
        self.cum = max(self.cum, cum)
        bits = ack.sack
        while bits:
            low = bits & -bits
            self._mark(ack.base + low.bit_length() - 1)
            bits ^= low
        if ack.nack and ack.cum < self.npkts and not self.acked[ack.cum]:
            self.nacks += 1
            # a NACK for a packet we resent less than an RTO ago is stale; let the timer act
            if now - self.sent_at[ack.cum] >= self.cfg.rto / 4:
                self._queue(ack.cum)
        if self.done and self.finish is None:
            self.finish = now

    def next_timeout(self) -> float | None:
        """When ``on_tick`` can next act: the oldest transmission still on the timeline plus
        the RTO (None: nothing in flight). It changes only by a send onto an empty timeline
        or by ``on_tick``, so a caller with many flows can keep them in a heap by it."""
        tl = self._timeline
        return tl[0][0] + self.cfg.rto if tl else None

    def on_tick(self, now: float) -> None:
        """Queue for retransmission every packet unacknowledged for longer than the RTO."""
        tl = self._timeline
        while tl and tl[0][0] + self.cfg.rto <= now:
            t, seq = tl.popleft()
            if self.acked[seq] or self.sent_at[seq] != t:
                continue  # acknowledged meanwhile, or a newer copy is in flight
            self.timeouts += 1
            self._queue(seq)


@dataclass
class ReceiverStats:
    packets: int = 0          # arrivals, duplicates included
    duplicates: int = 0
    reordered: int = 0        # first transmissions arriving after a higher sequence number
    reorder_distance: dict[int, int] = field(default_factory=dict)  # distance -> count


class ReceiverFlow:
    """Tracks which packets of one flow arrived; produces (S)ACKs and counts reordering.

    Reordering (RFC 4737's notion): a packet whose sequence number is below the highest seen so
    far. Its distance is highest - seq. Retransmissions (flag RETX) are late because they were
    lost, not reordered, so they are not counted.
    """

    def __init__(self, npkts: int, cfg: TransportConfig) -> None:
        self.cfg = cfg
        self.npkts = npkts
        self.got = bytearray(npkts)
        self.ce = bytearray(npkts)   # 1: the packet arrived CE-marked (echoed in the ACKs)
        self.any_ce = False
        self.received = 0
        self.bytes = 0
        self.cum = 0
        self.highest = -1
        self.stats = ReceiverStats()
        self._pending: list[int] = []
        self._last_ack = 0.0
        self._nacked: tuple[int, float] | None = None
        self.start: float | None = None
        self.finish: float | None = None

    @property
    def done(self) -> bool:
        return self.received == self.npkts

    def on_data(self, seq: int, length: int, retx: bool, now: float,
                ce: bool = False) -> tuple[bool, list[Ack]]:
        """Account one arriving packet (``ce``: its IP ECN field was CE); returns (it was new,
        ACKs to send now)."""
        if not 0 <= seq < self.npkts:
            return False, []
        if ce:
            self.ce[seq] = 1
            self.any_ce = True
        st = self.stats
        st.packets += 1
        if self.start is None:
            self.start = now
        if self.got[seq]:
            st.duplicates += 1
            self._pending.append(seq)
            return False, self.ack(now)  # our earlier ACK may have been lost
        self.got[seq] = 1
        self.received += 1
        self.bytes += length
        if seq < self.highest and not retx:
            st.reordered += 1
            d = self.highest - seq
            st.reorder_distance[d] = st.reorder_distance.get(d, 0) + 1
        self.highest = max(self.highest, seq)
        got = self.got
        while self.cum < self.npkts and got[self.cum]:
            self.cum += 1
        self._pending.append(seq)
        if self.done:
            self.finish = now
            return True, self.ack(now)
        if self.highest - self.cum >= self.cfg.nack_gap:
            nk = self._nacked
            if nk is None or nk[0] != self.cum or now - nk[1] >= self.cfg.rto:
                self._nacked = (self.cum, now)
                return True, self.ack(now, nack=True)
        if len(self._pending) >= self.cfg.ack_every or retx:
            return True, self.ack(now)
        return True, []

    @property
    def ack_pending(self) -> bool:
        return bool(self._pending)

    def on_tick(self, now: float) -> list[Ack]:
        if self._pending and now - self._last_ack >= self.cfg.ack_delay:
            return self.ack(now)
        return []

    def ack(self, now: float, nack: bool = False) -> list[Ack]:
        """ACKs covering every packet that arrived since the last ACK.

        Each ACK's bitmap covers SACK_BITS sequence numbers from its base; under heavy
        reordering the new arrivals are scattered, so several ACKs may be needed. Without that
        a packet far beyond a hole would go unacknowledged and time out needlessly. Every
        arrival lies in some ACK's bitmap (the base is the lowest one not yet covered, even
        below ``cum``), so its CE mark is echoed per packet in that ACK's ``ce`` bitmap.
        """
        self._last_ack = now
        pending = sorted(self._pending)
        self._pending.clear()
        acks = []
        i = 0
        while i < len(pending):
            base = pending[i]
            window = self.got[base:base + SACK_BITS]
            # one byte (0/1) per packet -> one bit: seq base is bit 0
            sack = int(window[::-1].translate(_BITCHAR), 2) if window else 0
            ce = 0
            if self.any_ce:
                cw = self.ce[base:base + SACK_BITS]
                ce = int(cw[::-1].translate(_BITCHAR), 2) if cw else 0
            acks.append(Ack(self.cum, base, sack, nack, ce))
            nack = False
            while i < len(pending) and pending[i] < base + SACK_BITS:
                i += 1
        if not acks or nack:
            acks.append(Ack(self.cum, self.cum + 1, 0, nack))
        return acks
