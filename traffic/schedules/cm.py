"""htsim's connection-matrix (``.cm``) format, read into a schedule and written from one.

htsim (the Ultra Ethernet Consortium's simulator, docs/htsim.md) describes a workload as a
list of flows ``SRC->DST id N start US size BYTES``; a flow may instead wait for a trigger
(``trigger K``) and may activate one when its sender has it fully acknowledged
(``send_done_trigger K``) or its receiver has it all (``recv_done_trigger K``). A trigger is
``oneshot`` (fires on its activation, starting all its flows), ``multishot`` (each activation
starts its next flow) or ``barrier`` (fires after ``count`` activations). A ``Failures``
section names failed links. The format's definition is htsim's ``connection_matrix.cpp``.

A schedule is per-rank programs whose steps wait only for events at their own rank (its
receives, its sends' acknowledgements), so a flow becomes a step of its source, preceded by a
"gate" step waiting for its trigger's activations; an activation must therefore happen at that
source (``send_done`` of one of its own flows, ``recv_done`` of a flow to it), and which
activation starts a multishot trigger's i-th flow is fixed in file order (htsim: the i-th in
time). Anything else is refused with the line that asks for it. Flow ids: htsim's id N is the
schedule's flow N - 1 (htsim forbids 0).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .format import Collective, Recv, Schedule, ScheduleError, Send, Step

TriggerKind = Literal["oneshot", "multishot", "barrier"]
EventKind = Literal["send", "recv"]
SWITCH_TYPES = ("TOR", "AGG", "CORE")


class CmError(ScheduleError):
    """A malformed connection matrix: the message starts ``FILE:LINE:``."""

    def __init__(self, where: str, line: int, message: str) -> None:
        super().__init__(f"{where}:{line}" if line else where, message)
        self.line = line


@dataclass(frozen=True)
class CmFlow:
    src: int
    dst: int
    id: int
    size: int
    start_us: float | None = None
    trigger: int | None = None
    send_done: int | None = None
    recv_done: int | None = None
    prio: int | None = None
    line: int = 0


@dataclass(frozen=True)
class CmTrigger:
    id: int
    kind: TriggerKind
    count: int = 0
    line: int = 0


@dataclass(frozen=True)
class CmFailure:
    """htsim fails the link ``link_id`` up from switch ``switch_id`` of its tier (htsim itself
    accepts only AGG: an aggregation switch's uplink to a core)."""

    switch_type: str
    switch_id: int
    link_id: int
    line: int = 0


@dataclass
class ConnectionMatrix:
    nodes: int
    flows: list[CmFlow]
    triggers: dict[int, CmTrigger] = field(default_factory=dict)
    failures: list[CmFailure] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    """Lines written as ``# ...`` (the exporter's notes), without the ``# ``."""


# -- reading --------------------------------------------------------------------------------

def _int(tok: str, what: str, where: str, line: int, lo: int = 0) -> int:
    try:
        v = int(tok)
    except ValueError:
        raise CmError(where, line, f"{what}: expected an integer, got {tok!r}") from None
    if v < lo:
        raise CmError(where, line, f"{what}: must be >= {lo}, got {v}")
    return v


def _value(toks: list[str], i: int, where: str, line: int) -> str:
    if i + 1 >= len(toks):
        raise CmError(where, line, f"{toks[i]!r} needs a value")
    return toks[i + 1]


def _flow(toks: list[str], where: str, line: int) -> CmFlow:
    src_s, _, dst_s = toks[0].partition("->")
    src = _int(src_s, "source node", where, line)
    dst = _int(dst_s, "destination node", where, line)
    vals: dict[str, str] = {}
    i = 1
    while i < len(toks):
        key = toks[i]
        if key not in ("start", "size", "id", "trigger", "send_done_trigger",
                       "recv_done_trigger", "prio", "msg"):
            raise CmError(where, line, f"unknown token {key!r} in a flow")
        if key in vals:
            raise CmError(where, line, f"{key!r} given twice")
        vals[key] = _value(toks, i, where, line)
        i += 2
    if "msg" in vals:
        raise CmError(where, line, "'msg' (htsim's connection reuse) is not supported")
    if "size" not in vals:
        raise CmError(where, line, "flow without a size")
    if "id" not in vals and "trigger" in vals:
        raise CmError(where, line, "a flow on a trigger needs an id")
    if "start" in vals and "trigger" in vals:
        raise CmError(where, line, "both a start time and a trigger")
    if "start" not in vals and "trigger" not in vals:
        raise CmError(where, line, "no start time and no trigger")
    start = None
    if "start" in vals:
        try:
            start = float(vals["start"])
        except ValueError:
            raise CmError(where, line, f"start: expected microseconds, got "
                          f"{vals['start']!r}") from None
        if not start >= 0:
            raise CmError(where, line, f"start: must be >= 0, got {vals['start']}")

    def opt(key: str, lo: int) -> int | None:
        return _int(vals[key], key, where, line, lo) if key in vals else None

    return CmFlow(src, dst, _int(vals["id"], "id", where, line, 1) if "id" in vals else 0,
                  _int(vals["size"], "size", where, line, 1), start, opt("trigger", 1),
                  opt("send_done_trigger", 1), opt("recv_done_trigger", 1), opt("prio", 0),
                  line)


def _trigger(toks: list[str], where: str, line: int) -> CmTrigger:
    tid: int | None = None
    kind: TriggerKind | None = None
    count = 0
    i = 1
    while i < len(toks):
        t = toks[i]
        if t == "id":
            tid = _int(_value(toks, i, where, line), "trigger id", where, line, 1)
            i += 2
        elif t == "count":
            count = _int(_value(toks, i, where, line), "count", where, line, 1)
            i += 2
        elif t in ("oneshot", "multishot", "barrier"):
            if kind is not None:
                raise CmError(where, line, f"trigger is both {kind} and {t}")
            kind = t  # type: ignore[assignment]  # t is one of the three literals (checked above)
            i += 1
        else:
            raise CmError(where, line, f"unknown token {t!r} in a trigger")
    if tid is None:
        raise CmError(where, line, "trigger without an id")
    if kind is None:
        raise CmError(where, line, "trigger without a type (oneshot, multishot or barrier)")
    if kind == "barrier" and count < 1:
        raise CmError(where, line, "a barrier needs 'count N'")
    return CmTrigger(tid, kind, count, line)


def _failure(toks: list[str], where: str, line: int) -> CmFailure:
    vals: dict[str, str] = {}
    i = 1
    while i < len(toks):
        if toks[i] not in ("switch_type", "switch_id", "link_id"):
            raise CmError(where, line, f"unknown token {toks[i]!r} in a failure")
        vals[toks[i]] = _value(toks, i, where, line)
        i += 2
    for k in ("switch_type", "switch_id", "link_id"):
        if k not in vals:
            raise CmError(where, line, f"failure without {k}")
    if vals["switch_type"] not in SWITCH_TYPES:
        raise CmError(where, line, f"switch_type {vals['switch_type']!r} is not one of "
                      f"{', '.join(SWITCH_TYPES)}")
    return CmFailure(vals["switch_type"], _int(vals["switch_id"], "switch_id", where, line),
                     _int(vals["link_id"], "link_id", where, line), line)


def parse_cm(text: str, where: str = "<cm>") -> ConnectionMatrix:
    """Parse a connection matrix; every error is ``CmError`` naming ``where`` and the line."""
    header: dict[str, tuple[int, int]] = {}
    flows: list[CmFlow] = []
    triggers: dict[int, CmTrigger] = {}
    failures: list[CmFailure] = []
    comments: list[str] = []
    ids: dict[int, int] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        toks = raw.split()
        if not toks:
            continue
        if toks[0].startswith("#"):
            comments.append(raw.strip().lstrip("#").strip())
            continue
        head = toks[0]
        if head in ("Nodes", "Connections", "Triggers", "Failures"):
            if flows or triggers or failures:
                raise CmError(where, n, f"{head!r} after the first flow, trigger or failure")
            if len(toks) != 2:
                raise CmError(where, n, f"expected '{head} N'")
            if head in header:
                raise CmError(where, n, f"{head!r} given twice")
            header[head] = (_int(toks[1], head, where, n), n)
        elif "->" in head:
            f = _flow(toks, where, n)
            if f.id and f.id in ids:
                raise CmError(where, n, f"flow id {f.id} already used at line {ids[f.id]}")
            if f.id:
                ids[f.id] = n
            flows.append(f)
        elif head == "trigger":
            t = _trigger(toks, where, n)
            if t.id in triggers:
                raise CmError(where, n, f"trigger {t.id} already defined at line "
                              f"{triggers[t.id].line}")
            triggers[t.id] = t
        elif head == "failure":
            failures.append(_failure(toks, where, n))
        else:
            raise CmError(where, n, f"unknown line starting {head!r}")
    if any(not f.id for f in flows):   # htsim numbers them itself; here: after the given ids
        nxt = max(ids, default=0) + 1
        for i, f in enumerate(flows):
            if not f.id:
                flows[i] = dataclasses.replace(f, id=nxt)
                nxt += 1
    if "Nodes" not in header:
        raise CmError(where, 0, "no 'Nodes N' line")
    nodes = header["Nodes"][0]
    for f in flows:
        for what, v in (("source", f.src), ("destination", f.dst)):
            if v >= nodes:
                raise CmError(where, f.line, f"{what} node {v} out of range 0..{nodes - 1}")
        if f.src == f.dst:
            raise CmError(where, f.line, f"node {f.src} sends to itself")
    for head, got in (("Connections", len(flows)), ("Triggers", len(triggers)),
                      ("Failures", len(failures))):
        want, n = header.get(head, (0, 0))
        if head in header and want != got:
            raise CmError(where, n, f"{head} {want}, but the file has {got}")
        if head not in header and got and head != "Connections":
            raise CmError(where, 0, f"{got} {head.lower()} without a '{head} N' line")
    for f in flows:
        for key, tid in (("trigger", f.trigger), ("send_done_trigger", f.send_done),
                         ("recv_done_trigger", f.recv_done)):
            if tid is not None and tid not in triggers:
                raise CmError(where, f.line, f"{key} {tid} is not defined by a trigger line")
    return ConnectionMatrix(nodes, flows, triggers, failures, comments)


def read_cm(path: str | Path) -> ConnectionMatrix:
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise CmError(str(path), 0, f"cannot read: {getattr(e, 'strerror', None) or e}") \
            from None
    return parse_cm(text, str(path))


# -- connection matrix -> schedule ----------------------------------------------------------

def _activations(cm: ConnectionMatrix) -> dict[int, list[tuple[CmFlow, EventKind]]]:
    acts: dict[int, list[tuple[CmFlow, EventKind]]] = {t: [] for t in cm.triggers}
    for f in cm.flows:
        if f.send_done is not None:
            acts[f.send_done].append((f, "send"))
        if f.recv_done is not None:
            acts[f.recv_done].append((f, "recv"))
    return acts


def _dependencies(cm: ConnectionMatrix, where: str) -> dict[int, list[tuple[CmFlow, EventKind]]]:
    """Flow id -> the activations that must have happened before it starts."""
    acts = _activations(cm)
    targets: dict[int, list[CmFlow]] = {t: [] for t in cm.triggers}
    for f in cm.flows:
        if f.trigger is not None:
            targets[f.trigger].append(f)
    deps: dict[int, list[tuple[CmFlow, EventKind]]] = {}
    for tid, t in cm.triggers.items():
        a, fs = acts[tid], targets[tid]
        if not fs:
            continue
        lines = ", ".join(str(f.line) for f in fs[:3])
        if not a:
            raise CmError(where, t.line, f"trigger {tid} is never activated: the flows at "
                          f"line(s) {lines} would never start")
        if t.kind == "oneshot":
            if len(a) > 1:
                raise CmError(where, t.line, f"oneshot trigger {tid} is activated by "
                              f"{len(a)} flows (htsim fires it once)")
            for f in fs:
                deps[f.id] = list(a)
        elif t.kind == "barrier":
            if t.count != len(a):
                raise CmError(where, t.line, f"barrier {tid} counts {t.count} activations but "
                              f"{len(a)} flows activate it (only equal counts are supported)")
            for f in fs:
                deps[f.id] = list(a)
        else:
            if len(fs) > len(a):
                raise CmError(where, fs[len(a)].line, f"multishot trigger {tid} has "
                              f"{len(a)} activations for {len(fs)} flows: this one never starts")
            for f, act in zip(fs, a, strict=False):
                deps[f.id] = [act]
    for f in cm.flows:
        for g, kind in deps.get(f.id, ()):
            at = g.src if kind == "send" else g.dst
            if at != f.src:
                raise CmError(where, f.line, f"flow {f.id} starts at node {f.src} on trigger "
                              f"{f.trigger}, activated when flow {g.id} (line {g.line}) is "
                              f"{'acknowledged' if kind == 'send' else 'received'} at node "
                              f"{at}: a schedule step waits only for events at its own node")
    return deps


def to_schedule(cm: ConnectionMatrix, ranks: int | None = None, where: str = "<cm>",
                name: str = "cm") -> Schedule:
    """The schedule that runs ``cm``: ranks = its nodes (or ``ranks``, when larger: the
    extra ranks idle). Raises CmError (with the line) for what a schedule cannot express."""
    n = cm.nodes if ranks is None else ranks
    if n < cm.nodes:
        raise CmError(where, 0, f"{cm.nodes} nodes, but the fabric has only {n} hosts")
    if not cm.flows:
        raise CmError(where, 0, "no flows")
    deps = _dependencies(cm, where)
    by_id = {f.id: f for f in cm.flows}
    # a topological order (Kahn): timed flows by start time first, triggered ones as their
    # activations become possible, file order breaking ties
    waiting = {f.id: {g.id for g, _ in deps.get(f.id, ())} for f in cm.flows}
    users: dict[int, list[int]] = {}
    for fid, ds in waiting.items():
        for d in ds:
            users.setdefault(d, []).append(fid)

    def key(f: CmFlow) -> tuple[int, float, int]:
        return (0, f.start_us, f.line) if f.start_us is not None else (1, 0.0, f.line)

    ready = [(key(f), f.id) for f in cm.flows if not waiting[f.id]]
    heapq.heapify(ready)
    order: list[CmFlow] = []
    while ready:
        _, fid = heapq.heappop(ready)
        order.append(by_id[fid])
        for u in users.get(fid, ()):
            waiting[u].discard(fid)
            if not waiting[u]:
                heapq.heappush(ready, (key(by_id[u]), u))
    if len(order) < len(cm.flows):
        stuck = min((f for f in cm.flows if waiting[f.id]), key=lambda f: f.line)
        raise CmError(where, stuck.line, f"flow {stuck.id} waits in a cycle of triggers")
    programs: list[list[Step]] = [[] for _ in range(n)]
    recvd: list[set[int]] = [set() for _ in range(n)]
    acked: list[set[int]] = [set() for _ in range(n)]
    for f in order:
        r = f.src
        recvs = [Recv(g.src, g.id - 1) for g, k in deps.get(f.id, ())
                 if k == "recv" and g.id not in recvd[r]]
        wait = [g.id - 1 for g, k in deps.get(f.id, ())
                if k == "send" and g.id not in acked[r]]
        recvd[r].update(x.flow + 1 for x in recvs)
        acked[r].update(x + 1 for x in wait)
        if recvs or wait:
            programs[r].append(Step([], recvs, label=f"trigger {f.trigger}", wait_sends=False,
                                    wait_acked=wait))
        programs[r].append(Step([Send(f.dst, f.size, f.id - 1)], [], at_us=f.start_us,
                                wait_sends=False, label=f"flow {f.id}"))
    for r in range(n):   # a rank is done when its flows arrived and its own were ACKed,
        # as htsim's flows finish when their sender has every ACK
        rest = [Recv(f.src, f.id - 1) for f in cm.flows if f.dst == r and f.id not in recvd[r]]
        mine = [f.id - 1 for f in cm.flows if f.src == r and f.id not in acked[r]]
        if rest or mine:
            programs[r].append(Step([], rest, label="drain", wait_sends=False,
                                    wait_acked=mine))
    meta: dict[str, object] = {"cm_nodes": cm.nodes}
    if cm.failures:
        meta["cm_failures"] = [{"switch_type": x.switch_type, "switch_id": x.switch_id,
                                "link_id": x.link_id} for x in cm.failures]
    s = Schedule(name, n, programs, [Collective(0, name, sum(f.size for f in cm.flows))],
                 meta=meta)
    try:
        s.validate()
    except ScheduleError as e:  # cannot happen for a matrix that passed the checks above
        raise CmError(where, 0, str(e)) from None
    return s


def load_cm(path: str | Path, ranks: int | None = None) -> Schedule:
    """Read a ``.cm`` file into a schedule (``to_schedule``)."""
    cm = read_cm(path)
    return to_schedule(cm, ranks, str(path), Path(path).stem)


def failed_links(cm_failures: Iterable[dict[str, object]] | Iterable[CmFailure],
                 k: int) -> list[tuple[str, str]]:
    """The p4fabric fat-tree links (model.spec.fat_tree(k) names) of a matrix's failures:
    htsim's AGG switch s (pod-major, as p4fabric's agg{s+1}) loses uplink l, the one to core
    (s mod k/2)·k/2 + l. htsim supports no other tier."""
    half = k // 2
    out = []
    for x in cm_failures:
        if isinstance(x, CmFailure):
            st, sid, lid, line = x.switch_type, x.switch_id, x.link_id, x.line
        else:
            st, sid, lid, line = (str(x["switch_type"]), int(x["switch_id"]),  # type: ignore[call-overload]  # values written by to_schedule
                                  int(x["link_id"]), 0)  # type: ignore[call-overload]  # as above
        where = f"failure{f' at line {line}' if line else ''}"
        if st != "AGG":
            raise ValueError(f"{where}: switch_type {st}: htsim fails only AGG uplinks")
        if not 0 <= sid < k * half or not 0 <= lid < half:
            raise ValueError(f"{where}: AGG {sid} link {lid} is not in a k={k} fat tree "
                             f"({k * half} aggregation switches, {half} uplinks each)")
        out.append((f"agg{sid + 1}", f"core{(sid % half) * half + lid + 1}"))
    return out


# -- schedule -> connection matrix ----------------------------------------------------------

def from_schedule(s: Schedule) -> ConnectionMatrix:
    """The connection matrix of ``s``: each send a flow (id = flow + 1); a rank's step whose
    sends follow earlier events starts on a trigger those events activate (oneshot for one,
    a barrier for several). Refused (ScheduleError naming the step): compute time, a start
    time on a step that also waits. A step whose events do not imply that the rank's previous
    sends started (htsim triggers fire only on flow completions) keeps its events and loses
    that ordering: a note in ``comments`` says so."""
    s.validate()
    flows: dict[int, CmFlow] = {}
    triggers: dict[int, CmTrigger] = {}
    send_done: dict[int, int] = {}
    recv_done: dict[int, int] = {}
    notes: list[str] = []
    owner: set[tuple[int, EventKind]] = set()
    src_of = {snd.flow: r for r, _, snd in s.sends()}
    for r, prog in enumerate(s.programs):
        pending: list[tuple[int, EventKind]] = []
        prev: list[int] = []          # flows of the previous step with sends
        start: tuple[float | None, int | None] = (0.0, None)   # (start, trigger) of prev
        for i, st in enumerate(prog):
            where = f"programs[{r}].steps[{i}]"
            if st.compute_us > 0:
                raise ScheduleError(f"{where}.compute_us", "htsim's matrices have no compute "
                                    "time")
            if st.sends:
                if not pending and not prev:
                    how: tuple[float | None, int | None] = (st.at_us or 0.0, None)
                elif not pending:
                    if st.at_us is None or st.at_us == start[0]:
                        how = start
                    elif start[1] is None and st.at_us > (start[0] or 0.0):
                        how = (st.at_us, None)    # a later start time than the previous step's
                    else:
                        raise ScheduleError(f"{where}.at_us", "a start time on a step that "
                                            "follows another's trigger or later start")
                else:
                    if st.at_us is not None:
                        raise ScheduleError(f"{where}.at_us", "a start time on a step that "
                                            "waits for earlier events")
                    if prev and not any(k == "send" and fl in prev for fl, k in pending):
                        notes.append(f"rank {r} step {i}: starts on its events only, not "
                                     "after its previous sends started")
                    tid = len(triggers) + 1
                    triggers[tid] = CmTrigger(tid, "oneshot" if len(pending) == 1
                                              else "barrier", len(pending)
                                              if len(pending) > 1 else 0)
                    for fl, k in pending:
                        (send_done if k == "send" else recv_done)[fl] = tid
                    how = (None, tid)
                for snd in st.sends:
                    flows[snd.flow] = CmFlow(r, snd.dst, snd.flow + 1, snd.bytes, how[0], how[1])
                prev = [x.flow for x in st.sends]
                start = how
                pending = []
            events: list[tuple[int, EventKind]] = [(x.flow, "recv") for x in st.recvs]
            if st.wait_sends:
                events += [(x.flow, "send") for x in st.sends]
            events += [(fl, "send") for fl in st.wait_acked]
            for ev in events:
                if ev not in owner:
                    owner.add(ev)
                    pending.append(ev)
    out = []
    for fl in sorted(flows, key=lambda fl: (src_of[fl], fl)):
        f = flows[fl]
        out.append(CmFlow(f.src, f.dst, f.id, f.size, f.start_us, f.trigger,
                          send_done.get(fl), recv_done.get(fl)))
    return ConnectionMatrix(s.ranks, out, triggers, [], notes)


def format_cm(cm: ConnectionMatrix) -> str:
    """The file text (htsim's spelling: ``Nodes``, ``Connections``, ``Triggers``, then flows,
    then triggers; comments first)."""
    lines = [f"# {c}" for c in cm.comments]
    lines += [f"Nodes {cm.nodes}", f"Connections {len(cm.flows)}"]
    if cm.triggers:
        lines.append(f"Triggers {len(cm.triggers)}")
    if cm.failures:
        lines.append(f"Failures {len(cm.failures)}")
    for f in cm.flows:
        parts = [f"{f.src}->{f.dst}", "id", str(f.id)]
        if f.trigger is not None:
            parts += ["trigger", str(f.trigger)]
        else:
            parts += ["start", f"{f.start_us or 0.0:g}"]
        parts += ["size", str(f.size)]
        if f.send_done is not None:
            parts += ["send_done_trigger", str(f.send_done)]
        if f.recv_done is not None:
            parts += ["recv_done_trigger", str(f.recv_done)]
        if f.prio is not None:
            parts += ["prio", str(f.prio)]
        lines.append(" ".join(parts))
    for t in sorted(cm.triggers.values(), key=lambda t: t.id):
        lines.append(f"trigger id {t.id} {t.kind}" + (f" count {t.count}" if t.count else ""))
    for x in cm.failures:
        lines.append(f"failure switch_type {x.switch_type} switch_id {x.switch_id} "
                     f"link_id {x.link_id}")
    return "\n".join(lines) + "\n"


def dump_cm(s: Schedule, path: str | Path) -> ConnectionMatrix:
    """Write ``s`` as a ``.cm`` file; returns the matrix written."""
    cm = from_schedule(s)
    Path(path).write_text(format_cm(cm))
    return cm
