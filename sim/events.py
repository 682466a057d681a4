"""The discrete-event loop: a binary heap of (time µs, key, callback, argument).

A heap is what the simulator needs: events are mostly scheduled a serialisation or propagation
delay ahead, callbacks are cheap Python functions. bench/sim_bench.py measures the loop's share
of a run; a calendar queue or a C library would only pay off if that share were large, and it
is not the pipeline's.

Same-time events run in the order of their keys, and a key is made from the event's causes
only: ``(time it was scheduled at, id of the event that scheduled it, how many that event had
scheduled before)``, where an event's id is the hash of its own key (numbers only, so it is the
same in every process and run). So an event scheduled earlier runs first, one event's children
run in scheduling order, and nothing depends on a global counter: a run split over several
processes (sim.parallel), each with its own loop, orders every event exactly as one loop does.
Events scheduled outside any event (a host starting, a failure) are keyed under ``root(key)``.
Two keys can only be equal if two same-time events' ids collide in 64 bits.

Time is a float in microseconds, the unit of v1model timestamps and of p4switch.queues: at
400 Gb/s a 1500-byte frame takes 0.03 µs, so time cannot be integer µs; the pipeline gets
``int(now)``, as a switch whose clock ticks in µs would.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Callback = Callable[[float, Any], None]
Key = tuple[float, int, int]
_INF = float("inf")


class EventLoop:
    """``schedule(t, fn, arg)`` runs ``fn(t, arg)`` at virtual time ``t``; ``run()`` drains."""

    __slots__ = ("now", "_heap", "_id", "_child", "events_run", "_stopped", "horizon",
                 "reached_until")

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, Key, Callback, Any]] = []
        self._id = 0          # id of the running event (or of the root context)
        self._child = 0       # events it has scheduled so far
        self.events_run = 0
        self._stopped = False
        self.horizon = _INF
        """No event at or after this time ever runs (``stop_before``)."""
        self.reached_until = False
        """The last ``run`` returned because the next event lay beyond its ``until``."""

    def schedule(self, t: float, fn: Callback, arg: Any = None) -> None:
        """Run ``fn(t, arg)`` at ``t`` (never before ``now``: the past is clamped to now)."""
        if t < self.now:
            t = self.now
        self._child = c = self._child + 1
        heapq.heappush(self._heap, (t, (self.now, self._id, c), fn, arg))

    def scheduler(self, fn: Callback) -> Callable[[float], None]:
        """``at(t)``, which does ``schedule(t, fn)``: for a callback scheduled per packet (a
        host's NIC; on the C core it costs less than ``schedule``)."""
        schedule = self.schedule

        def at(t: float) -> None:
            schedule(t, fn)

        return at

    def ticket(self) -> Key:
        """A key taken now, for an event to be pushed later with ``push``: its place among
        same-time events is then where ``schedule`` would have put it now."""
        self._child = c = self._child + 1
        return (self.now, self._id, c)

    def push(self, t: float, ticket: Key, fn: Callback, arg: Any = None) -> None:
        """Schedule ``fn`` at ``t`` (not before ``now``) with a ticket taken earlier."""
        heapq.heappush(self._heap, (t, ticket, fn, arg))

    @contextmanager
    def root(self, key: int) -> Iterator[None]:
        """Key what is scheduled inside as the children of a root event ``key`` (an int that
        names the cause the same way in every process, e.g. a host's index)."""
        saved = self._id, self._child
        self._id, self._child = key, 0
        try:
            yield
        finally:
            self._id, self._child = saved

    def stop(self) -> None:
        """Make ``run`` return after the current callback."""
        self._stopped = True

    def stop_before(self, t: float) -> None:
        """Never run an event at or after ``t`` (the earliest such bound wins)."""
        if t < self.horizon:
            self.horizon = t

    def __len__(self) -> int:
        return len(self._heap)

    @property
    def next_time(self) -> float:
        """When the next event is due (infinity: none is)."""
        return self._heap[0][0] if self._heap else _INF

    def run(self, until: float = _INF, max_events: int | None = None,
            before: float = _INF) -> float:
        """Run events in time order (ties: by key) until none is left, ``stop()`` was called,
        the next one lies beyond ``until`` or at/after ``before`` or the horizon, or
        ``max_events`` ran (the caller may call ``run`` again to go on: a progress display
        runs the loop in such slices, sim.parallel in windows ending ``before``); returns the
        time reached. ``done`` tells whether there is anything left to run."""
        heap = self._heap
        pop = heapq.heappop
        self._stopped = self.reached_until = False
        n = 0
        limit = -1 if max_events is None else max_events
        try:
            while heap and not self._stopped and n != limit:
                t = heap[0][0]
                if t >= before or t >= self.horizon:
                    break
                if t > until:
                    self.now = until
                    self._stopped = self.reached_until = True
                    break
                t, k, fn, arg = pop(heap)
                self.now = t
                self._id = hash(k)
                self._child = 0
                fn(t, arg)
                n += 1
        finally:
            self.events_run += n
        return self.now

    @property
    def done(self) -> bool:
        """Nothing more will run: no event left (before the horizon), ``stop()`` called, or
        ``until`` reached."""
        return self._stopped or not self._heap or self._heap[0][0] >= self.horizon
