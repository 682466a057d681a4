"""One run split over processes: a conservative parallel discrete-event simulation.

Each process simulates one part of the fabric (sim.partition) with its own event loop, and
they advance in windows one lookahead ``L`` long — the links' propagation delay. A frame put on
a link at ``t >= w`` reaches the far end at ``t + serialisation + L >= w + L``, so in a window
``[w, w + L)`` every process can run all of its events without hearing from the others; a frame
for another part is kept (``Link.outbox``) and handed over at the window's end, when the
processes also agree on where the next window starts: at the earliest event anywhere, so idle
stretches (a k=16 AllToAll waits ~1 ms for its last retransmission timeouts) cost one window.

Results are those of one loop, exactly: an event's key (sim.events) is made from its causes,
not from a counter of its loop, so every process runs each of its events at the same time and
in the same order as a single loop would; a run ends a lookahead after its last rank finished
whether it is split or not. tests/sim/test_parallel.py compares whole runs, split and not.

The process that calls ``run_split`` simulates part 0 and forks the others (``fork``: they
start with the built fabric, nothing is pickled on the way out). At the end each sends its
part's results back — its ranks' metrics, its switches' counters, registers, direct counters
and queue statistics, its hosts' and links' counters — and they are written into the caller's
network, so ``member_counters(net)`` and the rest read the whole fabric afterwards.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing as mp
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Protocol, cast

from .frameblob import FrameBlob, Outgoing
from .partition import partition
from .results import Progress

if TYPE_CHECKING:
    from traffic.metrics import RankMetrics

    from .host import Job
    from .link import Link
    from .network import SimNetwork

_INF = float("inf")
_CHUNK = 256
"""Frames per message between parts (~1 MB of 4 KB frames)."""


class Channel(Protocol):
    """One part's end of its link to another: a multiprocessing Connection between forked
    parts, a pair of Ray queues between parts on a cluster (sim.rayparts)."""

    def send(self, obj: Any) -> None: ...

    def recv(self) -> Any: ...


@dataclass
class _Window:
    """What a part tells each other part at the end of a window."""

    next_t: float
    """The sender's earliest event."""
    sent_t: float
    """The earliest arrival among every frame it sent this window (to any part)."""
    done_at: float | None
    """When its last rank finished (None: one is still running)."""
    now: float
    events: int
    hops: int
    flows_done: int


@dataclass
class SplitOutcome:
    """How a split run ended, for SimResult.collect."""

    end_us: float
    events: int
    ranks: list[RankMetrics] = field(repr=False)
    windows: int
    exchanged: int
    """Frames handed from one part to another."""
    parts: list[int] = field(default_factory=list)
    """Nodes per part."""
    loops: list[str] = field(default_factory=list)
    """What ran each forked part's events: "CoreLoop" (sim.core), "CoreLoop+hostc" (its
    hosts' per-packet path in C too: sim.hostc) or "EventLoop"."""


class _Part:
    def __init__(self, net: SimNetwork, job: Job, me: int, part_of: dict[str, int],
                 peers: dict[int, Channel], until: float) -> None:
        self.net, self.job, self.me, self.part_of = net, job, me, part_of
        self.peers = dict(sorted(peers.items()))
        self.until = until
        self.lookahead = net.cfg.prop_delay_us
        self.loop = net.loop
        self.links: list[Link] = [d for pair in net.links for d in pair]
        self.out: dict[int, list[Outgoing]] = {q: [] for q in self.peers}
        for i, d in enumerate(self.links):
            d.index = i
            a, b = part_of[d.src], part_of[d.dst]
            if a == me and b != me:
                d.outbox = self.out[b]
        self.hosts = [h for n, h in net.hosts.items() if part_of[n] == me]
        self.switches = [s for n, s in net.switches.items() if part_of[n] == me]
        mine = [r for r, h in enumerate(job.rank_hosts) if part_of[h.name] == me]
        job.ranks_left = len(mine)
        job.done_at = None if mine else -_INF
        job.on_done = _record_only
        self.windows = 0
        self.exchanged = 0

    def _earliest_sent(self) -> float:
        return min((f.first_t if isinstance(f, FrameBlob) else f[1]
                    for frames in self.out.values() for f in frames), default=_INF)

    def exchange(self) -> list[_Window]:
        """Hand every part its frames and hear from each; peers in a fixed order, the lower
        part sending first, so no two processes wait on each other. Returns every part's
        window, this one's first."""
        loop = self.loop
        mine = _Window(next_t=loop.next_time, sent_t=self._earliest_sent(),
                       done_at=self.job.done_at, now=loop.now, events=loop.events_run,
                       hops=sum(s.packets_in for s in self.switches),
                       flows_done=sum(h.flows_done for h in self.hosts))
        got = [mine]
        for q, conn in self.peers.items():
            if self.me < q:
                self._send(conn, q, mine)
                got.append(self._receive(conn, q))
            else:
                got.append(self._receive(conn, q))
                self._send(conn, q, mine)
        self.windows += 1
        return got

    def _send(self, conn: Channel, q: int, mine: _Window) -> None:
        """Part ``q``'s frames, a chunk per message, the last chunk with this part's window:
        no message holds a whole window's frames (at k=16 up to ~1,300 frames, 5 MB, pickled
        and unpickled at once), so neither side keeps a window's worth of copies; a window
        with few frames is still one message (a Ray queue's message costs a remote call)."""
        frames = self.out[q]
        chunks = [frames[i:i + _CHUNK] for i in range(0, len(frames), _CHUNK)] or [[]]
        frames.clear()
        for chunk in chunks[:-1]:
            conn.send(("f", chunk))
        conn.send(("w", (mine, chunks[-1])))

    def _receive(self, conn: Channel, q: int) -> _Window:
        """Part ``q``'s frames, each put on its wire as its chunk arrives, and its window.
        (The order of the wires' ``accept`` calls is the frames' order, peer by peer, as
        before; accepting cannot change what this part sends, computed already.)"""
        links = self.links
        accept_blob = getattr(self.loop, "accept_blob", None)   # the C core's (sim.core)
        while True:
            kind, body = _message(conn, q)
            window = None
            if kind == "w":
                window, body = body
            for item in body:
                if type(item) is FrameBlob:
                    self.exchanged += item.n
                    if accept_blob is not None:
                        accept_blob(item)
                        continue
                    frames = item.frames()
                else:
                    self.exchanged += 1
                    frames = iter((item,))
                for idx, t, ticket, frame in frames:
                    links[idx].accept(t, ticket, frame)
            if window is not None:
                return cast(_Window, window)

    def run(self, progress: Callable[[int, int, int, float], None] | None = None) -> float | None:
        """Run windows to the end. Returns the time reached, as ``EventLoop.run`` would, or
        None when the run ended a lookahead after its last rank: that time is then the latest
        of every part's (``end``)."""
        loop, until, la = self.loop, self.until, self.lookahead
        while True:
            parts = self.exchange()
            if progress is not None:
                progress(sum(w.events for w in parts), sum(w.hops for w in parts),
                         sum(w.flows_done for w in parts), loop.now)
            dones = [w.done_at for w in parts if w.done_at is not None]
            nxt = min(min(w.next_t, w.sent_t) for w in parts)
            if len(dones) == len(parts):
                # every rank finished: as one loop would, run on to a lookahead after the
                # last; what is sent from here on arrives after that and is never run
                loop.stop_before(max(dones) + la)
                loop.run(until=until)
                for frames in self.out.values():
                    frames.clear()
                return None
            if nxt == _INF:
                return max(w.now for w in parts)
            if nxt > until:
                return until
            loop.run(until=until, before=nxt + la)

    def end(self) -> tuple[float, bool]:
        """This part's time reached and whether its loop stopped at ``until``."""
        return self.loop.now, self.loop.reached_until

    def results(self) -> PartResult:
        """This part's share of the results, to be written into part 0's network."""
        self.net.sync()
        ranks = [m for h in self.hosts if h.job is not None for m in h.results()]
        switches = {s.name: _switch_state(s) for s in self.switches}
        hosts = {h.name: (h.frames_sent, h.bytes_sent, h.frames_received, h.bad_frames)
                 for h in self.hosts}
        links = {d.index: (d.tx_packets, d.tx_bytes, d.lost_packets) for d in self.links
                 if self.part_of[d.src] == self.me}
        return PartResult(ranks, switches, hosts, links, self.net.ingress_log,
                          self.loop.events_run, self.exchanged, self.end(),
                          horizon=self.loop.horizon, windows=self.windows,
                          loop=type(self.loop).__name__
                          + ("+hostc" if getattr(self.loop, "_chosts", None) else ""))


@dataclass(slots=True)
class SwitchState:
    """What a part's run changed in one switch, for part 0's copy of it: its packet counts
    (in, fast path, pipeline drops, unconnected), its queues' statistics, the non-zero cells
    of its counters (packets, bytes) and registers, and its direct counters' entries that counted."""

    counts: tuple[int, int, int, int]
    queues: dict[int, Any]
    counters: dict[str, tuple[list[tuple[int, int]], list[tuple[int, int]]]]
    registers: dict[str, list[tuple[int, int]]]
    direct: dict[str, list[tuple[Any, int, int, int]]]
    """Per table, its entries whose direct counter is not 0."""


@dataclass(slots=True)
class PartResult:
    """A part's share of a split run, sent to the caller (pickled): its ranks' records, its
    switches' state, its hosts' frame counts (sent frames and bytes, received, bad) and its
    links' (packets, bytes, lost) by link index, the frames its switches took in, its loop's
    event count, the frames it exchanged with other parts, and its end (time, reached until)."""

    ranks: list[RankMetrics]
    switches: dict[str, SwitchState]
    hosts: dict[str, tuple[int, int, int, int]]
    links: dict[int, tuple[int, int, int]]
    ingress: list[tuple[str, float, int, bytes]]
    events: int
    exchanged: int
    end: tuple[float, bool]
    stopped: float | None = None
    """What its ``_Part.run`` returned (part 0's says how the run ended)."""
    horizon: float = _INF
    """Its loop's horizon at the end: no event at or after it ran."""
    windows: int = 0
    loop: str = ""
    """The type of its loop (sim.core's or sim.events')."""


def _record_only(now: float) -> None:
    """A part's last rank finished: the windows decide when the run ends."""


def _elsewhere(now: float, arg: Any) -> None:
    raise RuntimeError("a frame was delivered to a node that another part simulates")


def shed(net: SimNetwork, part_of: dict[str, int], me: int) -> None:
    """Drop from this process the switches that other parts simulate: their pipelines,
    tables and queues are most of a built fabric, and a part that starts with the whole of
    it (forked from the process that built it, or a Ray task that built its own) never
    reads them. The links into them are cut (a frame for another part leaves through the
    link's outbox, never its peer), the cycles they were in collected, and freed memory
    handed back to the system. Part 0 keeps its network whole: the results are written
    into it."""
    for pair in net.links:
        for d in pair:
            if part_of[d.dst] != me:
                d.attach(net.loop, _elsewhere, d.dst_port)
    for name in [n for n in net.switches if part_of[n] != me]:
        del net.switches[name]
    frozen = gc.get_freeze_count()
    gc.unfreeze()   # a forked part inherits the caller's frozen fabric (SimNetwork.run)
    gc.collect()
    if frozen:
        gc.freeze()
    _trim_heap()


def _trim_heap() -> None:
    """Give free heap pages back to the system (glibc; elsewhere nothing)."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _expect(conn: Channel, q: int) -> Any:
    """The next message from part ``q``; its failure (or its death) raised here."""
    return _message(conn, q)[1]


def _message(conn: Channel, q: int) -> tuple[str, Any]:
    """The next (kind, body) from part ``q``; its failure (or its death) raised here."""
    try:
        kind, body = conn.recv()
    except EOFError:
        raise RuntimeError(f"part {q} of the split run exited without a word (killed? out "
                           "of memory?)") from None
    if kind == "error":
        raise RuntimeError(f"part {q} of the split run failed:\n{body}")
    return kind, body


def _switch_state(sw: Any) -> SwitchState:
    pipe = sw.pipe
    direct = {table: pipe.direct_counts(table) for table in set(pipe.direct_counters.values())}
    return SwitchState(
        counts=(sw.packets_in, sw.fast_packets, sw.pipeline_drops, sw.unconnected),
        queues={p: q.stats for p, q in sw._q.items()},
        counters={n: (_sparse(c.packets), _sparse(c.bytes)) for n, c in pipe.counters.items()},
        registers={n: _sparse(r.values) for n, r in pipe.registers.items()},
        direct=direct)


def _sparse(values: list[int] | memoryview) -> list[tuple[int, int]]:
    """The cells that are not 0 (most of a switch's ~60k register and counter cells are)."""
    if isinstance(values, memoryview) and not values.tobytes().strip(b"\0"):
        return []  # all 0 (a lazily zeroed array, p4switch externs), found at C speed
    return [(i, v) for i, v in enumerate(values) if v]


def _load(net: SimNetwork, res: PartResult) -> None:
    """Write a part's results into this process's copies of its switches, hosts and links."""
    for name, st in res.switches.items():
        sw = net.switches[name]
        sw.packets_in, sw.fast_packets, sw.pipeline_drops, sw.unconnected = st.counts
        for p, stats in st.queues.items():
            sw.queue(p).stats = stats
        pipe = sw.pipe
        for n, (pk, by) in st.counters.items():
            c = pipe.counters[n]
            _unsparse(c.packets, pk)
            _unsparse(c.bytes, by)
        for n, vals in st.registers.items():
            _unsparse(pipe.registers[n].values, vals)
        for table, rows in st.direct.items():
            # only counts that are not 0 travel: this copy's others are 0 afterwards too
            for match, prio, _pk, _by in pipe.direct_counts(table):
                pipe.direct_counter_write(table, match, prio, 0, 0)
            for match, prio, n_pk, n_by in rows:
                pipe.direct_counter_write(table, match, prio, n_pk, n_by)
    for name, counts in res.hosts.items():
        h = net.hosts[name]
        h.frames_sent, h.bytes_sent, h.frames_received, h.bad_frames = counts
    links = [d for pair in net.links for d in pair]
    for idx, (tx_pk, tx_by, lost) in res.links.items():
        d = links[idx]
        d.tx_packets, d.tx_bytes, d.lost_packets = tx_pk, tx_by, lost


def _unsparse(into: list[int] | memoryview, cells: list[tuple[int, int]]) -> None:
    if isinstance(into, memoryview):  # a big array in lazily zeroed memory (p4switch externs)
        for i, _v in _sparse(into):
            into[i] = 0
    else:
        into[:] = [0] * len(into)
    for i, v in cells:
        into[i] = v


def _child(net: SimNetwork, job: Job, me: int, part_of: dict[str, int],
           peers: dict[int, Connection], until: float, others: list[Connection],
           home: Connection, progress_every: int) -> None:
    for conn in others:  # every end not its own: closed, so a part that dies is an EOF
        conn.close()
    run_part(net, job, me, part_of, dict(peers), until, home, progress_every)


def run_part(net: SimNetwork, job: Job, me: int, part_of: dict[str, int],
             peers: dict[int, Channel], until: float, home: Channel | None = None,
             progress_every: int = 0) -> None:
    """Part ``me``'s whole life after its start: drop the other parts' switches (``shed``),
    run its windows, then send its results to ``home`` (a forked part: the caller, which
    simulates none) or, without one, to part 0 (a Ray task); its failure to every peer and
    home. With ``progress_every`` it sends home the run's progress (events, packet-hops,
    flows done, virtual time) once that many more events ran in all parts."""
    try:
        shed(net, part_of, me)
        net.engage_core()  # before _Part, which takes the loop it runs
        part = _Part(net, job, me, part_of, peers, until)
        net.ingress_log.clear()  # what the caller recorded before: it has that already
        net.start_hosts(part.hosts)
        report = None
        if progress_every and home is not None:
            last = -progress_every
            out = home

            def report(events: int, hops: int, done: int, now: float) -> None:
                nonlocal last
                if events - last >= progress_every:  # as often as one loop's slices
                    last = events
                    out.send(("progress", (events, hops, done, now)))
        stopped = part.run(report)
        res = part.results()
        res.stopped = stopped
    except BaseException:  # noqa: BLE001 - reported to the caller, which raises it
        text = traceback.format_exc()
        for conn in [*peers.values(), *([home] if home is not None else [])]:
            try:
                conn.send(("error", text))
            except OSError:
                pass
        return
    (home if home is not None else peers[0]).send(("ok", res))


def run_split(net: SimNetwork, job: Job, parts: int, until: float,
              progress: Callable[[Progress], None] | None = None,
              flows_total: int = 0, progress_every: int = 1 << 17,
              recipe: Callable[[], tuple[SimNetwork, Job]] | None = None) -> SplitOutcome:
    """Run ``job`` on ``net`` in ``parts`` forked processes, this one waiting for their
    results (it keeps the whole fabric, untouched, for them to be written into; each part
    drops what it does not simulate, so no process holds the whole fabric and a run's
    state). ``progress`` is called at the end of a window once ``progress_every`` more
    events ran in all parts. ``recipe`` (a picklable call that builds this network and job
    again): this process simulates part 0 and the others are Ray tasks on
    ``net.cfg.ray_address``'s cluster that build their own with it (sim.rayparts)."""
    if net.cfg.prop_delay_us <= 0:
        raise ValueError("a split run needs a propagation delay > 0 (its lookahead)")
    part_of = partition(net.spec, parts)
    if recipe is not None:
        from . import rayparts

        mine, finish = rayparts.start(net.cfg.ray_address or "local", recipe, run_part,
                                      part_of, parts, until)
        try:
            return _run_part0(net, job, part_of, parts, until, mine, progress, flows_total,
                              progress_every)
        finally:
            finish()
    ctx = mp.get_context("fork")
    pipes: dict[tuple[int, int], tuple[Connection, Connection]] = {
        (a, b): ctx.Pipe() for a in range(parts) for b in range(a + 1, parts)}
    homes = [ctx.Pipe(duplex=False) for _ in range(parts)]  # (the caller's end, the part's)

    def ends(me: int) -> dict[int, Connection]:
        out = {}
        for (a, b), (ca, cb) in pipes.items():
            if a == me:
                out[b] = ca
            elif b == me:
                out[a] = cb
        return out

    every = [c for pair in [*pipes.values(), *homes] for c in pair]

    def process(q: int) -> Any:
        mine = ends(q)
        keep = {id(c) for c in mine.values()} | {id(homes[q][1])}
        return ctx.Process(target=_child, name=f"sim-part-{q}", daemon=True,
                           args=(net, job, q, part_of, mine, until,
                                 [c for c in every if id(c) not in keep], homes[q][1],
                                 progress_every if q == 0 and progress is not None else 0))

    procs = [process(q) for q in range(parts)]
    try:
        for p in procs:
            p.start()
        for c in every:  # keep only the ends that read the parts' results open here
            if all(c is not r for r, _ in homes):
                c.close()
        return _gather(net, part_of, parts, until, [r for r, _ in homes], progress,
                       flows_total, procs)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join()


def _gather(net: SimNetwork, part_of: dict[str, int], parts: int, until: float,
            homes: list[Connection], progress: Callable[[Progress], None] | None,
            flows_total: int, procs: Sequence[Any]) -> SplitOutcome:
    """The caller of a forked split run: pass part 0's progress on, take every part's
    results, run what the caller's own loop holds (the failures) as part 0 ran them, and
    write the results into ``net``."""
    t0 = time.perf_counter()
    results: list[PartResult] = []
    for q, conn in enumerate(homes):
        while True:
            kind, body = _message(conn, q)
            if kind != "progress":
                results.append(body)
                break
            if progress is not None:
                events, hops, done, now = body
                progress(Progress(now_us=now, events=events, packet_hops=hops,
                                  flows_done=done, flows_total=flows_total,
                                  wall_s=time.perf_counter() - t0))
    # the failures scheduled here (nothing else is: the hosts start in their parts): cut
    # the links and reroute where part 0 did, up to where its loop stopped, so this
    # network's links and tables are those a part 0 in this process would have left
    loop = net.loop
    loop.stop_before(results[0].horizon)
    loop.run(until=until)
    ranks: list[RankMetrics] = []
    events = exchanged = 0
    for res in results:
        _load(net, res)
        net.ingress_log.extend(res.ingress)
        ranks.extend(res.ranks)
        events += res.events
        exchanged += res.exchanged
    net.ingress_log.sort(key=lambda e: e[1])  # stable: each switch's stays in order
    finals = [res.end for res in results]
    return _outcome(net, part_of, parts, until, ranks, finals, progress, flows_total, t0,
                    procs, end=results[0].stopped, events=events, windows=results[0].windows,
                    exchanged=exchanged, loops=[r.loop for r in results])


def _outcome(net: SimNetwork, part_of: dict[str, int], parts: int, until: float,
             ranks: list[RankMetrics], finals: list[tuple[float, bool]],
             progress: Callable[[Progress], None] | None, flows_total: int, t0: float,
             procs: Sequence[Any], *, end: float | None, events: int, windows: int,
             exchanged: int, loops: Sequence[str] = ()) -> SplitOutcome:
    """The whole run's last progress report, where it ended and how its switches were
    split: the same for the forked caller and a part 0 run in the caller (Ray)."""
    if progress is not None:
        done = sum(1 for m in ranks for f in m.flows if not f.local and f.finish is not None)
        progress(Progress(now_us=max(t for t, _ in finals), events=events,
                          packet_hops=sum(s.packets_in for s in net.switches.values()),
                          flows_done=done, flows_total=flows_total,
                          wall_s=time.perf_counter() - t0))
    if end is None:  # ended a lookahead after the last rank: as one loop would end
        end = until if any(u for _, u in finals) else max(t for t, _ in finals)
    for p in procs:
        p.join()
    counts = [0] * parts
    for q in part_of.values():
        counts[q] += 1
    return SplitOutcome(end_us=end, events=events, ranks=ranks, windows=windows,
                        exchanged=exchanged, parts=counts, loops=list(loops))


def _run_part0(net: SimNetwork, job: Job, part_of: dict[str, int], parts: int, until: float,
               mine: dict[int, Channel], progress: Callable[[Progress], None] | None,
               flows_total: int, progress_every: int,
               procs: Sequence[Any] = ()) -> SplitOutcome:
    """Part 0: run its windows, gather every other part's results into ``net``."""
    t0 = time.perf_counter()
    net.engage_core()  # before _Part, which takes the loop it runs
    part = _Part(net, job, 0, part_of, mine, until)
    net.start_hosts(part.hosts)
    report = None
    if progress is not None:
        last = -progress_every

        def report(events: int, hops: int, done: int, now: float) -> None:
            nonlocal last
            if events - last >= progress_every:  # as often as one loop's slices
                last = events
                progress(Progress(now_us=now, events=events, packet_hops=hops,
                                  flows_done=done, flows_total=flows_total,
                                  wall_s=time.perf_counter() - t0))
    end = part.run(report)
    net.sync()  # this part's own counts, before the other parts' are written in
    ranks = [m for h in part.hosts if h.job is not None for m in h.results()]
    events = net.loop.events_run
    windows, exchanged = part.windows, part.exchanged
    finals = [part.end()]
    for q in range(1, parts):
        res = _expect(mine[q], q)
        _load(net, res)
        net.ingress_log.extend(res.ingress)
        ranks.extend(res.ranks)
        events += res.events
        exchanged += res.exchanged
        finals.append(res.end)
    net.ingress_log.sort(key=lambda e: e[1])  # stable: each switch's stays in order
    return _outcome(net, part_of, parts, until, ranks, finals, progress, flows_total, t0,
                    procs, end=end, events=events, windows=windows, exchanged=exchanged)
