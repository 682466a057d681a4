"""Per-port egress queues between ``pipeline.ingress`` and ``pipeline.egress``.

Each egress port has one FIFO with a depth limit (tail drop, counted) and an optional service rate
in packets per second. The queue fills v1model's queueing metadata the way BMv2's simple_switch
does, so programs that read it (congestion-aware load balancing, INT) behave the same:

* ``enq_timestamp``: switch time (µs) when the packet entered the queue;
* ``enq_qdepth``: packets already in the queue when this one was enqueued (excluding itself);
* ``deq_timedelta``: µs the packet spent in the queue;
* ``deq_qdepth``: packets left in the queue right after this one was taken out.

A queue without a rate is served as fast as the switch loop runs: the packet goes straight on to
egress when the queue is empty (the fast path, no deque touched). A rate-limited queue paces
departures exactly: the head leaves at ``max(previous departure + 1/rate, its enqueue time)``, so
the long-run rate is exact even when the loop wakes late (late departures are caught up at once).

Nothing here reads a clock or does I/O: time is an argument (DESIGN.md: the switch owns the clock).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from p4switch.pipeline.api import EgressJob, QueueingMetadata

DEFAULT_QUEUE_DEPTH = 64
"""Packets per port (DESIGN.md; BMv2's default too)."""


@dataclass
class QueueStats:
    """Counters of one egress queue (monotonic; read them from any thread)."""

    enqueued: int = 0
    dequeued: int = 0
    tail_drops: int = 0
    flushed: int = 0
    max_depth_seen: int = 0


@dataclass
class EgressQueue:
    """One port's FIFO. ``depth`` >= 1; ``rate_pps`` None or <= 0 means unlimited."""

    port: int
    depth: int = DEFAULT_QUEUE_DEPTH
    rate_pps: float | None = None
    stats: QueueStats = field(default_factory=QueueStats)
    # (job, enq_timestamp_us, enq_qdepth)
    _fifo: deque[tuple[EgressJob, int, int]] = field(default_factory=deque, repr=False)
    _interval_us: float = field(default=0.0, repr=False)
    _next_free_us: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError(f"queue depth must be >= 1, got {self.depth}")
        self.set_rate(self.rate_pps)

    # configuration --------------------------------------------------------------------------
    def set_rate(self, rate_pps: float | None) -> None:
        """Set (or clear with None/0) the service rate in packets per second."""
        if rate_pps is not None and rate_pps <= 0:
            rate_pps = None
        self.rate_pps = rate_pps
        self._interval_us = 1e6 / rate_pps if rate_pps else 0.0

    def set_depth(self, depth: int) -> None:
        """Change the depth limit; packets already queued beyond it stay (no retroactive drop)."""
        if depth < 1:
            raise ValueError(f"queue depth must be >= 1, got {depth}")
        self.depth = depth

    @property
    def limited(self) -> bool:
        return self._interval_us > 0.0

    def __len__(self) -> int:
        return len(self._fifo)

    # packet path ----------------------------------------------------------------------------
    def enqueue(self, job: EgressJob, now_us: int) -> bool:
        """Append ``job``; False (and a counted tail drop) if the queue is full."""
        fifo = self._fifo
        qlen = len(fifo)
        if qlen >= self.depth:
            self.stats.tail_drops += 1
            return False
        fifo.append((job, now_us, qlen))
        self.stats.enqueued += 1
        if qlen + 1 > self.stats.max_depth_seen:
            self.stats.max_depth_seen = qlen + 1
        return True

    def next_departure_us(self) -> float | None:
        """When the head may leave (switch µs), or None if the queue is empty."""
        if not self._fifo:
            return None
        if not self._interval_us:
            return float(self._fifo[0][1])
        return max(self._next_free_us, float(self._fifo[0][1]))

    def dequeue(self, now_us: int) -> tuple[EgressJob, QueueingMetadata] | None:
        """Take the head if it is due at ``now_us`` and return it with its queueing metadata."""
        fifo = self._fifo
        if not fifo:
            return None
        job, enq_ts, enq_qdepth = fifo[0]
        if self._interval_us:
            departure = max(self._next_free_us, float(enq_ts))
            if departure > now_us:
                return None
            self._next_free_us = departure + self._interval_us
        fifo.popleft()
        self.stats.dequeued += 1
        qmeta = QueueingMetadata(
            enq_timestamp=enq_ts,
            enq_qdepth=enq_qdepth,
            deq_timedelta=max(0, now_us - enq_ts),
            deq_qdepth=len(fifo),
        )
        return job, qmeta

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
        if self._interval_us or self._fifo:
            return None
        st = self.stats
        st.enqueued += 1
        st.dequeued += 1
        if st.max_depth_seen == 0:
            st.max_depth_seen = 1
        return QueueingMetadata(enq_timestamp=now_us)

    def flush(self) -> int:
        """Drop everything queued (a new program was loaded); returns how many were dropped."""
        n = len(self._fifo)
        self._fifo.clear()
        self.stats.flushed += n
        self._next_free_us = 0.0
        return n


class EgressQueues:
    """All ports' queues, created on first use with the switch-wide defaults.

    Per-port overrides (``set_rate(port, ...)``, ``set_depth(port, ...)``) survive queue creation
    order: they are remembered and applied when the queue is created."""

    def __init__(self, depth: int = DEFAULT_QUEUE_DEPTH, rate_pps: float | None = None) -> None:
        if depth < 1:
            raise ValueError(f"queue depth must be >= 1, got {depth}")
        self.default_depth = depth
        self.default_rate = rate_pps if rate_pps and rate_pps > 0 else None
        self._rates: dict[int, float | None] = {}
        self._depths: dict[int, int] = {}
        self.queues: dict[int, EgressQueue] = {}
        # queues that currently hold packets; the switch loop only looks at these
        self.backlogged: set[int] = set()

    def get(self, port: int) -> EgressQueue:
        q = self.queues.get(port)
        if q is None:
            q = EgressQueue(
                port=port,
                depth=self._depths.get(port, self.default_depth),
                rate_pps=self._rates.get(port, self.default_rate),
            )
            self.queues[port] = q
        return q

    def set_rate(self, port: int | None, rate_pps: float | None) -> None:
        """Rate for one port, or for all ports (existing and future) when ``port`` is None."""
        if port is None:
            self.default_rate = rate_pps if rate_pps and rate_pps > 0 else None
            self._rates.clear()
            for q in self.queues.values():
                q.set_rate(rate_pps)
        else:
            self._rates[port] = rate_pps
            self.get(port).set_rate(rate_pps)

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

    def all_unlimited(self) -> bool:
        """No queue has (or will be created with) a rate: none can ever hold a packet, so the
        switch may run ingress and egress back to back (``Pipeline.process``)."""
        if self.default_rate is not None or any(r and r > 0 for r in self._rates.values()):
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
