"""Per-port egress queues between ``pipeline.ingress`` and ``pipeline.egress``.

Each egress port has one FIFO with a depth limit (tail drop, counted) and an optional service rate
in packets per second. The queue fills v1model's queueing metadata the way BMv2's simple_switch
does, so programs that read it (congestion-aware load balancing, INT) behave the same:

* ``enq_timestamp``: switch time (µs) when the packet entered the queue;
* ``enq_qdepth``: packets already in the queue when this one was enqueued (excluding itself);
* ``deq_timedelta``: µs the packet spent in the queue;
* ``deq_qdepth``: packets left in the queue right after this one was taken out.

A queue without a rate is served as fast as the switch loop runs: the packet goes straight on to
egress when the queue is empty (the fast path, no deque touched). A rate-limited queue has either
a packet rate (``rate_pps``, BMv2's ``set_queue_rate``) or a bit rate (``rate_bps``, the link's
capacity) and paces departures exactly: the head leaves at ``max(previous departure + previous
service time, its enqueue time)``, where the service time of a packet is ``1/rate_pps`` or its
serialisation time ``packet_length * 8 / rate_bps``. A departure is the moment the packet starts
onto the wire, so the first packet into an idle queue leaves at once and the one behind it waits
for that packet's bits to go out. ``packet_length`` is the frame length entering the queue
(standard_metadata.packet_length; Ethernet header to payload, no preamble/FCS/gap — what Linux
HTB shapes the host side of a link by). The long-run rate is exact even when the loop wakes late:
late departures are caught up at once.

Strict priority (BMv2's ``--priority-queues N``): a port may have N FIFOs, selected by the
packet's ``standard_metadata.priority`` at the end of ingress; the highest non-empty one is served
first (priority N-1 before 0, as BMv2 numbers them), each has its own depth limit (tail drops
in one never touch another), ``enq_qdepth``/``deq_qdepth`` count that FIFO only and ``qid`` is
the priority. The FIFOs share the port's one service rate: they are classes of one link, not
separate links (BMv2 can rate-limit each priority queue on its own). A priority >= N is served
by the highest FIFO (BMv2 drops it, logging "Priority out of range"): a switch started without
the flag then behaves as one FIFO, and the inline path, which has no queues to look at, could
not drop by queue count anyway. Why priorities at all: a fabric's liveness probes wait behind
the same full queue as data and are tail-dropped with it; in their own FIFO they get through.

Packet trimming (UEC's, NDP's; ``trim_bytes``, off by default as v1model has none): a packet
arriving to a full FIFO is not dropped but cut to its first ``trim_bytes`` bytes (its headers)
and queued in a trimmed FIFO served before every priority (qid = ``priorities``), so the
receiver learns of the loss one queueing delay later instead of after a timeout. A packet of at
most 2 x ``trim_bytes`` (an ACK, a NACK: headers are all it has) goes into that FIFO whole
instead: cut, it would be lost, and a lost ACK or NACK costs a timeout. The trimmed FIFO holds
at most ``depth`` packets; beyond it a packet is tail-dropped. ``dequeue`` sets
``last_trimmed`` for the caller, which cuts the frame egress emits with ``trim_frame``.

Nothing here reads a clock or does I/O: time is an argument (docs/architecture.md: the switch owns the clock).
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from p4switch.pipeline.api import EgressJob, QueueingMetadata

DEFAULT_QUEUE_DEPTH = 64
"""Packets per port (docs/architecture.md; BMv2's default too); per FIFO when a port has priorities."""
MAX_PRIORITIES = 8
"""standard_metadata.priority is 3 bits wide: at most 8 strict-priority FIFOs per port."""

_RATE_RE = re.compile(
    r"\s*(?P<num>[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(?P<prefix>[kKmMgGtT]?)"
    r"(?P<unit>bps|bit/s|b/s|bit|bits)?\s*",
)
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def parse_bit_rate(text: str | float | int) -> float:
    """A link rate in bits/s from ``100Mbps``, ``1Gbps``, ``10M``, ``2.5G``, ``100mbit`` (tc's
    spelling) or a plain number of bits/s. Prefixes are decimal (k = 1000), as link rates are.
    0 means unlimited. Raises ValueError with a one-line message otherwise (bytes, ``MBps``, are
    refused on purpose: a link rate is in bits)."""
    if isinstance(text, bool):
        raise ValueError(f"rate {text!r} is not a bit rate")
    if isinstance(text, int | float):
        value = float(text)
    elif not isinstance(text, str):
        raise ValueError(f"rate {text!r} is not a bit rate")
    else:
        m = _RATE_RE.fullmatch(text)
        if m is None:
            raise ValueError(
                f"rate {text!r} is not a bit rate (e.g. 100Mbps, 1Gbps, 10M, 2.5G, or bits/s)"
            )
        value = float(m["num"]) * _PREFIX[m["prefix"].lower()]
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"rate must be a finite number >= 0 bits/s, got {text!r}")
    return value


def format_bit_rate(bps: float | None) -> str:
    """``50Mbps``-style text for a rate in bits/s (``unlimited`` for None/0)."""
    if not bps:
        return "unlimited"
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if bps >= scale:
            return f"{bps / scale:g}{prefix}bps"
    return f"{bps:g}bps"


@dataclass
class QueueStats:
    """Counters of one egress queue (monotonic; read them from any thread)."""

    enqueued: int = 0
    dequeued: int = 0
    tail_drops: int = 0
    flushed: int = 0
    max_depth_seen: int = 0
    priority_enqueued: int = 0
    """Packets that went into a priority FIFO above 0 (included in ``enqueued``)."""
    trimmed: int = 0
    """Packets cut to their headers instead of tail-dropped (included in ``enqueued``)."""
    promoted: int = 0
    """Small packets (<= 2 x trim_bytes) that met a full FIFO and went whole into the trimmed
    one (included in ``enqueued``)."""


def _positive(rate: float | None) -> float | None:
    return rate if rate is not None and rate > 0 else None


@dataclass
class EgressQueue:
    """One port's queue: ``priorities`` strict-priority FIFOs (1: a plain FIFO). ``depth`` >= 1
    per FIFO; at most one of ``rate_pps`` (packets/s) and ``rate_bps`` (bits/s) is set (None or
    <= 0: that rate is off; both off: unlimited)."""

    port: int
    depth: int = DEFAULT_QUEUE_DEPTH
    rate_pps: float | None = None
    rate_bps: float | None = None
    priorities: int = 1
    trim_bytes: int | None = None
    stats: QueueStats = field(default_factory=QueueStats)
    # (job, enq_timestamp_us, enq_qdepth); _fifo is priority 0, the hot one
    _fifo: deque[tuple[EgressJob, int, int]] = field(default_factory=deque, repr=False)
    # priorities 1 .. priorities-1 (index p - 1), and how many packets they hold together
    _higher: list[deque[tuple[EgressJob, int, int]]] = field(default_factory=list, repr=False)
    _n_higher: int = field(default=0, repr=False)
    # trimmed packets (counted in _n_higher too): served before every priority
    _trim: deque[tuple[EgressJob, int, int]] = field(default_factory=deque, repr=False)
    last_trimmed: bool = field(default=False, repr=False)
    """The packet ``dequeue`` returned last was trimmed: cut its frame after egress."""
    _interval_us: float = field(default=0.0, repr=False)  # per packet (pps rate)
    _us_per_byte: float = field(default=0.0, repr=False)  # per byte (bps rate)
    _paced: bool = field(default=False, repr=False)  # either rate is set
    _next_free_us: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError(f"queue depth must be >= 1, got {self.depth}")
        self.set_priorities(self.priorities)
        if _positive(self.rate_pps) and _positive(self.rate_bps):
            raise ValueError("a queue has either a packet rate or a bit rate, not both")
        if _positive(self.rate_bps):
            self.set_rate_bps(self.rate_bps)
        else:
            self.set_rate(self.rate_pps)

    # configuration --------------------------------------------------------------------------
    def set_rate(self, rate_pps: float | None) -> None:
        """Set (or clear with None/0) the service rate in packets per second; clears a bit rate."""
        rate_pps = _positive(rate_pps)
        self.rate_pps = rate_pps
        self.rate_bps = None
        self._interval_us = 1e6 / rate_pps if rate_pps else 0.0
        self._us_per_byte = 0.0
        self._paced = rate_pps is not None

    def set_rate_bps(self, rate_bps: float | None) -> None:
        """Set (or clear with None/0) the service rate in bits per second (the link rate);
        clears a packet rate. Packets already queued are served at the new rate from the next
        departure on."""
        rate_bps = _positive(rate_bps)
        self.rate_bps = rate_bps
        self.rate_pps = None
        self._us_per_byte = 8e6 / rate_bps if rate_bps else 0.0
        self._interval_us = 0.0
        self._paced = rate_bps is not None

    def set_depth(self, depth: int) -> None:
        """Change the depth limit; packets already queued beyond it stay (no retroactive drop)."""
        if depth < 1:
            raise ValueError(f"queue depth must be >= 1, got {depth}")
        self.depth = depth

    def set_priorities(self, n: int) -> None:
        """Use ``n`` strict-priority FIFOs (BMv2's ``--priority-queues``); packets queued in
        FIFOs that go away are flushed (counted)."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_PRIORITIES:
            raise ValueError(f"priority queues must be 1..{MAX_PRIORITIES}, got {n!r}")
        gone = self._higher[n - 1:]
        self.stats.flushed += sum(len(f) for f in gone)
        self._higher = self._higher[:n - 1] + [deque() for _ in range(n - 1 - len(self._higher))]
        self._n_higher = sum(len(f) for f in self._higher) + len(self._trim)
        self.priorities = n

    @property
    def limited(self) -> bool:
        return self._paced

    def service_time_us(self, packet_length: int) -> float:
        """How long the queue is busy sending a packet of ``packet_length`` bytes (0: unlimited)."""
        return self._interval_us or packet_length * self._us_per_byte

    def __len__(self) -> int:
        return len(self._fifo) + self._n_higher

    def depth_of(self, priority: int) -> int:
        """Packets in the FIFO that takes ``priority`` (clamped as ``enqueue`` does)."""
        p = min(priority, self.priorities - 1)
        return len(self._higher[p - 1]) if p > 0 else len(self._fifo)

    # packet path ----------------------------------------------------------------------------
    def enqueue(self, job: EgressJob, now_us: int) -> bool:
        """Append ``job`` to the FIFO of its priority; False (and a counted tail drop) if that
        FIFO is full."""
        p = job.priority
        if p and self._higher:
            fifo = self._higher[min(p, self.priorities - 1) - 1]
        else:
            fifo = self._fifo
        qlen = len(fifo)
        st = self.stats
        if qlen >= self.depth:
            trim = self.trim_bytes
            if trim and len(self._trim) < self.depth:
                if job.packet_length > 2 * trim:
                    job.packet_length = trim
                    st.trimmed += 1
                else:   # a control packet: promoted whole, not cut
                    st.promoted += 1
                self._trim.append((job, now_us, len(self._trim)))
                self._n_higher += 1
                st.enqueued += 1
                return True
            st.tail_drops += 1
            return False
        fifo.append((job, now_us, qlen))
        st.enqueued += 1
        if fifo is not self._fifo:
            self._n_higher += 1
            st.priority_enqueued += 1
        if qlen + 1 > st.max_depth_seen:
            st.max_depth_seen = qlen + 1
        return True

    def _head(self) -> tuple[deque[tuple[EgressJob, int, int]], int]:
        """The FIFO strict priority serves next and its priority (the queue is not empty)."""
        if self._n_higher:
            if self._trim:
                return self._trim, self.priorities
            higher = self._higher
            for p in range(len(higher), 0, -1):
                if higher[p - 1]:
                    return higher[p - 1], p
        return self._fifo, 0

    def next_departure_us(self) -> float | None:
        """When the next packet may leave (switch µs), or None if the queue is empty."""
        if self._n_higher:  # the earliest arrival among the heads: the link is busy from then on
            first = min(float(f[0][1]) for f in (self._fifo, *self._higher, self._trim) if f)
        elif self._fifo:
            first = float(self._fifo[0][1])
        else:
            return None
        if not self._paced:
            return first
        return max(self._next_free_us, first)

    def dequeue(self, now_us: int) -> tuple[EgressJob, QueueingMetadata] | None:
        """Take the next packet if one is due at ``now_us`` (the head of the highest non-empty
        FIFO) and return it with its queueing metadata."""
        qmeta = QueueingMetadata()
        job = self.dequeue_into(now_us, qmeta)
        return None if job is None else (job, qmeta)

    def dequeue_into(self, now_us: int, qmeta: QueueingMetadata) -> EgressJob | None:
        """``dequeue`` that fills ``qmeta`` (every field) instead of making a new one: for a
        caller that hands it to egress and is done with it before the next departure (a
        simulator serves millions of packets)."""
        if self._n_higher:
            fifo, prio = self._head()
        else:
            fifo, prio = self._fifo, 0
            if not fifo:
                return None
        job, enq_ts, enq_qdepth = fifo[0]
        if self._paced:
            departure = max(self._next_free_us, float(enq_ts))
            if departure > now_us:
                return None
            self._next_free_us = departure + (
                self._interval_us or job.packet_length * self._us_per_byte
            )
        fifo.popleft()
        if prio:
            self._n_higher -= 1
            self.last_trimmed = fifo is self._trim
        else:
            self.last_trimmed = False
        self.stats.dequeued += 1
        qmeta.enq_timestamp = enq_ts
        qmeta.enq_qdepth = enq_qdepth
        qmeta.deq_timedelta = max(0, now_us - enq_ts)
        qmeta.deq_qdepth = len(fifo)
        qmeta.qid = prio
        return job

    def drain(self, now_us: int) -> Iterator[tuple[EgressJob, QueueingMetadata]]:
        """Every job due at ``now_us``, in order."""
        while True:
            item = self.dequeue(now_us)
            if item is None:
                return
            yield item

    def pass_through(self, job: EgressJob, now_us: int) -> QueueingMetadata | None:
        """Fast path for an unlimited, empty queue: the packet enters and leaves at once.

        Returns the metadata (zero depth, zero delay), or None when the fast path does not apply
        and the caller must ``enqueue``. Counted like an enqueue and a dequeue."""
        if self._paced or self._fifo or self._n_higher:
            return None
        st = self._count_through()
        p = job.priority
        if p and self._higher:
            st.priority_enqueued += 1
            return QueueingMetadata(enq_timestamp=now_us, qid=min(p, self.priorities - 1))
        return QueueingMetadata(enq_timestamp=now_us)

    def _count_through(self) -> QueueStats:
        """Count a packet that entered an empty queue and left at once: an enqueue, a dequeue,
        a depth of one seen."""
        st = self.stats
        st.enqueued += 1
        st.dequeued += 1
        if not st.max_depth_seen:
            st.max_depth_seen = 1
        return st

    @property
    def link_free_us(self) -> float:
        """When the last departure's service ends: the link is busy until then."""
        return self._next_free_us

    def transit(self, packet_length: int, now_us: float) -> float | None:
        """Cut-through for a priority-0 packet meeting an empty queue whose link is free at
        ``now_us``: it enters and leaves at once, its departure occupying the link for its
        service time. Returns when the link is free again, or None (nothing counted) when the
        queue holds packets or the link is busy. Counted, and the departure clock moved,
        exactly as ``enqueue`` then ``dequeue`` at ``now_us`` would — without the job and
        metadata objects, which a simulator's uncongested hops do not need."""
        if self._fifo or self._n_higher or self._next_free_us > now_us:
            return None
        self._count_through()
        if self._paced:
            self._next_free_us = now_us + (self._interval_us or packet_length * self._us_per_byte)
        return max(self._next_free_us, now_us)

    def flush(self) -> int:
        """Drop everything queued (a new program was loaded); returns how many were dropped."""
        n = len(self)
        self._fifo.clear()
        for f in self._higher:
            f.clear()
        self._trim.clear()
        self._n_higher = 0
        self.stats.flushed += n
        self._next_free_us = 0.0
        return n


@dataclass(frozen=True)
class ServiceRate:
    """A queue's configured rate: packets/s or bits/s (at most one set; neither: unlimited)."""

    pps: float | None = None
    bps: float | None = None

    @classmethod
    def of(cls, pps: float | None = None, bps: float | None = None) -> ServiceRate:
        pps, bps = _positive(pps), _positive(bps)
        if pps and bps:
            raise ValueError("a queue has either a packet rate or a bit rate, not both")
        return cls(pps, bps)

    @property
    def limited(self) -> bool:
        return bool(self.pps or self.bps)

    def apply(self, q: EgressQueue) -> None:
        if self.bps:
            q.set_rate_bps(self.bps)
        else:
            q.set_rate(self.pps)


class EgressQueues:
    """All ports' queues, created on first use with the switch-wide defaults.

    Per-port overrides (``set_rate``/``set_rate_bps(port, ...)``, ``set_depth(port, ...)``)
    survive queue creation order: they are remembered and applied when the queue is created.
    ``priorities``: strict-priority FIFOs per port, the same for every port (as BMv2's
    ``--priority-queues``)."""

    def __init__(
        self,
        depth: int = DEFAULT_QUEUE_DEPTH,
        rate_pps: float | None = None,
        rate_bps: float | None = None,
        priorities: int = 1,
        trim_bytes: int | None = None,
    ) -> None:
        if depth < 1:
            raise ValueError(f"queue depth must be >= 1, got {depth}")
        if trim_bytes is not None and trim_bytes < 1:
            raise ValueError(f"trim bytes must be >= 1, got {trim_bytes}")
        EgressQueue(0, priorities=priorities)  # validates
        self.priorities = priorities
        self.trim_bytes = trim_bytes
        self.default_depth = depth
        self.default_rate = ServiceRate.of(rate_pps, rate_bps)
        self._rates: dict[int, ServiceRate] = {}
        self._depths: dict[int, int] = {}
        self.queues: dict[int, EgressQueue] = {}
        # queues that currently hold packets; the switch loop only looks at these
        self.backlogged: set[int] = set()

    def get(self, port: int) -> EgressQueue:
        q = self.queues.get(port)
        if q is None:
            rate = self._rates.get(port, self.default_rate)
            q = EgressQueue(
                port=port,
                depth=self._depths.get(port, self.default_depth),
                rate_pps=rate.pps,
                rate_bps=rate.bps,
                priorities=self.priorities,
                trim_bytes=self.trim_bytes,
            )
            self.queues[port] = q
        return q

    def set_priorities(self, n: int) -> None:
        """Strict-priority FIFOs per port, for every port (existing and future)."""
        EgressQueue(0, priorities=n)  # validates before anything changes
        self.priorities = n
        for q in self.queues.values():
            q.set_priorities(n)

    def _set(self, port: int | None, rate: ServiceRate) -> None:
        if port is None:
            self.default_rate = rate
            self._rates.clear()
            for q in self.queues.values():
                rate.apply(q)
        else:
            self._rates[port] = rate
            rate.apply(self.get(port))

    def set_rate(self, port: int | None, rate_pps: float | None) -> None:
        """Packet rate for one port, or for all ports (existing and future) when ``port`` is
        None; replaces a bit rate there."""
        self._set(port, ServiceRate.of(pps=rate_pps))

    def set_rate_bps(self, port: int | None, rate_bps: float | None) -> None:
        """Bit rate (link rate) for one port, or for all ports when ``port`` is None; replaces
        a packet rate there."""
        self._set(port, ServiceRate.of(bps=rate_bps))

    def rate(self, port: int) -> ServiceRate:
        """The rate port ``port``'s queue has (or will be created with)."""
        q = self.queues.get(port)
        if q is not None:
            return ServiceRate(q.rate_pps, q.rate_bps)
        return self._rates.get(port, self.default_rate)

    def set_depth(self, port: int | None, depth: int) -> None:
        """Depth for one port, or for all ports when ``port`` is None."""
        if depth < 1:
            raise ValueError(f"queue depth must be >= 1, got {depth}")
        if port is None:
            self.default_depth = depth
            self._depths.clear()
            for q in self.queues.values():
                q.set_depth(depth)
        else:
            self._depths[port] = depth
            self.get(port).set_depth(depth)

    def depth(self, port: int) -> int:
        q = self.queues.get(port)
        return q.depth if q is not None else self._depths.get(port, self.default_depth)

    def all_unlimited(self) -> bool:
        """No queue has (or will be created with) a rate: none can ever hold a packet, so the
        switch may run ingress and egress back to back (``Pipeline.process``)."""
        if self.default_rate.limited or any(r.limited for r in self._rates.values()):
            return False
        return not any(q.limited for q in self.queues.values())

    def flush(self) -> int:
        n = sum(q.flush() for q in self.queues.values())
        self.backlogged.clear()
        return n

    def next_departure_us(self) -> float | None:
        """Earliest due time over the backlogged queues (None if all are empty)."""
        best: float | None = None
        for port in self.backlogged:
            t = self.queues[port].next_departure_us()
            if t is not None and (best is None or t < best):
                best = t
        return best

    def stats(self) -> dict[int, QueueStats]:
        return {p: q.stats for p, q in sorted(self.queues.items())}


def trim_frame(data: bytes, keep: int) -> bytes:
    """``data`` cut to its first ``keep`` bytes (a trimmed packet), an IPv4 frame's lengths
    and header checksum rewritten to match (and a UDP one's length, its checksum zeroed, "none"
    in IPv4), so hosts accept the headers that are left. Other frames are only cut."""
    if len(data) <= keep:
        return data
    out = bytearray(data[:keep])
    if keep >= 34 and out[12:14] == b"\x08\x00" and out[14] >> 4 == 4:
        ihl = (out[14] & 0x0F) * 4
        out[16:18] = (keep - 14).to_bytes(2, "big")
        out[24:26] = b"\x00\x00"
        if keep >= 14 + ihl:
            total = sum(int.from_bytes(out[i:i + 2], "big") for i in range(14, 14 + ihl, 2))
            while total >> 16:
                total = (total & 0xFFFF) + (total >> 16)
            out[24:26] = (~total & 0xFFFF).to_bytes(2, "big")
        udp = 14 + ihl
        if out[23] == 17 and keep >= udp + 8:
            out[udp + 4:udp + 6] = (keep - udp).to_bytes(2, "big")
            out[udp + 6:udp + 8] = b"\x00\x00"
    return bytes(out)
