"""The simulator's per-packet path compiled whole: ``CoreLoop``, an EventLoop in C.

With fabric.p4 compiled to C (p4switch.native) the hop around the pipeline was what cost:
the event heap, the wires, the egress FIFOs and the switch's receive/serve in Python (~70 %
of a run's CPU). ``engage(net)`` moves all of that into one C module (sim/core_c.py, built
with cffi like the native pipeline, once per machine) that calls the switches' native
pipelines directly, so a packet crosses the fabric without Python between hops. Python keeps
the build, the control plane, the hosts' transport and the results: a host's event or a frame
reaching a host makes the C loop return here, which runs it and goes on.

Results are those of the Python path byte for byte (same arithmetic, same event keys — the C
code hashes a key tuple as CPython does —, the same tickets at the same moments):
tests/sim/test_core.py runs both on every scheme. ``SimConfig.core = "python"`` (or
``--core python``; ``--pipeline python`` implies it) keeps the Python path; without a C
compiler the run says so in one line and takes it too.

What the Python objects show is copied back from C: each switch's packet counts and the
frames switches took in (``record_ingress``) when ``run`` returns, its queues' statistics and
each link's counters on ``sync()`` (SimResult.collect and a split run's parts call it;
``sim.network.SimNetwork.sync`` for a caller reading them otherwise). A queue's content and
a switch's wire clocks live in C only.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from p4switch import NATIVE_STALE as STALE
from p4switch import NativePipeline, NativeUnavailable, native_build

from . import hostc, hostc_c
from .core_c import CDEF, SOURCE
from .events import EventLoop, Key
from .frameblob import FrameBlob
from .frames import ACK_FRAME_LEN as _HEAD
from .host import SimHost

if TYPE_CHECKING:
    from .link import Link
    from .network import SimNetwork

_INF = float("inf")
MAX_PORTS = 1024
"""Switch ports the C core indexes directly (sim/core_c.py's MAX_PORTS; v1model's are 9-bit)."""
_REFUSED: set[str] = set()
_FIXED = 1 << 62
"""Handles from here on are ``scheduler``'s (one per callback, never popped)."""
_NOTE = 1 << 61
"""core_step's CORE_NOTE: a host in C has a note for Python (sim.hostc)."""


class CoreUnavailable(Exception):
    """The C core cannot run this network (one line why)."""


def load() -> Any:
    """The compiled core module (built on first use, cached per machine)."""
    try:
        return native_build(SOURCE + hostc_c.SOURCE, CDEF + hostc_c.CDEF, prefix="_simcore_")
    except NativeUnavailable as exc:
        raise CoreUnavailable(str(exc).replace("native pipeline", "simulator's C core")) \
            from None


def _refuse(why: str) -> None:
    if why not in _REFUSED:
        _REFUSED.add(why)
        print(f"sim: the Python event loop runs the simulation ({why})", file=sys.stderr)


def eligible(net: SimNetwork) -> str | None:
    """Why ``net`` cannot run on the C core (None: it can)."""
    for sw in net.switches.values():
        if type(sw.pipe) is not NativePipeline:
            return f"switch {sw.name} does not run the native pipeline"
        for q in sw._q.values():
            if q.priorities != 1 or q._interval_us:
                return f"switch {sw.name}: priority queues or a packet rate"
        if any(not 0 <= p < MAX_PORTS for p in sw._out):
            return f"switch {sw.name}: a port beyond {MAX_PORTS - 1}"
        oracle = sw.port_oracle
        if oracle is not None and not hasattr(getattr(oracle, "__self__", None), "_routes"):
            return f"switch {sw.name}: a port oracle the core cannot read"
    return None


def engage(net: SimNetwork) -> bool:
    """Run ``net`` on the C core from now on, if it can (True); else leave it as it is and
    say why once (a machine without a compiler, a switch without the native pipeline)."""
    if isinstance(net.loop, CoreLoop):
        return True
    why = eligible(net)
    if why is not None:
        return False
    try:
        mod = load()
    except CoreUnavailable as exc:
        _refuse(str(exc).splitlines()[0])
        return False
    CoreLoop(net, mod)
    return True


class CoreLoop:
    """The EventLoop interface (sim.events) over the C core; see the module docstring."""

    def __init__(self, net: SimNetwork, mod: Any) -> None:
        old = net.loop
        assert isinstance(old, EventLoop)
        ffi, lib = mod.ffi, mod.lib
        self._ffi, self._lib = ffi, lib
        self._net = net
        self.links: list[Link] = [d for pair in net.links for d in pair]
        self.switches = list(net.switches.values())
        sw_index = {sw.name: i for i, sw in enumerate(self.switches)}
        self._K = ffi.gc(lib.core_new(len(self.links), len(self.switches)), lib.core_free)
        K = self._K
        self._cbs: dict[int, tuple[Callable[[float, Any], None], Any]] = {}
        self._count = itertools.count(1)   # handles of Python's events (> 0: core_step)
        self._fixed: list[Callable[[float, Any], None]] = []
        """Callbacks with a handle of their own (``scheduler``): _FIXED + their index."""
        self._sched = lib.core_schedule
        self._kt, self._kid, self._kc = ffi.new("double *"), ffi.new("int64_t *"), \
            ffi.new("int64_t *")
        self._i64 = ffi.new("int64_t[8]")
        self._f64 = ffi.new("double *")
        self._dsw = ffi.new("int32_t[]", len(self.switches) + 1)
        self._dlk = ffi.new("int32_t[]", len(self.links) + 1)
        self._nl = ffi.new("int32_t *")
        # what C changed since the last sync(): only those are copied (in a split run the
        # other parts' switches and links are written into this process's objects from
        # their results, and must stay so)
        self._touched_sw: set[int] = set()
        self._touched_links: set[int] = set()
        self._boxes: list[list[Any]] = []
        """The outboxes (one per other part) by their id in C, 1 + the index here."""
        for i, d in enumerate(self.links):
            lib.core_link_init(K, i, d.us_per_byte, d.prop_us, sw_index.get(d.dst, -1),
                               d.dst_port)
            lib.core_link_set(K, i, int(d.up), self._box(d.outbox))
            d._core, d._ci, d._loop = self, i, self  # type: ignore[assignment]  # duck-typed loop
            self._bind_send(d)
        link_index = {id(d): i for i, d in enumerate(self.links)}
        record = int(net.cfg.record_ingress)
        for s, sw in enumerate(self.switches):
            np: NativePipeline = sw.pipe
            pf, pl = np._ffi, np._lib

            def addr(x: Any, pf: Any = pf) -> int:
                return int(pf.cast("uintptr_t", x))

            if lib.core_switch_init(
                    K, s, addr(np._P), addr(pf.addressof(pl, "p4n_process")),
                    addr(pf.addressof(pl, "p4n_ingress")), addr(pf.addressof(pl, "p4n_egress")),
                    pf.sizeof("struct p4ctx"), np._sh.slack, sw.uptime_us, int(sw.fast_path),
                    sw.trim_bytes or 0, record):
                raise CoreUnavailable("switches with different native programs")
            for port, link in sw._out.items():
                q = sw._q[port]
                if lib.core_port_add(K, s, port, link_index[id(link)], int(q._paced),
                                     q._us_per_byte, q.depth) < 0:
                    raise CoreUnavailable(f"switch {sw.name}: port {port} out of range")
            sw.loop = self  # type: ignore[assignment]  # the EventLoop interface, duck-typed
        self.set_routes()
        for h in net.hosts.values():
            h.bind(self)  # type: ignore[arg-type]  # the EventLoop interface, duck-typed
        self._chosts = hostc.engage(self, net)
        """The hosts whose per-packet path runs in C (sim.hostc; empty: none)."""
        hosts = {h.name: h for h in net.hosts.values()}
        self._arrive: list[Callable[[float, bytes, int], None] | None] = [
            hosts[d.dst].arrive if d.dst in hosts and getattr(d._peer, "__func__", None)
            is SimHost.receive else None for d in self.links]
        """Per link, the host it leads to (``SimHost.arrive``: no payload copied to Python)."""
        # what was scheduled on the Python loop so far (failures, control loops' first tick)
        K.now, K.horizon = old.now, old.horizon
        for t, key, fn, arg in sorted(old._heap, key=lambda e: (e[0], e[1])):
            self.push(t, key, fn, arg)
        K.cur_id, K.cur_child = old._id, old._child
        net.loop = self  # type: ignore[assignment]  # the EventLoop interface, duck-typed

    # -- routes (the fast path's port oracle) ----------------------------------------------
    def set_routes(self) -> None:
        """Hand every switch's port oracle (sim.network.RoutePorts) to C again."""
        ffi, lib, K = self._ffi, self._lib, self._K
        for s, sw in enumerate(self.switches):
            oracle = sw.port_oracle
            if oracle is None:
                lib.core_set_routes(K, s, -1, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL)
                continue
            routes = oracle.__self__._routes  # type: ignore[attr-defined]  # a RoutePorts method (eligible)
            offsets = [0]
            ports: list[int] = []
            for _m, _p, ps in routes:
                ports.extend(ps)
                offsets.append(len(ports))
            lib.core_set_routes(K, s, len(routes), [r[0] for r in routes] or [0],
                                [r[1] for r in routes] or [0], offsets, ports or [0])

    # -- EventLoop's interface -------------------------------------------------------------
    @property
    def now(self) -> float:
        return self._K.now

    @property
    def events_run(self) -> int:
        return self._K.events_run

    @property
    def horizon(self) -> float:
        return self._K.horizon

    @horizon.setter
    def horizon(self, t: float) -> None:
        self._K.horizon = t

    @property
    def reached_until(self) -> bool:
        return bool(self._K.reached_until)

    def schedule(self, t: float, fn: Callable[[float, Any], None], arg: Any = None) -> None:
        h = next(self._count)
        self._cbs[h] = (fn, arg)
        self._sched(self._K, t, h)

    def scheduler(self, fn: Callable[[float, Any], None]) -> Callable[[float], None]:
        """As EventLoop.scheduler: a handle of its own, kept for the run (``fn``'s argument
        is None)."""
        h = _FIXED + len(self._fixed)
        self._fixed.append(fn)
        sched, K = self._sched, self._K

        def at(t: float) -> None:
            sched(K, t, h)

        return at

    def handle(self, fn: Callable[[float, Any], None]) -> int:
        """A handle of its own for ``fn`` (as ``scheduler``'s), for C to schedule it by."""
        self._fixed.append(fn)
        return _FIXED + len(self._fixed) - 1

    def ticket(self) -> Key:
        self._lib.core_ticket(self._K, self._kt, self._kid, self._kc)
        return (self._kt[0], self._kid[0], self._kc[0])

    def push(self, t: float, ticket: Key, fn: Callable[[float, Any], None],
             arg: Any = None) -> None:
        h = next(self._count)
        self._cbs[h] = (fn, arg)
        self._lib.core_push(self._K, t, ticket[0], ticket[1], ticket[2], h)

    @contextmanager
    def root(self, key: int) -> Iterator[None]:
        K = self._K
        saved = K.cur_id, K.cur_child
        K.cur_id, K.cur_child = key, 0
        try:
            yield
        finally:
            K.cur_id, K.cur_child = saved

    def stop(self) -> None:
        self._K.stopped = 1

    def stop_before(self, t: float) -> None:
        if t < self._K.horizon:
            self._K.horizon = t

    def __len__(self) -> int:
        return int(self._lib.core_len(self._K))

    @property
    def next_time(self) -> float:
        return self._lib.core_next_time(self._K)

    @property
    def done(self) -> bool:
        K = self._K
        return bool(K.stopped) or self._lib.core_next_time(K) >= K.horizon

    def run(self, until: float = _INF, max_events: int | None = None,
            before: float = _INF) -> float:
        """As EventLoop.run."""
        K, lib = self._K, self._lib
        lib.core_begin(K)
        limit = -1 if max_events is None else max_events
        cbs, links, step = self._cbs, self.links, lib.core_step
        unpack = self._ffi.unpack
        arrive, fixed, chosts = self._arrive, self._fixed, self._chosts
        try:
            while True:
                if STALE:
                    _sync_stale()
                r = step(K, until, before, limit)
                if r >= _FIXED:
                    fixed[r - _FIXED](K.now, None)
                elif r == _NOTE:
                    chosts[K.note_host].note(K.note_kind, K.note_flow, K.note_rank, K.now)
                elif r > 0:
                    fn, arg = cbs.pop(r)
                    fn(K.now, arg)
                elif r < -1:
                    fn = arrive[-2 - r]
                    if fn is not None:   # a host: its headers and the frame's length
                        n = K.r_len
                        fn(K.now, unpack(K.r_frame, n if n < _HEAD else _HEAD), n)
                        continue
                    d = links[-2 - r]
                    d._peer(K.now, (d._peer_port, unpack(K.r_frame, K.r_len)))
                elif r == 0:
                    break
                else:
                    self._raise()
        finally:
            self._collect()
        return K.now

    # -- links -----------------------------------------------------------------------------
    def link_send(self, i: int, start_us: float, frame: bytes) -> None:
        if self._lib.core_link_send(self._K, i, start_us, frame, len(frame)) < 0:
            self._raise()
        if self.links[i]._outbox is not None:  # sent outside run(): on the outbox at once
            self._drain_outbox()

    def link_accept(self, i: int, t: float, ticket: Key, frame: bytes) -> None:
        if self._lib.core_link_accept(self._K, i, t, ticket[0], ticket[1], ticket[2], frame,
                                      len(frame)) < 0:
            self._raise()

    def link_state(self, link: Link) -> None:
        """``link`` went down or came back (Link.fail/restore), or got or lost an outbox
        (sim.parallel gives it one when its receiver is another part's)."""
        self._lib.core_link_set(self._K, link._ci, int(link.up), self._box(link.outbox))
        self._bind_send(link)

    def _box(self, outbox: list[Any] | None) -> int:
        """``outbox``'s id in C (0: none)."""
        if outbox is None:
            return 0
        for b, box in enumerate(self._boxes, 1):
            if box is outbox:
                return b
        self._boxes.append(outbox)
        return len(self._boxes)

    def _bind_send(self, link: Link) -> None:
        """``link.send`` straight into C (a host sends every frame through it): one call
        instead of Link.send's and this object's; through ``link_send`` on an outbox."""
        if link.outbox is not None:
            link.__dict__.pop("send", None)  # Link.send: through link_send, which drains
            return
        send, K, i, fail = self._lib.core_link_send, self._K, link._ci, self._raise

        def direct(start_us: float, frame: bytes) -> None:
            if send(K, i, start_us, frame, len(frame)) < 0:
                fail()

        link.send = direct  # type: ignore[method-assign]  # an instance's own, as above

    def _drain_outbox(self) -> None:
        """The frames C kept for other parts, onto their outboxes as one FrameBlob per
        outbox, in sending order (every send, a host's too, goes through C). A frame's link
        is its index in ``links``, the order sim.parallel numbers them (``Link.index``)."""
        K, lib, ffi = self._K, self._lib, self._ffi
        held = ffi.new("int64_t *")
        for b, box in enumerate(self._boxes, 1):
            n = lib.core_box_count(K, b, held)
            if not n:
                continue
            head = ffi.new("char[]", 44 * n)
            data = ffi.new("char[]", max(1, held[0]))
            first = lib.core_box_take(K, b, head, data)
            box.append(FrameBlob(n, first, ffi.buffer(head)[:], ffi.buffer(data)[:]))

    def accept_blob(self, blob: FrameBlob) -> None:
        """Another part's frames onto their wires, in order (as ``link_accept`` on each)."""
        if self._lib.core_accept_blob(self._K, blob.n, blob.head, blob.data) < 0:
            self._raise()

    # -- errors and results ----------------------------------------------------------------
    def _raise(self) -> None:
        text = self._ffi.string(self._K.err).decode()
        if text.startswith("V:"):
            raise ValueError(text[2:])
        raise RuntimeError(text[2:])

    def _collect(self) -> None:
        """After each ``run``: the switches' packet counts (a progress display, a split run's
        windows read them) and the frames they took in (``record_ingress``)."""
        K, lib, ffi = self._K, self._lib, self._ffi
        if K.nout:
            self._drain_outbox()
        i64 = self._i64
        ns = lib.core_take_dirty(K, self._dsw, len(self.switches) + 1, self._dlk,
                                 len(self.links) + 1, self._nl)
        touched = self._dsw[0:ns]
        self._touched_sw.update(touched)
        self._touched_links.update(self._dlk[0:self._nl[0]])
        for s in touched:
            sw = self.switches[s]
            lib.core_switch_stats(K, s, i64)
            sw.packets_in, sw.fast_packets, sw.pipeline_drops, sw.unconnected = \
                i64[0], i64[1], i64[2], i64[3]
        if K.nlog:
            log = lib.core_log(K)
            names = [sw.name for sw in self.switches]
            dest = self._net.ingress_log
            for j in range(K.nlog):
                e = log[j]
                dest.append((names[e.sw], e.t, e.port, ffi.unpack(e.data, e.len)))
            lib.core_log_clear(K)


    def sync(self) -> None:
        """Copy the queue statistics and link counters C changed since the last sync into the
        Python objects: what results read at the end (SimResult.collect, a split run's
        parts). Not after every ``run``: a split run's windows are many."""
        K, lib = self._K, self._lib
        self._collect()
        i64, f64 = self._i64, self._f64
        for s in sorted(self._touched_sw):
            sw = self.switches[s]
            for port, q in sw._q.items():
                lib.core_queue_stats(K, s, port, i64, f64)
                st = q.stats
                st.enqueued, st.dequeued, st.tail_drops, st.max_depth_seen, st.trimmed, \
                    st.promoted = i64[0], i64[1], i64[2], i64[3], i64[4], i64[5]
                q._next_free_us = f64[0]
        for i in sorted(self._touched_links):
            d = self.links[i]
            lib.core_link_stats(K, i, i64)
            d.tx_packets, d.tx_bytes, d.lost_packets = i64[0], i64[1], i64[2]
        self._touched_sw.clear()
        self._touched_links.clear()


def _sync_stale() -> None:
    """Copy the tables the control plane rewrote into the native pipelines' C state."""
    for p in list(STALE):
        if p._dirty:
            p._sync()
    STALE.clear()
