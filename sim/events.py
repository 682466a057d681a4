"""The discrete-event loop: a binary heap of (time µs, sequence, callback, argument).

A heap is what the simulator needs: events are mostly scheduled a serialisation or propagation
delay ahead, callbacks are cheap Python functions, and ties must resolve in scheduling order so
runs are reproducible (the sequence number does that; a callback is never compared). bench/
sim_bench.py measures the loop's share of a run; a calendar queue or a C library would only pay
off if that share were large, and it is not the pipeline's.

Time is a float in microseconds, the unit of v1model timestamps and of p4switch.queues: at
400 Gb/s a 1500-byte frame takes 0.03 µs, so time cannot be integer µs; the pipeline gets
``int(now)``, as a switch whose clock ticks in µs would.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

Callback = Callable[[float, Any], None]


class EventLoop:
    """``schedule(t, fn, arg)`` runs ``fn(t, arg)`` at virtual time ``t``; ``run()`` drains."""

    __slots__ = ("now", "_heap", "_seq", "events_run", "_stopped")

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Callback, Any]] = []
        self._seq = itertools.count()
        self.events_run = 0
        self._stopped = False

    def schedule(self, t: float, fn: Callback, arg: Any = None) -> None:
        """Run ``fn(t, arg)`` at ``t`` (never before ``now``: the past is clamped to now)."""
        if t < self.now:
            t = self.now
        heapq.heappush(self._heap, (t, next(self._seq), fn, arg))

    def ticket(self) -> int:
        """The next sequence number, for an event to be pushed later with ``push``: its place
        among same-time events is then where ``schedule`` would have put it now."""
        return next(self._seq)

    def push(self, t: float, ticket: int, fn: Callback, arg: Any = None) -> None:
        """Schedule ``fn`` at ``t`` (not before ``now``) with a ticket taken earlier."""
        heapq.heappush(self._heap, (t, ticket, fn, arg))

    def stop(self) -> None:
        """Make ``run`` return after the current callback."""
        self._stopped = True

    def __len__(self) -> int:
        return len(self._heap)

    def run(self, until: float = float("inf"), max_events: int | None = None) -> float:
        """Run events in time order (ties: scheduling order) until none is left, ``stop()`` was
        called, the next one lies beyond ``until``, or ``max_events`` ran (the caller may
        call ``run`` again to go on: a progress display runs the loop in such slices);
        returns the time reached. ``done`` tells whether there is anything left to run."""
        heap = self._heap
        pop = heapq.heappop
        self._stopped = False
        n = 0
        limit = -1 if max_events is None else max_events
        try:
            while heap and not self._stopped and n != limit:
                if heap[0][0] > until:
                    self.now = until
                    self._stopped = True
                    break
                t, _, fn, arg = pop(heap)
                self.now = t
                fn(t, arg)
                n += 1
        finally:
            self.events_run += n
        return self.now

    @property
    def done(self) -> bool:
        """Nothing more will run: no event left, ``stop()`` called, or ``until`` reached."""
        return self._stopped or not self._heap
