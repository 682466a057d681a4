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

import dataclasses
import math
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from model.dims import Dim, dim

from .congestion import (
    DEFAULT_CC,
    REGISTRY,
    CcContext,
    CongestionControl,
    RttCache,
    RttEstimator,
    cc_params,
    make_cc,
)
from .wire import F_ACK, F_ACKREQ, F_DUP, F_LAST, F_NACK, F_RETX, F_TRIM


@dataclass(frozen=True)
class TransportConfig:
    """The transport's knobs (times in seconds of the fabric the run models: an emulation
    dilated by TDF gets them × TDF, model/dilation.py, each field's Dim). ``window`` caps
    the packets in flight whatever the congestion control says; ``rto`` is the RTO before the
    first RTT sample (RFC 6298's initial RTO), ``min_rto``/``max_rto`` clamp the estimate
    (equal: a fixed timer, the old behaviour); ``ack_delay`` is the receiver's delayed-ACK
    timer and ``tick`` the granularity at which RTO and delayed-ACK timers are looked at (a
    NIC's timer wheel: a timer fires up to one tick late), both backends alike; ``cc`` names
    the algorithm in traffic.congestion's registry and ``cc_params`` its parameters as sorted
    (name, value) pairs (hashable, so configs can key caches)."""

    mss: int = 1400           # payload bytes per packet (fits a 1500-byte MTU with our headers)
    window: int = 256         # packets a flow may have unacknowledged, at most
    rto: float = dim(Dim.TIME, 0.02)   # retransmission timeout before the first RTT sample
    ack_every: int = 8        # receiver coalesces this many packets per ACK
    ack_delay: float = dim(Dim.TIME, 0.0005)  # ... but never holds an ACK longer than this
    nack_gap: int = dim(Dim.COUNT, 64)   # NACK a hole once this many later packets arrived
    min_rto: float = dim(Dim.TIME, 0.001)
    max_rto: float = dim(Dim.TIME, 1.0)
    cc: str = DEFAULT_CC.value
    cc_params: tuple[tuple[str, float], ...] = dim(Dim.PARAMS, ())
    base_rtt: float = dim(Dim.TIME, 0.0)   # the fabric's unloaded RTT if known (NSCC's target)
    tick: float = dim(Dim.TIME, 0.0005)   # timer granularity for RTOs and delayed ACKs
    pace_credit: float = dim(Dim.TIME, 0.0)
    """How far a rate-based algorithm's pacer may fall behind its schedule and catch up in a
    burst (a token bucket this long at the current rate; 0: strict, never ahead of
    ``paced_until``). A sender that looks at its flows once per loop pass, with one clock
    reading for the pass, needs it: strict pacing lets one packet go per pass whatever the
    rate. traffic.run's --pace-credit-ms sets it and the agent's NIC credit
    (AgentConfig.pace_credit) alike; experiments pass ``pace_credit_us`` to both backends."""

    def with_cc(self, cc: str, params: dict[str, float] | None = None, **kw: Any) \
            -> TransportConfig:
        """This config with algorithm ``cc`` and its parameters (validated: ValueError names
        the bad parameter) and any other fields in ``kw``."""
        cc_params(cc, params)
        return dataclasses.replace(self, cc=str(cc),
                                   cc_params=tuple(sorted((params or {}).items())), **kw)

    @property
    def uses_ecn(self) -> bool:
        """The algorithm reacts to CE marks: send ECT(0)."""
        return REGISTRY[self.cc].uses_ecn


WIRE_OVERHEAD = 14 + 20 + 8 + 28
"""Ethernet, IPv4, UDP and collective-header bytes around a payload (traffic.frames.OVERHEAD):
what a paced sender counts per packet besides the payload."""
PACE_SLACK = 1e-12
INITIAL_RTO_RTTS = 3
"""The initial RTO is at least this many of the fabric's unloaded RTTs (TransportConfig.
base_rtt, when the configuration knows it)."""


@dataclass(frozen=True)
class Ack:
    cum: int        # every seq < cum has arrived
    base: int       # first sequence number the SACK bitmap describes
    sack: int       # bit i: seq base+i has arrived
    nack: bool = False
    ce: int = 0     # ECN echo, bit i: seq base+i arrived CE-marked (aligned with ``sack``)
    dup: bool = False   # a duplicate arrived since the previous ACK (D-SACK, RFC 2883)
    trimmed: bool = False   # a NACK of packet ``base``, which a switch trimmed (F_TRIM)

    @property
    def flags(self) -> int:
        """The header flags of this ACK on the wire."""
        return F_ACK | (F_NACK if self.nack else 0) | (F_DUP if self.dup else 0) | \
            (F_TRIM if self.trimmed else 0)

    @classmethod
    def parse(cls, flags: int, cum: int, base: int, sack: int, ce: int) -> Ack:
        """The ACK an arriving frame with header ``flags`` and these ACK fields carries."""
        return cls(cum, base, sack, bool(flags & F_NACK), ce, bool(flags & F_DUP),
                   bool(flags & F_TRIM))


SACK_BITS = 64
_NO_TIMES = array("d")
"""A finished sender's send times (none are read once every packet is acknowledged)."""
_BITCHAR = bytes.maketrans(b"\x00\x01", b"01")
_NO_ACKS: tuple[Ack, ...] = ()
"""What ``on_data`` returns when no ACK is due (shared: none is built per packet)."""


def packets_for(nbytes: int, mss: int) -> int:
    return max(1, math.ceil(nbytes / mss))


class SenderFlow:
    """Segments `nbytes` into packets and decides which sequence number to send next.

    What it may send is the congestion control's: at most ``window`` packets beyond the
    acknowledged ones, and, when the algorithm paces, no packet before ``paced_until``. ACKs
    feed it the packets they newly acknowledge, how many of those were CE-echoed, and an RTT
    sample taken from the newest of them if it was sent once (Karn); the RTO comes from
    RFC 6298's estimator and backs off on each timeout. ``line_rate_bps`` is the sender's NIC
    rate (DCQCN starts at it; NSCC sizes its delay target from it); with ``rtt_cache`` the
    estimator starts from the last one to ``peer``. With ``conn`` the message joins that
    connection (``Connection``): its algorithm, RTT estimate, pacer and window are the
    connection's, and its new packets go after those of the messages posted before it.
    """

    def __init__(self, nbytes: int, cfg: TransportConfig, line_rate_bps: float = 1e9,
                 cc: CongestionControl | None = None,
                 rtt_cache: RttCache | None = None, peer: Hashable = None,
                 conn: Connection | None = None) -> None:
        self.cfg = cfg
        self.nbytes = nbytes
        self.npkts = packets_for(nbytes, cfg.mss)
        self.acked = bytearray(self.npkts)
        self.n_acked = 0
        self.cum = 0
        self.next_new = 0
        # per-packet state as flat arrays (a 2 MB flow of 4 KB packets: ~10 KB, where lists
        # of floats and a deque of (time, seq) tuples took ~60 KB; a k=16 permutation keeps
        # 1,024 of them in flight)
        self.sent_at = array("d", bytes(8 * self.npkts))
        self.sends = bytearray(self.npkts)   # transmissions per packet (saturating at 255)
        self._tl_t = array("d")   # the timeline: every transmission's time, in send order,
        self._tl_s = array("q")   # its sequence number, and
        self._tl_head = 0         # the first entry not yet looked at by on_tick
        self._retx: deque[int] = deque()
        self._queued = bytearray(self.npkts)
        if conn is None:
            cc = cc or make_cc(cfg.cc, CcContext(line_rate_bps, cfg.mss + WIRE_OVERHEAD,
                                                 cfg.window, cfg.base_rtt),
                               dict(cfg.cc_params))
            lo = min(cfg.min_rto, cfg.max_rto)
            # before any sample: never below a few unloaded RTTs of the fabric, when known (a
            # data-centre initial RTO on a slow fabric would resend every first window)
            first = max(cfg.rto, INITIAL_RTO_RTTS * cfg.base_rtt)
            conn = Connection(cc, rtt_cache.estimator(peer, first, lo, cfg.max_rto)
                              if rtt_cache else RttEstimator(first, lo, cfg.max_rto))
        self.conn = conn
        self.cc = conn.cc
        self.rtt = conn.rtt
        conn.sending.append(self)
        conn.active.append(self)
        self.owner: Any = None
        """The caller's object for this message (the simulator's flow), so that an ACK of one
        message of a connection can wake the others that its window held back."""
        self.line_rate_bps = line_rate_bps
        self._paced = self.cc.rate_bps is not None
        self._pace_credit = cfg.pace_credit
        self._wire_full = cfg.mss + WIRE_OVERHEAD
        self._wire_last = self.length(self.npkts - 1) + WIRE_OVERHEAD
        self.packets_sent = 0
        self.ack_request = False
        """The packet ``next_packet`` just returned should be ACKed at once (F_ACKREQ): after
        it the window is full or nothing new is left to send."""
        self.spurious = 0
        """Retransmissions the receiver reported as duplicates (D-SACK, RFC 3708's sender-side
        detection): one copy of each arrived already."""
        self.retransmissions = 0
        self.timeouts = 0
        self.nacks = 0
        self.trim_nacks = 0
        """NACKs of trimmed packets (F_TRIM; included in ``nacks``): each resent at once."""
        self.ce_acked = 0
        """Packets newly acknowledged whose ECN echo was CE."""
        self._w_sum = 0.0
        self._r_sum = 0.0
        self._n_acks = 0
        self.start: float | None = None
        self.finish: float | None = None
        self.newly_acked: list[int] | None = None
        """When a list (a path policy wants per-packet feedback): every sequence number that
        an ACK newly acknowledged is appended, for the caller to drain after ``on_ack``."""

    @property
    def done(self) -> bool:
        return self.n_acked == self.npkts

    @property
    def paced_until(self) -> float:
        """Earliest time the pacer lets the next packet go (rate-based algorithms): the
        connection's, shared by its messages."""
        return self.conn.paced_until

    @property
    def window(self) -> int:
        """Packets that may be unacknowledged now: the algorithm's window within [1, cap]."""
        w = self.cc.window
        return self.cfg.window if w >= self.cfg.window else max(1, int(w))

    @property
    def rate_bps(self) -> float | None:
        return self.cc.rate_bps

    @property
    def rto(self) -> float:
        return self.rtt.rto

    @property
    def mean_window(self) -> float | None:
        """The window averaged over the ACKs that arrived (None before the first)."""
        return self._w_sum / self._n_acks if self._n_acks else None

    @property
    def mean_rate_bps(self) -> float | None:
        """The pacing rate averaged over the ACKs (None: not paced, or no ACK yet)."""
        return self._r_sum / self._n_acks if self._n_acks and self._paced else None

    def held(self, now: float) -> bool:
        """The pacer holds the next packet at ``now`` (a picosecond of slack: a caller that
        converts ``paced_until`` to its own time unit and back must not be held forever)."""
        return now < self.conn.paced_until - PACE_SLACK

    def length(self, seq: int) -> int:
        """Payload bytes carried by packet `seq` (the last one is short)."""
        if seq == self.npkts - 1:
            return self.nbytes - seq * self.cfg.mss
        return self.cfg.mss

    def next_packet(self, now: float) -> tuple[int, bool] | None:
        """(seq, is_retransmission) to put on the wire now, or None if blocked (window full,
        nothing to resend, a message posted before it on the connection still has new packets,
        or the pacer holds it until ``paced_until``)."""
        conn = self.conn
        if self._paced and now < conn.paced_until - PACE_SLACK:
            return None
        while self._retx:
            seq = self._retx.popleft()
            self._queued[seq] = 0
            if not self.acked[seq]:
                self.retransmissions += 1
                self.ack_request = True     # a hole is being repaired: report it at once
                return self._sent(seq, now), True
        nxt = self.next_new
        if nxt < self.npkts and conn.sending[0] is self:
            w = self.cc.window
            cap = self.cfg.window
            # the connection's packets in flight, every message's (below ``window``: below
            # the cap, or int(w) >= 1)
            inflight = conn.inflight
            if (inflight < cap) if w >= cap else (inflight + 1 <= w or inflight == 0):
                if self.start is None:
                    self.start = now
                self.next_new = nxt = nxt + 1
                conn.inflight = inflight + 1
                if nxt == self.npkts:
                    conn.sending.popleft()   # the next message's new packets may go
                # the window closes behind this packet, or nothing new is left
                self.ack_request = nxt == self.npkts or not (
                    (inflight + 1 < cap) if w >= cap else (inflight + 2 <= w))
                seq = nxt - 1
                if self._paced:
                    return self._sent(seq, now), False
                # _sent for a first transmission without a pacer (every packet of a window
                # algorithm's flow passes here once)
                self.sent_at[seq] = now
                self.sends[seq] = 1
                self._tl_t.append(now)
                self._tl_s.append(seq)
                self.packets_sent += 1
                return seq, False
        return None

    def flags(self, seq: int, retx: bool) -> int:
        """The header flags of data packet ``seq`` just returned by ``next_packet``."""
        return (F_RETX if retx else 0) | (F_LAST if seq == self.npkts - 1 else 0) | \
            (F_ACKREQ if self.ack_request else 0)

    def _sent(self, seq: int, now: float) -> int:
        self.sent_at[seq] = now
        if self.sends[seq] < 255:
            self.sends[seq] += 1
        self._tl_t.append(now)
        self._tl_s.append(seq)
        self.packets_sent += 1
        if self._paced:
            # the algorithm's timers run only once due and its byte counter only once its
            # budget is spent; the pacing gap is one multiplication (no calls per send)
            cc = self.cc
            wire = self._wire_last if seq == self.npkts - 1 else self._wire_full
            if now >= cc.due:
                cc.advance(now)
            cc.byte_budget = budget = cc.byte_budget - wire
            if budget <= 0:
                cc.on_bytes(now)
            conn = self.conn
            pu = conn.paced_until
            lo = now - self._pace_credit     # no credit beyond it for time spent idle
            conn.paced_until = (pu if pu > lo else lo) + wire * cc.pace_s_per_byte
        return seq

    def on_ack(self, ack: Ack, now: float) -> None:
        acked = self.acked
        npkts = self.npkts
        newly = self.newly_acked
        n = marked = 0
        last = -1.0        # send time of the newest packet sent once among the newly acked
        sent_at, sends = self.sent_at, self.sends
        base, ce = ack.base, ack.ce
        cum = min(ack.cum, npkts)
        for seq in range(self.cum, cum):
            if not acked[seq]:
                acked[seq] = 1
                n += 1
                if newly is not None:
                    newly.append(seq)
                if ce and 0 <= seq - base < SACK_BITS and ce >> (seq - base) & 1:
                    marked += 1
                if sends[seq] == 1 and sent_at[seq] > last:
                    last = sent_at[seq]
        self.cum = max(self.cum, cum)
        bits = ack.sack
        while bits:
            low = bits & -bits
            i = low.bit_length() - 1
            bits ^= low
            seq = base + i
            if seq < npkts and not acked[seq]:
                acked[seq] = 1
                n += 1
                if newly is not None:
                    newly.append(seq)
                if ce >> i & 1:
                    marked += 1
                if sends[seq] == 1 and sent_at[seq] > last:
                    last = sent_at[seq]
        cc = self.cc
        if ack.dup and self.spurious < self.retransmissions:
            self.spurious += 1
        if n:
            self.n_acked += n
            self.conn.inflight -= n
            self.ce_acked += marked
            rtt = None
            if last >= 0:
                rtt = now - last
                self.rtt.sample(rtt)
            cc.on_ack(now, n, marked, rtt)
            w = cc.window
            self._w_sum += w if w < self.cfg.window else self.cfg.window
            if self._paced:
                self._r_sum += cc.rate_bps  # type: ignore[operator]  # _paced implies a rate
            self._n_acks += 1
        if ack.trimmed:
            seq = ack.base
            if ack.nack and seq < npkts and not acked[seq]:
                # that copy is gone for sure (cut at a full queue): resend at once, no
                # staleness test — a retransmission trimmed again is NACKed again
                self.nacks += 1
                self.trim_nacks += 1
                self._queue(seq)
                cc.on_trim_nack(now)
        elif ack.nack and ack.cum < npkts and not acked[ack.cum]:
            self.nacks += 1
            # a NACK for a packet we resent less than an RTO ago is stale; let the timer act
            if now - sent_at[ack.cum] >= self.rtt.rto / 4:
                self._queue(ack.cum)
                cc.on_nack(now)
        if self.n_acked == npkts and self.finish is None:
            self.finish = now
            self.conn.finished(self, now)
            # every packet acknowledged: no timer can fire and no send time is read again
            self.sent_at = _NO_TIMES
            self._tl_t, self._tl_s, self._tl_head = array("d"), array("q"), 0

    def _queue(self, seq: int) -> None:
        if not self.acked[seq] and not self._queued[seq]:
            self._queued[seq] = 1
            self._retx.append(seq)

    def next_timeout(self) -> float | None:
        """When ``on_tick`` can next act: the oldest transmission still on the timeline plus
        the RTO (None: nothing in flight). It changes by a send onto an empty timeline, by
        ``on_tick``, and by an RTT sample moving the RTO, so a caller keeping flows in a heap
        by it re-reads it after ACKs."""
        h = self._tl_head
        return self._tl_t[h] + self.rtt.rto if h < len(self._tl_t) else None

    def on_tick(self, now: float) -> None:
        """Queue for retransmission every packet unacknowledged for longer than the RTO; a
        tick that finds any backs the RTO off and tells the congestion control once."""
        times, seqs = self._tl_t, self._tl_s
        h, n = self._tl_head, len(times)
        rto = self.rtt.rto
        fired = False
        while h < n and times[h] + rto <= now:
            t, seq = times[h], seqs[h]
            h += 1
            if self.acked[seq] or self.sent_at[seq] != t:
                continue  # acknowledged meanwhile, or a newer copy is in flight
            self.timeouts += 1
            self._queue(seq)
            fired = True
        if h == n:
            del times[:], seqs[:]
            h = 0
        elif h >= 1024 and 2 * h >= n:   # drop what was looked at, in O(1) per entry
            del times[:h], seqs[:h]
            h = 0
        self._tl_head = h
        if fired and self.conn.timed_out(now):
            self.rtt.backoff()
            self.cc.on_timeout(now)


class Connection:
    """The sending state one peer's messages share while more than one is open, as an RDMA RC
    QP's or a UEC PDC's: one congestion control, one RTT estimate, one pacer, and one window
    that counts the packets in flight of all of them (``inflight``). Messages are served in
    the order posted (``sending``: only its head sends new packets; any may retransmit), as a
    QP's send queue: the earlier message is the one the peer's next step waits for, so
    interleaving would delay it and gain nothing for the later one. Each message still keeps
    its own sequence space, bitmap, timers and record."""

    __slots__ = ("cc", "rtt", "inflight", "paced_until", "sending", "active", "last_finish",
                 "_timeout_at")

    def __init__(self, cc: CongestionControl, rtt: RttEstimator) -> None:
        self.cc = cc
        self.rtt = rtt
        self.inflight = 0
        self.paced_until = 0.0
        self.sending: deque[SenderFlow] = deque()
        """Messages with new packets not yet sent, oldest first."""
        self.active: list[SenderFlow] = []
        """Messages not yet fully acknowledged, in posting order."""
        self.last_finish: float | None = None
        self._timeout_at: float | None = None

    def finished(self, s: SenderFlow, now: float) -> None:
        """``s`` is fully acknowledged: it leaves the connection."""
        if s in self.active:
            self.active.remove(s)
        if s in self.sending:   # done before its last new packet left: never, but be safe
            self.sending.remove(s)
        self.last_finish = now

    def timed_out(self, now: float) -> bool:
        """Whether a timeout of one of the messages at ``now`` should back the RTO off and
        tell the algorithm: once per tick for the connection, not once per message."""
        if self._timeout_at == now:
            return False
        self._timeout_at = now
        return True


class Connections:
    """A host's transport state per peer that outlives one message, as an RDMA QP's or a UEC
    PDC's does: a collective posts a new flow to the same peer every step, and starting each
    from the initial window (slow start, DCTCP's α = 1, DCQCN at line rate) would make every
    step pay for the first one. A flow posted while earlier ones to the same peer are still
    open joins their ``Connection`` (window, algorithm, RTT and pacer shared; its packets
    after theirs). Otherwise it opens a new one, taking over the previous connection's
    congestion control when that finished less than one RTO ago (older state is stale:
    RFC 7661's idle rule, simplified), its RTT estimate from the last one to the peer."""

    def __init__(self) -> None:
        self.rtt = RttCache()
        self._last: dict[Hashable, SenderFlow] = {}
        self.reused = 0
        self.joined = 0
        """Flows that joined a connection with an earlier flow still open."""

    def open(self, nbytes: int, cfg: TransportConfig, line_rate_bps: float, peer: Hashable,
             now: float) -> SenderFlow:
        prev = self._last.get(peer)
        if prev is not None and prev.conn.active and prev.cfg == cfg:
            s = SenderFlow(nbytes, cfg, line_rate_bps, conn=prev.conn)
            self.joined += 1
        else:
            conn = None if prev is None else prev.conn
            cc = None
            if conn is not None and not conn.active and conn.last_finish is not None \
                    and now - conn.last_finish <= prev.rto and prev.cfg.cc == cfg.cc:  # type: ignore[union-attr]  # conn is prev's
                cc = conn.cc
                self.reused += 1
            s = SenderFlow(nbytes, cfg, line_rate_bps, cc=cc, rtt_cache=self.rtt, peer=peer)
        self._last[peer] = s
        return s


class CcFields(TypedDict):
    """The congestion-control fields of a ``traffic.metrics.FlowRecord``."""

    ce_acked: int
    cc: str
    mean_window: float | None
    mean_rate: float | None
    srtt: float | None
    rto: float
    spurious: int


def cc_fields(s: SenderFlow) -> CcFields:
    """A finished (or abandoned) sender's congestion-control figures for its FlowRecord."""
    return {"ce_acked": s.ce_acked, "cc": s.cfg.cc, "mean_window": s.mean_window,
            "mean_rate": s.mean_rate_bps / s.line_rate_bps if s.mean_rate_bps else None,
            "srtt": s.rtt.srtt, "rto": s.rtt.rto, "spurious": s.spurious}


@dataclass
class ReceiverStats:
    packets: int = 0          # arrivals, duplicates included
    duplicates: int = 0
    trimmed: int = 0          # arrivals cut to their headers by a switch (each NACKed)
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
                ce: bool = False, ack_req: bool = False) -> tuple[bool, Sequence[Ack]]:
        """Account one arriving packet (``ce``: its IP ECN field was CE; ``ack_req``: the
        sender asked for an ACK at once, F_ACKREQ); returns (it was new, ACKs to send now).
        A duplicate is answered at once with ``dup`` set, so the sender learns that one of
        its retransmissions was not needed. (Every packet of a flow passes here: it reads
        its state into locals once.)"""
        npkts = self.npkts
        if not 0 <= seq < npkts:
            return False, _NO_ACKS
        if ce:
            self.ce[seq] = 1
            self.any_ce = True
        st = self.stats
        st.packets += 1
        if self.start is None:
            self.start = now
        got = self.got
        if got[seq]:
            st.duplicates += 1
            self._pending.append(seq)
            return False, self.ack(now, dup=True)  # our earlier ACK may have been lost
        got[seq] = 1
        self.received = received = self.received + 1
        self.bytes += length
        highest = self.highest
        if seq < highest:
            if not retx:
                st.reordered += 1
                d = highest - seq
                st.reorder_distance[d] = st.reorder_distance.get(d, 0) + 1
        else:
            self.highest = highest = seq
        cum = self.cum
        if seq == cum:   # the first missing packet arrived (below cum every one has)
            cum += 1
            while cum < npkts and got[cum]:
                cum += 1
            self.cum = cum
        pending = self._pending
        pending.append(seq)
        if received == npkts:
            self.finish = now
            return True, self.ack(now)
        cfg = self.cfg
        if highest - cum >= cfg.nack_gap:
            nk = self._nacked
            if nk is None or nk[0] != cum or now - nk[1] >= cfg.rto:
                self._nacked = (cum, now)
                return True, self.ack(now, nack=True)
        if len(pending) >= cfg.ack_every or retx or ack_req:
            return True, self.ack(now)
        return True, _NO_ACKS

    def on_trimmed(self, seq: int, now: float) -> Sequence[Ack]:
        """A packet arrived trimmed to its headers (its payload cut at a full switch queue):
        a NACK naming it at once (UEC's trimming: the sender resends without waiting for a
        timeout). Nothing if the packet arrived whole already."""
        if not 0 <= seq < self.npkts:
            return []
        self.stats.trimmed += 1
        if self.start is None:
            self.start = now
        if self.got[seq]:
            return []
        return [Ack(self.cum, seq, 0, nack=True, trimmed=True)]

    @property
    def ack_pending(self) -> bool:
        return bool(self._pending)

    def on_tick(self, now: float) -> list[Ack]:
        if self._pending and now - self._last_ack >= self.cfg.ack_delay:
            return self.ack(now)
        return []

    def ack(self, now: float, nack: bool = False, dup: bool = False) -> list[Ack]:
        """ACKs covering every packet that arrived since the last ACK.

        Each ACK's bitmap covers SACK_BITS sequence numbers from its base; under heavy
        reordering the new arrivals are scattered, so several ACKs may be needed. Without that
        a packet far beyond a hole would go unacknowledged and time out needlessly. Every
        arrival lies in some ACK's bitmap (the base is the lowest one not yet covered, even
        below ``cum``), so its CE mark is echoed per packet in that ACK's ``ce`` bitmap.
        """
        self._last_ack = now
        pending = self._pending
        self._pending = []
        pending.sort()
        acks = []
        got, n, i = self.got, len(pending), 0
        while i < n:
            base = pending[i]
            window = got[base:base + SACK_BITS]
            # one byte (0/1) per packet -> one bit: seq base is bit 0
            sack = int(window[::-1].translate(_BITCHAR), 2) if window else 0
            ce = 0
            if self.any_ce:
                cw = self.ce[base:base + SACK_BITS]
                ce = int(cw[::-1].translate(_BITCHAR), 2) if cw else 0
            acks.append(Ack(self.cum, base, sack, nack, ce, dup))
            nack = dup = False
            i = bisect_left(pending, base + SACK_BITS, i)   # past what this bitmap covers
        if not acks or nack:
            acks.append(Ack(self.cum, self.cum + 1, 0, nack, 0, dup))
        return acks
