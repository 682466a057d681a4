"""The running switch: ports, egress queues and the packet loop around one pipeline.

One I/O thread owns the packet path. It waits (epoll) on every port and on a wake-up eventfd,
reads each ready port until EAGAIN (at most ``BATCH`` frames), and runs the batch:

* inline, when every egress queue is unlimited and empty (such a queue never holds a packet, so
  ingress and egress run back to back with the metadata of an empty queue): the pipeline's
  ``process_fast`` (api.py) — its common result, a plain ``(port, bytes)`` tuple, is sent with
  the port's socket directly — or ``process`` for a pipeline without it. No per-packet objects
  of the switch's own; counters that every frame touches are kept in locals and added per batch.
  The fast path runs the pipeline over the whole batch first and then sends its outputs back to
  back, in order: a send to a veth does the receiver's work and wakes it if it sleeps, and sends
  spaced out by pipeline runs found it asleep each time, a wake-up (an IPI in a VM) per frame
  that cost about as much as the pipeline itself (see bench/switch_bench.py);
* queued, when some queue has a rate (or still holds packets): ``ingress → queue → egress``;
  rate-limited queues are served when their head is due. The timer is a ``select`` on the epoll
  fd (microsecond timeout; ``epoll_wait`` rounds up to whole milliseconds, eight 1500-byte frame
  times at 100 Mbps) with the loop thread's timer slack cut to 1 µs (the default 50 µs is 40 %
  of a frame time at 100 Mbps): departures are late by tens of µs, not by a millisecond;
* delayed, on a port with a propagation delay (``set_port_delay``, p4switch/propagation.py):
  what its egress produced waits on the port's ``DelayLine`` and is written when due (the loop's
  timer covers the earliest). Any delay turns the inline path off.

Concurrency rule (docs/architecture.md: the pipeline is not thread-safe): ``Switch.lock`` is held around
every pipeline call and every queue operation by the loop, and by the P4Runtime server around each
state operation or Write batch, so a Write is applied atomically with respect to packets. The loop
takes it once per batch (at most ``BATCH`` frames of one port; the socket reads happen outside
it), which keeps control-plane latency bounded under load. Listener callbacks (packet-in,
digests) run in the loop thread *after* the lock is released, so a callback that takes its own
locks cannot deadlock with a gRPC thread that holds one of them and waits for ``Switch.lock``.

The switch owns the clock: ``now_us()`` is microseconds since the switch was created, read per
packet; the pipeline only receives it as an argument.

Counting on the inline path: each output counts one enqueue and one dequeue on its port's
queue; a drop the pipeline reports (ingress or egress — ``process`` does not say which) counts
on the ingress port (``rx_dropped``/``rx_malformed``), and a copy dropped in egress is not
counted as enqueued.
"""

from __future__ import annotations

import errno
import logging
import os
import select
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from common.histogram import LogHistogram
from p4switch import ir
from p4switch.hidden import switch_drop_sites
from p4switch.pipeline import api
from p4switch.ports import MIN_FRAME, MemoryPort, PcapNaming, Port, PortStats, RawPort
from p4switch.propagation import DelayLine
from p4switch.queues import (
    DEFAULT_QUEUE_DEPTH,
    EgressQueues,
    QueueStats,
    ServiceRate,
    trim_frame,
)

log = logging.getLogger("p4switch")
_monotonic_ns = time.monotonic_ns

_FastPath = Callable[[bytes, int, int], api.FastResult]
DROP_PORT = 511
BATCH = 64
"""Frames read from one port per loop round: large enough to amortise the poll, small enough that
other ports and control-plane writes are served promptly."""
FAST_PATH = "process_fast"
"""Name of the pipeline's optional fast path: ``(data, port, now_us)`` → ``(egress_port, bytes)``
for a packet with exactly one output and nothing else to report, else a ``Drop`` or a
``ProcessResult``. Used instead of ``process`` when every queue is unlimited."""
_Outs = list[tuple[int, bytes]]
_MAX_IDLE_WAIT = 0.5
_PR_SET_TIMERSLACK = 29
_FD_SETSIZE = 1024
_TIMER_SLACK_NS = 1000
_MAX_ERROR_LOGS = 20
_MALFORMED_REASONS = frozenset({"parser_error", "error"})
"""Pipeline drop reasons counted as ``rx_malformed`` on the ingress port: the parser rejected the
frame, or executing the program on it hit a run-time error (e.g. a header stack index out of
bounds). A v1model parser error does not drop by itself; a program that then drops the frame
with mark_to_drop is counted ``rx_dropped`` (the switch cannot tell why the program dropped)."""


@dataclass
class SwitchCounters:
    """Switch-wide counters (per-port ones live in ``Port.stats`` and ``EgressQueue.stats``)."""

    no_program: int = 0  # frames that arrived while no program was loaded
    pipeline_errors: int = 0  # the pipeline raised (a bug) — frame dropped, switch stays up
    tx_no_port: int = 0  # output on a port number with no interface behind it
    packet_in: int = 0  # frames delivered to packet-in listeners (cpu_port output)
    packet_out: int = 0  # frames injected from the controller
    packet_out_dropped: int = 0  # packet_out with no cpu_port configured
    digests: int = 0
    flushed: int = 0  # queued packets discarded by a program load
    drops: Counter[str] = field(default_factory=Counter)  # pipeline Drop reasons


def _count_tx(ps: PortStats, qs: QueueStats, queued: int, sent: int, nbytes: int) -> None:
    """Add a run of inline outputs to a port's and its queue's counters (an unlimited queue
    passes each packet straight through: depth 1 at most)."""
    ps.tx_packets += sent
    ps.tx_bytes += nbytes
    qs.enqueued += queued
    qs.dequeued += queued
    if not qs.max_depth_seen:
        qs.max_depth_seen = 1


_OPER_UP = frozenset({"up", "unknown"})
"""Operstates a port can send in ("unknown": the driver reports none, e.g. tun; Linux treats
it as up)."""
_SETTINGS_KEYS = frozenset(
    {"queue_depth_limit", "rate_bps", "rate_pps", "oper_state", "oper_up"}
)
"""``port_stats`` entries that are settings or state, not counters (left out of the report)."""


def oper_state(port: Port | None) -> str:
    """The operstate of the interface behind ``port`` (``up``, ``down``, ``lowerlayerdown``,
    ``dormant``, ``unknown``...; ``absent`` if the interface is gone, e.g. its namespace was
    deleted). A port with no interface behind it (memory, pcap) or no port at all is ``up``:
    nothing can take it down."""
    if not isinstance(port, RawPort):
        return "up"
    try:
        return Path(f"/sys/class/net/{port.name}/operstate").read_text().strip() or "unknown"
    except OSError:
        return "absent"


def _cut_timer_slack() -> None:
    """Make the calling thread's timed waits end within ~1 µs of their deadline instead of the
    kernel's default 50 µs slack (Linux prctl; a no-op where it is unavailable)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, _TIMER_SLACK_NS, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Switch:
    """A p4switch instance: call ``add_port``/``load_program``, then ``start()``; ``stop()``.

    ``pipeline_factory(program, drop_port=..., cpu_port=...)`` builds the pipeline (a
    ``p4switch.pipeline.api.PipelineAPI``); the default is ``p4switch.pipeline.Pipeline``.
    ``set_pipeline`` installs a ready object (tests use small fakes that implement only
    ``api.PacketPath``: ``ingress``/``egress``)."""

    def __init__(
        self,
        *,
        device_id: int = 0,
        cpu_port: int | None = None,
        drop_port: int = DROP_PORT,
        queue_depth: int = DEFAULT_QUEUE_DEPTH,
        queue_rate: float | None = None,
        port_rate: float | None = None,
        priority_queues: int = 1,
        trim_bytes: int | None = None,
        pcap_dir: str | Path | None = None,
        pipeline_factory: Callable[..., api.PipelineAPI] | None = None,
        pcap_naming: PcapNaming = PcapNaming.PORT,
    ) -> None:
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.lock = threading.RLock()
        self.pipeline: api.PipelineAPI | None = None
        self.program: ir.Program | None = None
        self.ports: dict[int, Port] = {}
        # trim_bytes: a full queue cuts packets to this many bytes (queues.py's trimming; off
        # by default, as BMv2); their frames leave egress cut likewise (queues.trim_frame)
        self.queues = EgressQueues(queue_depth, queue_rate, port_rate, priority_queues,
                                   trim_bytes)
        self.counters = SwitchCounters()
        self.egress_delay_us = LogHistogram()
        """Queueing delay of every packet that waited in an egress queue (deq_timedelta);
        packets that passed straight through are the rest of ``queue_dequeued``."""
        self.pcap_dir = Path(pcap_dir) if pcap_dir else None
        self.pcap_naming = PcapNaming(pcap_naming)
        self._pipeline_factory = pipeline_factory
        self._t0_ns = time.monotonic_ns()
        self._inject: deque[tuple[int, bytes]] = deque()
        self._wake_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._epoll: select.epoll | None = None
        self._fd_ports: dict[int, Port] = {}
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._packet_in_listeners: list[Callable[[bytes], None]] = []
        self._digest_listeners: list[Callable[[api.Digest], None]] = []
        self._pending_packet_in: list[bytes] = []
        self._pending_digests: list[api.Digest] = []
        self._busy = False  # the loop is between poll() returns (idle detection for tests)
        self._error_logs = 0
        # hot-path state, kept current by add_port / set_pipeline / set_queue_rate (lock held)
        # port -> (its socket's send, its counters, its queue's counters): the inline path
        self._tx: dict[int, tuple[Callable[[bytes], Any], PortStats, QueueStats]] = {}
        self._inline = self.queues.all_unlimited()  # no queue can hold a packet
        self._fast: _FastPath | None = None  # the pipeline's fast path, if offered
        self._inline_fast: _FastPath | None = None  # _fast if _inline else None
        self.delay_lines: dict[int, DelayLine] = {}  # port -> its wire (a propagation delay)
        self.host_ports: set[int] = set()
        """Ports whose link leads to a host (``--host-port``): the host's HTB sends a frame
        without delaying it, so a delayed port here also carries the host uplink's
        serialisation, one more frame time per frame (as its delay carries 2x the link's)."""
        self._in_flight: set[int] = set()  # ports whose wire holds frames (loop thread only)

    # clock ---------------------------------------------------------------------------------
    def now_us(self) -> int:
        """Microseconds since the switch was created (v1model timestamps)."""
        return (time.monotonic_ns() - self._t0_ns) // 1000

    # configuration ---------------------------------------------------------------------------
    def add_port(self, port: Port) -> Port:
        """Attach a port (before or after ``start``); port numbers are unique."""
        with self.lock:
            if port.number in self.ports:
                raise ValueError(f"port {port.number} is already attached")
            if self.cpu_port is not None and port.number == self.cpu_port:
                raise ValueError(f"port {port.number} is the CPU port")
            if port.number == self.drop_port:
                raise ValueError(f"port {port.number} is the drop port")
            if self.pcap_dir is not None:
                port.capture(self.pcap_dir, self.pcap_naming)
            self.ports[port.number] = port
            self._fd_ports[port.fileno()] = port
            if port.raw_send is not None and port.pcap_out is None:
                qstats = self.queues.get(port.number).stats
                self._tx[port.number] = (port.raw_send, port.stats, qstats)
            if self._epoll is not None:
                self._epoll.register(port.fileno(), select.EPOLLIN)
        log.info("port %s attached (%s)", port.describe(), port.kind)
        return port

    def add_interface(self, number: int, ifname: str) -> RawPort:
        """Attach Linux interface ``ifname`` as port ``number`` (AF_PACKET; needs root)."""
        port = RawPort(number, ifname)
        self.add_port(port)
        return port

    def set_queue_rate(self, port: int | None, rate_pps: float | None) -> None:
        """Service rate in packets/s for one port's queue, or all when ``port`` is None
        (None/0: unlimited); replaces a bit rate there."""
        with self.lock:
            self.queues.set_rate(port, rate_pps)
            self._rates_changed()
        self._wake()

    def set_port_rate(self, port: int | None, rate_bps: float | None) -> None:
        """Link rate in bits/s for one port's queue, or all when ``port`` is None (None/0:
        unlimited): the queue serves a frame per ``len * 8 / rate``; replaces a packet rate.
        Safe while the switch runs (queued packets are served at the new rate)."""
        with self.lock:
            self.queues.set_rate_bps(port, rate_bps)
            self._rates_changed()
        self._wake()

    def port_rate(self, port: int) -> ServiceRate:
        """The rate port ``port``'s egress queue is served at (pps or bps; neither: unlimited)."""
        with self.lock:
            return self.queues.rate(port)

    def set_port_delay(self, port: int | None, delay_us: float | None) -> None:
        """Propagation delay of the link behind ``port`` (all attached ports when None), in
        µs; None/0 removes it (frames already on the wire still arrive when due). Frames leave
        the egress queue as before and reach the socket ``delay_us`` later."""
        if delay_us is not None and not (delay_us >= 0 and delay_us < float("inf")):
            raise ValueError(f"a propagation delay is a finite number of µs >= 0, got {delay_us!r}")
        with self.lock:
            for p in (list(self.ports) if port is None else [port]):
                line = self.delay_lines.get(p)
                if not delay_us:
                    if line is not None:
                        del self.delay_lines[p]
                        self._send_due(line, float("inf"))  # what was on the wire arrives
                elif line is None:
                    self.delay_lines[p] = DelayLine(p, float(delay_us))
                else:  # frames in flight keep their arrival times; new ones get the new delay
                    line.delay_us = float(delay_us)
            self._rates_changed()
        self._wake()

    def port_delay(self, port: int) -> float:
        """The propagation delay of port ``port``'s link in µs (0: none)."""
        with self.lock:
            line = self.delay_lines.get(port)
            return line.delay_us if line is not None else 0.0

    def _rates_changed(self) -> None:
        self._inline = self.queues.all_unlimited() and not self.delay_lines
        self._inline_fast = self._fast if self._inline else None

    def set_queue_depth(self, port: int | None, depth: int) -> None:
        with self.lock:
            self.queues.set_depth(port, depth)

    def seed_random(self, seed: int) -> bool:
        """Restart the program's ``random()`` sequence from ``seed`` (an experiment's
        repetition fixes its data plane's choices); False when the pipeline has no seeded
        generator (none loaded, or a target whose random() is not ours)."""
        with self.lock:
            rng = getattr(self.pipeline, "rng", None)
            if rng is None:
                return False
            rng.seed(seed)
            return True

    def _build_pipeline(self, program: ir.Program) -> api.PipelineAPI:
        factory = self._pipeline_factory
        if factory is None:
            from p4switch.pipeline import Pipeline

            factory = Pipeline  # (mypy checks here that Pipeline implements PipelineAPI)
        return factory(program, drop_port=self.drop_port, cpu_port=self.cpu_port)

    def load_program(self, program: ir.Program) -> None:
        """Build a fresh pipeline for ``program`` and swap it in atomically; queued packets of
        the old program are flushed (they carry the old pipeline's opaque state)."""
        pipeline = self._build_pipeline(program)  # slow part outside the lock
        self.set_pipeline(pipeline, program)

    def set_pipeline(self, pipeline: api.PipelineAPI, program: ir.Program | None = None) -> None:
        """Swap in a ready pipeline object (see ``load_program``)."""
        with self.lock:
            flushed = self.queues.flush()
            self.counters.flushed += flushed
            self.pipeline = pipeline
            self.program = program
            self._fast = getattr(pipeline, FAST_PATH, None)
            self._inline_fast = self._fast if self._inline else None
        if flushed:
            log.info("program swap flushed %d queued packets", flushed)

    # control-plane packet I/O ------------------------------------------------------------------
    def packet_out(self, data: bytes) -> None:
        """Inject ``data`` (starting with the packet_out header) into ingress on cpu_port.

        Thread-safe and non-blocking: the frame is handed to the loop thread."""
        self._inject.append((-1, bytes(data)))
        self._wake()

    def inject(self, port: int, data: bytes) -> None:
        """Inject a frame into ingress as if it arrived on ``port`` (tests, tools)."""
        self._inject.append((port, bytes(data)))
        self._wake()

    def add_packet_in_listener(self, cb: Callable[[bytes], None]) -> None:
        """``cb(frame)`` for each frame the pipeline emits on cpu_port (packet_in header first).
        Called from the loop thread, without ``lock`` held."""
        self._packet_in_listeners.append(cb)

    def remove_packet_in_listener(self, cb: Callable[[bytes], None]) -> None:
        try:
            self._packet_in_listeners.remove(cb)
        except ValueError:
            pass

    def add_digest_listener(self, cb: Callable[[api.Digest], None]) -> None:
        """``cb(digest)`` for each ``digest()`` the program emits (loop thread, lock released)."""
        self._digest_listeners.append(cb)

    def remove_digest_listener(self, cb: Callable[[api.Digest], None]) -> None:
        try:
            self._digest_listeners.remove(cb)
        except ValueError:
            pass

    # lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the packet loop thread."""
        if self._thread is not None:
            raise RuntimeError("switch already started")
        ep = select.epoll()
        ep.register(self._wake_fd, select.EPOLLIN)
        with self.lock:
            for fd in self._fd_ports:
                ep.register(fd, select.EPOLLIN)
            self._epoll = ep
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="p4switch-loop", daemon=True)
        self._thread.start()
        log.info(
            "switch device_id=%d started: %d ports, cpu_port=%s, drop_port=%d",
            self.device_id,
            len(self.ports),
            self.cpu_port,
            self.drop_port,
        )

    def stop(self, *, log_stats: bool = True) -> None:
        """Stop the loop, close ports, flush pcaps; idempotent."""
        self._stopping = True
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        with self.lock:
            for port in self.ports.values():
                port.flush()
                port.close()
            if self._epoll is not None:
                self._epoll.close()
                self._epoll = None
        if log_stats:
            for line in self.stats_report().splitlines():
                log.info("%s", line)
        try:
            os.close(self._wake_fd)
        except OSError:
            pass

    def __enter__(self) -> Switch:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop(log_stats=False)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait_idle(self, timeout: float = 5.0, settle: float = 0.02) -> bool:
        """Wait until no input is pending on memory ports, nothing is injected or queued and
        the loop is parked in poll; True if that happened within ``timeout``. For tests and
        the ``--stop-after-input`` mode; raw sockets are not inspected."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._idle_now():
                time.sleep(settle)
                if self._idle_now():
                    return True
            time.sleep(0.002)
        return False

    def _idle_now(self) -> bool:
        with self.lock:
            if self._busy or self._inject or self.queues.backlogged:
                return False
            return not any(
                isinstance(p, MemoryPort) and p.rx_pending for p in self.ports.values()
            )

    # statistics -------------------------------------------------------------------------------
    def port_stats(self) -> dict[int, dict[str, Any]]:
        """Per port: rx/tx/malformed/... counters, its egress queue's counters and settings
        (``rate_bps``/``rate_pps``, 0 = none; ``queue_depth_limit``), and its oper state
        (``oper_state``: the kernel's RFC 2863 operstate of the interface, ``oper_up``: 1/0)
        so a controller can notice a link that went down."""
        out: dict[int, dict[str, Any]] = {}
        with self.lock:
            qstats = self.queues.stats()
            numbers = sorted(set(self.ports) | set(qstats))
            settings = {n: (self.queues.rate(n), self.queues.depth(n)) for n in numbers}
            depth_now = {n: len(q) for n, q in self.queues.queues.items()}
        for n in numbers:
            port = self.ports.get(n)
            d: dict[str, Any] = port.stats.as_dict() if port is not None else {}
            q = qstats.get(n, QueueStats())
            rate, limit = settings[n]
            d.update(
                queue_enqueued=q.enqueued,
                queue_dequeued=q.dequeued,
                tail_drops=q.tail_drops,
                queue_priority_enqueued=q.priority_enqueued,
                queue_max_depth=q.max_depth_seen,
                queue_depth_now=depth_now.get(n, 0),
                queue_depth_limit=limit,
                rate_bps=rate.bps or 0,
                rate_pps=rate.pps or 0,
            )
            state = oper_state(port)
            d.update(oper_state=state, oper_up=int(state in _OPER_UP))
            out[n] = d
        return out

    def hidden_stats(self) -> dict[str, Any]:
        """What the program cannot see next to what it can (p4switch/hidden.py): per port the
        kernel socket's received/dropped frames and the ingress-lag histogram; the egress
        queueing-delay histogram and how many packets left the queues in all; and every frame
        the switch lost after its socket had it (``drop_sites``: egress tail drops, pipeline
        drops by reason, the switch's own discards), so that a run's losses add up."""
        ports = {}
        for n, port in sorted(self.ports.items()):
            if port.hidden is not None:
                port.refresh_hidden()
                ports[str(n)] = {**port.hidden.as_dict(), "tx_errors": port.stats.tx_errors}
        with self.lock:
            qstats = self.queues.stats()
            dequeued = sum(q.dequeued for q in qstats.values())
            delay = self.egress_delay_us.sparse()
            sites = switch_drop_sites(qstats.values(), (p.stats for p in self.ports.values()),
                                      self.counters)
        return {"ports": ports, "egress_delay_us": delay, "dequeued": dequeued,
                "drop_sites": sites.as_dict()}

    def stats_report(self) -> str:
        """Human-readable counters (logged at shutdown)."""
        lines = []
        for n, d in self.port_stats().items():
            name = self.ports[n].describe() if n in self.ports else f"{n}@-"
            nz = " ".join(f"{k}={v}" for k, v in d.items() if v and k not in _SETTINGS_KEYS)
            if d["oper_state"] not in _OPER_UP:
                nz = f"{nz} oper_state={d['oper_state']}".lstrip()
            lines.append(f"port {name}: {nz or 'idle'}")
        c = self.counters
        sw = {
            "no_program": c.no_program,
            "pipeline_errors": c.pipeline_errors,
            "tx_no_port": c.tx_no_port,
            "packet_in": c.packet_in,
            "packet_out": c.packet_out,
            "packet_out_dropped": c.packet_out_dropped,
            "digests": c.digests,
            "flushed": c.flushed,
        }
        nz = " ".join(f"{k}={v}" for k, v in sw.items() if v)
        drops = " ".join(f"{k}={v}" for k, v in sorted(c.drops.items()))
        lines.append(f"switch: {nz or 'no events'}" + (f" drops: {drops}" if drops else ""))
        return "\n".join(lines)

    # the loop -----------------------------------------------------------------------------------
    def _wake(self) -> None:
        try:
            os.eventfd_write(self._wake_fd, 1)
        except OSError:
            pass

    def _loop(self) -> None:
        ep = self._epoll
        assert ep is not None
        wake_fd = self._wake_fd
        fd_ports = self._fd_ports
        queues = self.queues
        lock = self.lock
        acquire, release = lock.acquire, lock.release  # cheaper than `with lock` per batch
        now_us = self.now_us
        run_batch = self._run_batch
        backlogged = queues.backlogged  # these containers are never replaced, only mutated
        in_flight = self._in_flight
        inject = self._inject
        pending_in = self._pending_packet_in
        pending_digests = self._pending_digests
        ep_ready = [ep.fileno()]
        wait_ready = select.select
        fine_timer = ep.fileno() < _FD_SETSIZE  # select() takes no higher fd
        _cut_timer_slack()
        while not self._stopping:
            timeout = _MAX_IDLE_WAIT
            timed = False  # a queue head is due: wait with µs resolution
            if backlogged or in_flight:
                due = queues.next_departure_us() if backlogged else None
                if in_flight:
                    wire = self.next_wire_due_us()
                    if wire is not None and (due is None or wire < due):
                        due = wire
                if due is not None:
                    timeout = min(timeout, max(0.0, (due - now_us()) / 1e6))
                    timed = timeout > 0.0 and fine_timer
            self._busy = False
            try:
                if timed:  # epoll_wait would round the timeout up to a whole millisecond
                    events = ep.poll(0) if wait_ready(ep_ready, (), (), timeout)[0] else ()
                else:
                    events = ep.poll(timeout)
            except InterruptedError:
                continue
            self._busy = True
            for fd, _ev in events:
                if fd == wake_fd:
                    try:
                        os.eventfd_read(wake_fd)
                    except BlockingIOError:
                        pass
                    continue
                port = fd_ports.get(fd)
                if port is None:
                    continue
                # the socket read needs no lock: only this thread reads ports
                try:
                    frames = port.recv_batch(BATCH)
                except OSError as e:
                    if e.errno == errno.ENETDOWN:  # the socket reports its interface went down
                        log.info("port %s: interface is down", port.describe())
                        continue
                    port.stats.rx_errors += 1
                    self._log_error(f"receive error on port {port.describe()}")
                    continue
                if not frames:
                    continue
                acquire()  # once per batch (<= BATCH frames): bounded control-plane latency
                try:
                    run_batch(port, frames)
                except Exception:  # never let one bad frame or bug kill the switch
                    self.counters.pipeline_errors += 1
                    self._log_error("packet loop error")
                finally:
                    release()
            if inject or backlogged or in_flight:
                with lock:
                    try:
                        if inject:
                            self._drain_injected()
                        if backlogged:
                            self._serve_queues()
                        if in_flight:
                            self._serve_wires()
                    except Exception:
                        self.counters.pipeline_errors += 1
                        self._log_error("packet loop error")
            if pending_in or pending_digests:
                self._dispatch_listeners()
        self._busy = False

    def _log_error(self, what: str) -> None:
        if self._error_logs < _MAX_ERROR_LOGS:
            self._error_logs += 1
            log.exception("%s (logged %d/%d)", what, self._error_logs, _MAX_ERROR_LOGS)

    def _run_batch(self, port: Port, frames: list[bytes]) -> None:
        """Account one received batch and run its frames through the pipeline (lock held).

        Counters that every frame touches are computed per batch at C speed (``sum``/``min``/
        ``max`` over the lengths); frames too short or too long are filtered only when the batch
        holds one. When every queue is unlimited and empty (no queue would ever hold a packet)
        frames run inline: the pipeline's fast path (this function's loop; the common
        one-output results, plain tuples, are collected and sent together by ``_send_outputs``
        after the batch, or before a result that needs the slow path: outputs leave in the order
        of their frames), else its ``process``. Otherwise: ingress → queue → egress (``_handle_ingress``).
        """
        st = port.stats
        k = len(frames)
        st.rx_packets += k
        if k == 1:  # the common case below capacity: skip the list
            nbytes = lo = hi = len(frames[0])
        else:
            lens = list(map(len, frames))
            nbytes = sum(lens)
            lo = min(lens)
            hi = max(lens)
        st.rx_bytes += nbytes
        pcap_in = port.pcap_in
        if pcap_in is not None:
            for data in frames:
                pcap_in.write(data)
        if lo < MIN_FRAME or hi > port.max_frame:
            frames = self._size_filter(port, frames)
            if not frames:
                return
        pipeline = self.pipeline
        if pipeline is None:
            self.counters.no_program += len(frames)
            return
        # the variant, chosen once per batch: (the pipeline call, what to do with its result)
        fast = self._inline_fast
        if fast is not None and not self.queues.backlogged:
            self._run_frames(fast, self._handle_full, frames, st, port.number)
        elif self._inline and not self.queues.backlogged and hasattr(pipeline, "process"):
            self._run_frames(pipeline.process, self._handle_full, frames, st, port.number)
        else:
            self._run_frames(pipeline.ingress, self._handle_ingress, frames, st, port.number)

    @overload
    def _run_frames(self, call: _FastPath | Callable[[bytes, int, int], api.ProcessResult],
                    handle: Callable[[api.Drop | api.ProcessResult, PortStats, int, _Outs], None],
                    frames: list[bytes], st: PortStats, number: int) -> None: ...

    @overload
    def _run_frames(self, call: Callable[[bytes, int, int], api.IngressResult],
                    handle: Callable[[api.IngressResult, PortStats, int, _Outs], None],
                    frames: list[bytes], st: PortStats, number: int) -> None: ...

    def _run_frames(self, call: Callable[[bytes, int, int], object],
                    handle: Callable[[Any, PortStats, int, _Outs], None],
                    frames: list[bytes], st: PortStats, number: int) -> None:
        """The packet loop: ``call`` each frame (``process_fast``, ``process`` or ``ingress``);
        a ``(port, bytes)`` result is sent with the batch, any other goes to ``handle``. (The
        overloads pair each call with the handler of its results.)"""
        t0 = self._t0_ns
        outs: _Outs = []
        keep = outs.append
        for data in frames:
            now = (_monotonic_ns() - t0) // 1000
            try:
                r = call(data, number, now)
            except Exception:
                self._pipeline_raised(st, number)
                continue
            if r.__class__ is tuple:  # the fast path's one-output result: sent with the batch
                keep(r)
            else:
                handle(r, st, now, outs)
        if outs:
            self._send_outputs(outs)

    def _handle_full(self, r: api.Drop | api.ProcessResult, st: PortStats, now: int,
                     outs: _Outs) -> None:
        """A ``Drop`` or a whole ``ProcessResult`` (of ``process``, or of the fast path: several
        outputs, digests, logs, ...): the outputs leave now, after those of the batch so far."""
        if isinstance(r, api.Drop):
            self._count_drop(r, st)
            return
        if outs:  # what came before goes out first
            self._send_outputs(outs)
            outs.clear()
        if r.drops or r.digests or r.logs:
            self._result_extras(r, st)
        for o in r.outputs:
            self._out_slow(o.port, o.data)

    def _handle_ingress(self, res: api.IngressResult, st: PortStats, now: int,
                        outs: _Outs) -> None:
        """An ``IngressResult`` (the general path): each job passes its egress queue at once
        when the queue is idle (``EgressQueue.pass_through``), else waits in it."""
        if res.drops or res.digests or res.logs:
            self._result_extras(res, st)
        qget = self.queues.queues.get
        for job in res.jobs:
            q = qget(job.egress_port)
            qm = q.pass_through(job, now) if q is not None and not job.priority else None
            if qm is not None:
                self._egress(job, now, qm)
            else:
                self._enqueue(job, now)

    def _send_outputs(self, outs: _Outs) -> None:
        """Transmit the one-output results of a batch, in order (lock held): each with its
        port's socket directly; the tx and queue counters of a run of outputs to the same port
        are local ints added when the run ends."""
        tx = self._tx
        last = -1
        lsend: Any = None
        lps: Any = None
        lqs: Any = None
        lq = lcnt = lbytes = 0
        for op, out in outs:
            if op != last:
                if lq:
                    _count_tx(lps, lqs, lq, lcnt, lbytes)
                    lq = lcnt = lbytes = 0
                ent = tx.get(op)
                if ent is None:  # CPU port, no port behind it, or a port with a pcap
                    last = -1
                    self._out_slow(op, out)
                    continue
                lsend, lps, lqs = ent
                last = op
            lq += 1
            try:
                lsend(out)
            except OSError:  # buffer full (wait for room) or refused: the careful path
                self.ports[op].send(out)
                continue
            lcnt += 1
            lbytes += len(out)
        if lq:
            _count_tx(lps, lqs, lq, lcnt, lbytes)

    def _pipeline_raised(self, st: PortStats | None, number: int) -> None:
        """The pipeline raised on a frame from port ``number`` (``st``: its counters, or None)."""
        self.counters.pipeline_errors += 1
        if st is not None:
            st.rx_errors += 1
        self._log_error(f"pipeline raised on a frame from port {number}")

    @staticmethod
    def _size_filter(port: Port, frames: list[bytes]) -> list[bytes]:
        st = port.stats
        max_frame = port.max_frame
        ok = []
        for data in frames:
            n = len(data)
            if n < MIN_FRAME:
                st.rx_too_short += 1
            elif n > max_frame:
                st.rx_oversized += 1
            else:
                ok.append(data)
        return ok

    def _out_slow(self, port: int, data: bytes) -> None:
        """One inline output, counted on its own: it passes the port's (unlimited) queue."""
        qs = self.queues.get(port).stats
        qs.enqueued += 1
        qs.dequeued += 1
        if not qs.max_depth_seen:
            qs.max_depth_seen = 1
        self._transmit(port, data)

    def _drain_injected(self) -> None:
        inject = self._inject
        for _ in range(BATCH):
            if not inject:
                return
            port, data = inject.popleft()
            if port < 0:  # packet_out
                if self.cpu_port is None:
                    self.counters.packet_out_dropped += 1
                    continue
                self.counters.packet_out += 1
                port = self.cpu_port
            p = self.ports.get(port)
            self._ingress(data, port, p.stats if p is not None else None)
        if inject:
            self._wake()

    def _ingress(self, data: bytes, port: int, st: PortStats | None) -> None:
        """General (not hot) ingress path: injected frames and packet_out."""
        pipeline = self.pipeline
        if pipeline is None:
            self.counters.no_program += 1
            return
        now = self.now_us()
        try:
            res = pipeline.ingress(data, port, now)
        except Exception:
            self._pipeline_raised(st, port)
            return
        if res.drops or res.digests or res.logs:
            self._result_extras(res, st)
        for job in res.jobs:
            self._enqueue(job, now)

    def _result_extras(self, res: api.IngressResult | api.EgressResult | api.ProcessResult,
                       st: PortStats | None) -> None:
        """Drops, digests and logs of a pipeline result; drops count on ``st`` unless None."""
        if res.drops:
            for d in res.drops:
                self._count_drop(d, st)
        if res.digests:
            self._pending_digests.extend(res.digests)
        if res.logs and log.isEnabledFor(logging.DEBUG):
            for line in res.logs:
                log.debug("log_msg: %s", line)

    def _count_drop(self, d: api.Drop, st: PortStats | None) -> None:
        self.counters.drops[d.reason] += 1
        if st is not None:
            if d.reason in _MALFORMED_REASONS:
                st.rx_malformed += 1
            else:
                st.rx_dropped += 1

    def _enqueue(self, job: api.EgressJob, now: int) -> None:
        queues = self.queues
        q = queues.queues.get(job.egress_port)
        if q is None:
            q = queues.get(job.egress_port)
        qmeta = q.pass_through(job, now)
        if qmeta is not None:
            self._egress(job, now, qmeta)
        elif q.enqueue(job, now):
            queues.backlogged.add(q.port)

    def _serve_queues(self) -> None:
        queues = self.queues
        for port in list(queues.backlogged):
            q = queues.queues[port]
            while True:
                now = self.now_us()
                item = q.dequeue(now)
                if item is None:
                    break
                self.egress_delay_us.add(item[1].deq_timedelta)
                cut = q.trim_bytes if q.last_trimmed and item[0].packet_length == q.trim_bytes \
                    else None   # a promoted control packet leaves whole
                self._egress(item[0], now, item[1], cut)
            if not len(q):
                queues.backlogged.discard(port)

    def _egress(self, job: api.EgressJob, now: int, qmeta: api.QueueingMetadata,
                cut: int | None = None) -> None:
        pipeline = self.pipeline
        if pipeline is None:  # defensive: a swap flushes queues, so this should not happen
            self.counters.no_program += 1
            return
        try:
            res = pipeline.egress(job, now, qmeta)
        except Exception:
            self.counters.pipeline_errors += 1
            self._log_error(f"pipeline egress raised on a packet for port {job.egress_port}")
            return
        for out in res.outputs:
            self._transmit(out.port, out.data if cut is None else trim_frame(out.data, cut))
        if res.drops or res.digests or res.logs:
            self._result_extras(res, None)  # an egress drop is not counted on any port
        for j in res.jobs:
            self._enqueue(j, now)

    def _transmit(self, port: int, data: bytes) -> None:
        line = self.delay_lines.get(port)
        if line is not None:
            q = self.queues.queues.get(port)   # a rate-limited port: the frame's last bit arrives
            s = q.service_time_us(len(data)) if q is not None else 0.0
            line.push(self.now_us(), data, s, s if port in self.host_ports else 0.0)
            self._in_flight.add(port)
            return
        self._send_now(port, data)

    def _send_due(self, line: DelayLine, now_us: float) -> None:
        """Write the frames of ``line`` that have arrived by ``now_us`` (loop thread)."""
        for data in line.pop_due(now_us):
            self._send_now(line.port, data)

    def _serve_wires(self) -> None:
        now = self.now_us()
        lines = self.delay_lines
        for port in list(self._in_flight):
            line = lines.get(port)
            if line is not None:
                self._send_due(line, now)
                if len(line):
                    continue
            self._in_flight.discard(port)

    def next_wire_due_us(self) -> float | None:
        """When the earliest frame on any port's wire arrives (None: no frame in flight)."""
        due = [t for p in self._in_flight if (line := self.delay_lines.get(p)) is not None
               and (t := line.next_due_us()) is not None]
        return min(due) if due else None

    def _send_now(self, port: int, data: bytes) -> None:
        p = self.ports.get(port)
        if p is not None:
            p.send(data)
        elif port == self.cpu_port:
            self.counters.packet_in += 1
            self._pending_packet_in.append(data)
        else:
            self.counters.tx_no_port += 1

    def _dispatch_listeners(self) -> None:
        """Run packet-in and digest callbacks (loop thread, lock released)."""
        pkts = self._pending_packet_in[:]
        self._pending_packet_in.clear()
        digests = self._pending_digests[:]
        self._pending_digests.clear()
        self.counters.digests += len(digests)
        for data in pkts:
            for cb in list(self._packet_in_listeners):
                try:
                    cb(data)
                except Exception:
                    self._log_error("packet-in listener raised")
        for dg in digests:
            for dcb in list(self._digest_listeners):
                try:
                    dcb(dg)
                except Exception:
                    self._log_error("digest listener raised")
