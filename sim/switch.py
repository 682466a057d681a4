"""A simulated P4 switch: one p4switch Pipeline, one p4switch EgressQueue per port, links out.

Packet path, as in the p4switch process: ``pipeline.ingress`` at arrival, the job into the
egress port's queue (depth limit, tail drop; served at the port's link rate by the queue itself),
``pipeline.egress`` when the queue lets the packet go with the v1model queueing metadata it
filled, then the frame onto the link. The pipeline is given virtual time (µs, ``int``) plus
``uptime_us``: a switch has been up a while when traffic starts, as on Mininet (fabric.p4's
flowlet registers read "last seen 0" on a fresh slot; see p4src/README.md).

Fast path, exact by construction: when the packet's egress queue is empty and that port's wire
is free at the arrival time, its egress would run at that same instant with all-zero queueing
metadata — which is what ``Pipeline.process_fast`` does in one call (the fused code, ~3x
cheaper than ingress + egress). The egress port is only known after ingress, so the condition
is checked for every port the packet *could* leave on: all ports of the switch, or the
candidates ``port_oracle(frame)`` names (sim.network derives them from the installed routes:
the route's port or all members of its LB group). The queue still sees the packet enter and
leave (its departure clock and counters move as on the slow path). tests/sim compares whole
runs with the fast path on and off.

The slow path runs the fused code too, cut at the queue: ``Pipeline.ingress_fast`` at arrival,
``egress_fast`` at departure (the job carries the fused code's locals; the general
``ingress``/``egress`` where the program does not fuse). ``fused_halves=False`` (or setting the
attribute) runs the general halves instead — bench/sim_bench.py compares the two in one run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from p4switch import (
    DEFAULT_QUEUE_DEPTH,
    Drop,
    EgressJob,
    EgressQueue,
    EgressQueues,
    QueueingMetadata,
    trim_frame,
)

from .events import EventLoop
from .link import Link

Receive = Callable[[float, Any], None]
_NEVER = float("inf")


_REFUSED: set[str] = set()  # why the native pipeline was not used: said once per process


def choose_pipeline(pipe: Any, kind: str) -> Any:
    """The pipeline a simulated switch runs: ``pipe`` itself for "python"; for "native" its
    packet path compiled to C (p4switch.native.NativePipeline: the same results, the Python
    pipeline still its face and its tables' source of truth) or, where the program or the
    machine cannot have it, ``pipe`` with one line on stderr saying why."""
    if kind == "python":
        return pipe
    if kind != "native":
        raise ValueError(f"pipeline {kind!r}: 'python' or 'native'")
    from p4switch import NativePipeline, NativeUnavailable, NativeUnsupported

    try:
        return NativePipeline(pipe)
    except (NativeUnsupported, NativeUnavailable) as exc:
        why = str(exc).splitlines()[0]
        if why not in _REFUSED:
            _REFUSED.add(why)
            print(f"sim: the Python pipeline runs the program ({why})", file=sys.stderr)
        return pipe


def _absent(*_: Any) -> Any:
    raise TypeError("the switch's pipeline has no ingress/egress halves for its slow path")


class SimSwitch:
    """``ports`` maps each connected port to (outgoing link, the peer's receive callback, the
    peer's port). The peer callback takes ``(t, (port, frame))``."""

    def __init__(self, name: str, pipeline: Any, loop: EventLoop,
                 queue_depth: int = DEFAULT_QUEUE_DEPTH, fast_path: bool = True,
                 uptime_us: float = 1_000_000.0, fused_halves: bool = True,
                 trim_bytes: int | None = None) -> None:
        self.name = name
        self._pipe = pipeline
        self._fused_halves = False
        self._ingress: Callable[..., Any] = _absent
        self._egress: Callable[..., Any] = _absent
        self._fast: Callable[..., Any] = _absent
        self.loop = loop
        # trim_bytes: a full queue cuts packets to this many bytes (p4switch.queues) and the
        # frames egress emits for them are cut likewise
        self.trim_bytes = trim_bytes
        self.queues = EgressQueues(depth=queue_depth, trim_bytes=trim_bytes)
        self.fast_path = fast_path and hasattr(pipeline, "process_fast")
        # the slow path's ingress/egress through the fused code (exact: tests/pipeline)
        self.fused_halves = fused_halves and hasattr(pipeline, "ingress_fast")
        self._qm = QueueingMetadata()  # filled per departure; egress copies what it reads
        self.uptime_us = uptime_us
        self._out: dict[int, Link] = {}
        self._q: dict[int, EgressQueue] = {}
        self._pending: set[int] = set()   # ports with a service event scheduled
        # port -> when a packet arriving could go straight through: its wire's busy-until
        # while its queue is empty, infinity while the queue holds packets
        self._free_at: dict[int, float] = {}
        self.port_oracle: Callable[[bytes], tuple[int, ...] | None] | None = None
        self.backlog = 0                  # packets queued over all ports
        self.busy_until = 0.0             # no port's wire is busy after this
        self.packets_in = 0
        self.fast_packets = 0
        self.pipeline_drops = 0
        self.unconnected = 0              # outputs to a port with no link (CPU port, ...)

    # the slow path's halves, bound again whenever the pipeline or the choice changes
    @property
    def pipe(self) -> Any:
        return self._pipe

    @pipe.setter
    def pipe(self, pipeline: Any) -> None:
        self._pipe = pipeline
        self._bind()

    @property
    def fused_halves(self) -> bool:
        return self._fused_halves

    @fused_halves.setter
    def fused_halves(self, on: bool) -> None:
        self._fused_halves = on
        self._bind()

    def _bind(self) -> None:
        """The halves the slow path calls: the fused code's lean ones (a job, ``(port,
        bytes)`` or a Drop; the full result where there is more to say) or the general
        ``ingress``/``egress``."""
        p = self._pipe
        self._fast = getattr(p, "process_fast", _absent)  # bound once: one call per hop
        if self._fused_halves:
            self._ingress = getattr(p, "ingress_lean", getattr(p, "ingress_fast", _absent))
            self._egress = getattr(p, "egress_lean", getattr(p, "egress_fast", _absent))
        else:
            self._ingress = getattr(p, "ingress", _absent)
            self._egress = getattr(p, "egress", _absent)

    def connect(self, port: int, link: Link, peer_receive: Receive, peer_port: int) -> None:
        link.attach(self.loop, peer_receive, peer_port)
        self._out[port] = link
        self.queues.set_rate_bps(port, link.rate_bps)
        self._q[port] = self.queues.get(port)
        self._free_at[port] = 0.0

    # -- packet path ------------------------------------------------------------------------
    def receive(self, now: float, arg: tuple[int, bytes]) -> None:
        port, frame = arg
        self.packets_in += 1
        ts = int(now + self.uptime_us)
        if self.fast_path and ((not self.backlog and now >= self.busy_until)
                               or self._idle_for(frame, now)):
            self.fast_packets += 1
            r = self._fast(frame, port, ts)
            if r.__class__ is tuple:
                self._pass_through(now, r[0], len(frame), r[1])
            elif isinstance(r, Drop):
                self.pipeline_drops += 1
            else:  # a ProcessResult: several outputs or extras
                self.pipeline_drops += len(r.drops)
                for o in r.outputs:
                    self._pass_through(now, o.port, len(frame), o.data)
            return
        res = self._ingress(frame, port, ts)
        if res.__class__ is EgressJob:
            self._enqueue(now, res)
        elif isinstance(res, Drop):
            self.pipeline_drops += 1
        else:  # an IngressResult
            self.pipeline_drops += len(res.drops)
            for job in res.jobs:
                self._enqueue(now, job)

    def _idle_for(self, frame: bytes, now: float) -> bool:
        """Every port ``frame`` may leave on has an empty queue and a free wire at ``now``."""
        oracle = self.port_oracle
        if oracle is None:
            return False
        ports = oracle(frame)
        if ports is None:
            return False
        free_at = self._free_at
        for p in ports:
            if free_at.get(p, 0.0) > now:
                return False
        return True

    def _pass_through(self, now: float, port: int, plen: int, data: bytes) -> None:
        q = self._q.get(port)
        if q is None:
            self.unconnected += 1
            return
        start = now
        busy = q.transit(plen, now)
        if busy is None:
            if len(q):  # receive checked every port the packet could leave on
                raise RuntimeError(f"{self.name}: fast path to port {port}, whose queue "
                                   f"holds packets at {now} µs (its port oracle missed it)")
            # the wire is busy with an earlier output of this same packet (a clone or a
            # replica onto the same port): this one follows it as soon as the wire is free,
            # with the egress metadata the fast path gave it
            start = q.link_free_us
            busy = q.transit(plen, start)
            assert busy is not None
        self._free_at[port] = busy
        if busy > self.busy_until:
            self.busy_until = busy
        self._transmit(start, port, data)

    def _enqueue(self, now: float, job: EgressJob) -> None:
        port = job.egress_port
        q = self._q.get(port)
        if q is None:
            self.unconnected += 1
            return
        if not q.enqueue(job, now):  # type: ignore[arg-type]  # float µs of virtual time; the queue's arithmetic is the same
            return  # tail drop, counted by the queue
        self.backlog += 1
        self._free_at[port] = _NEVER
        if port in self._pending:
            return
        t = q.next_departure_us()
        if t is not None and t <= now:
            self._serve(now, port)
        elif t is not None:
            self._pending.add(port)
            self.loop.schedule(t, self._serve, port)

    def _serve(self, now: float, port: int) -> None:
        """Send the head of ``port``'s queue: called when it is due (by its scheduled
        event, or at once by ``_enqueue`` when the port was idle)."""
        self._pending.discard(port)
        q = self._q[port]
        qm = self._qm
        job = q.dequeue_into(now, qm)  # type: ignore[arg-type]  # as enqueue
        if job is None:  # not due after all (cannot happen: scheduled at its departure)
            t = q.next_departure_us()
            if t is not None:
                self._pending.add(port)
                self.loop.schedule(max(t, now), self._serve, port)
            return
        self.backlog -= 1
        busy = now + q.service_time_us(job.packet_length)
        # deq_qdepth: what is left in the FIFO served (len(q) also counts other priorities)
        self._free_at[port] = _NEVER if qm.deq_qdepth or len(q) else busy
        if busy > self.busy_until:
            self.busy_until = busy
        # the queue ran on float µs; the pipeline's clock ticks in whole µs
        uptime = self.uptime_us
        qm.enq_timestamp = int(qm.enq_timestamp + uptime)
        qm.deq_timedelta = int(qm.deq_timedelta)
        er = self._egress(job, int(now + uptime), qm)
        out = self._out
        cut = self.trim_bytes if q.last_trimmed and job.packet_length == self.trim_bytes \
            else None
        if er.__class__ is tuple:
            link = out.get(er[0])
            if link is None:
                self.unconnected += 1
            else:
                link.send(now, er[1] if cut is None else trim_frame(er[1], cut))
        elif isinstance(er, Drop):
            self.pipeline_drops += 1
        else:  # an EgressResult
            self.pipeline_drops += len(er.drops)
            for o in er.outputs:
                link = out.get(o.port)
                if link is None:
                    self.unconnected += 1
                else:
                    link.send(now, o.data if cut is None else trim_frame(o.data, cut))
            for j in er.jobs:
                self._enqueue(now, j)
        t = q.next_departure_us()
        if t is not None and port not in self._pending:
            self._pending.add(port)
            self.loop.schedule(max(t, now), self._serve, port)

    def _transmit(self, now: float, port: int, data: bytes) -> None:
        link = self._out.get(port)
        if link is None:
            self.unconnected += 1
            return
        link.send(now, data)

    # -- introspection ----------------------------------------------------------------------
    def tail_drops(self) -> int:
        return sum(q.stats.tail_drops for q in self._q.values())

    def trims(self) -> int:
        """Packets its queues cut to their headers instead of dropping (trimming on)."""
        return sum(q.stats.trimmed for q in self._q.values())

    def queue(self, port: int) -> EgressQueue:
        return self._q[port]
