"""The collective schedule: per-rank programs of steps, and its JSON/YAML file format.

A schedule is what one training job asks of the network. Each rank runs its steps in order; a
step posts its sends, then waits for the receives it names. That dependency (a ring step cannot
start before the previous chunk arrived) is what makes collective completion time sensitive to
the slowest path, so it is explicit in the format rather than implied by timing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

FORMAT_VERSION = 1


class ScheduleError(ValueError):
    """A schedule is malformed; `field` is the dotted path of the offending field."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")
        self.field = field_path


@dataclass(frozen=True)
class Send:
    """Post `bytes` to rank `dst` as flow `flow` (flow ids are unique within a schedule)."""

    dst: int
    bytes: int
    flow: int


@dataclass(frozen=True)
class Recv:
    """Wait until flow `flow` from rank `src` has fully arrived."""

    src: int
    flow: int


@dataclass
class Step:
    """One step of a rank's program.

    The step starts when the previous one completed, after `compute_us` of compute and not before
    `at_us` (microseconds from the job start; used by timed traces). It completes when all `recvs`
    arrived, if `wait_sends`, all `sends` were acknowledged, and every flow in `wait_acked` (sends
    of this rank's earlier steps) was acknowledged: a pipelined ring's bound on the steps whose
    sends are still un-ACKed (a send buffer's slots, traffic.schedules.ring).
    """

    sends: list[Send] = field(default_factory=list)
    recvs: list[Recv] = field(default_factory=list)
    compute_us: float = 0.0
    collective: int = 0
    at_us: float | None = None
    wait_sends: bool = True
    label: str = ""
    wait_acked: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Collective:
    """A collective operation the steps belong to; CCT is measured per collective."""

    id: int
    name: str
    bytes: int = 0


@dataclass
class Schedule:
    """A whole job: `programs[r]` is rank r's list of steps; `placement[r]` names r's host."""

    name: str
    ranks: int
    programs: list[list[Step]]
    collectives: list[Collective] = field(default_factory=list)
    placement: list[str] | None = None
    job: int = 1
    meta: dict[str, Any] = field(default_factory=dict)

    # -- derived views -------------------------------------------------------------------
    def sends(self) -> list[tuple[int, int, Send]]:
        """All sends as (src rank, step index, send)."""
        return [
            (r, i, s) for r, prog in enumerate(self.programs) for i, st in enumerate(prog)
            for s in st.sends
        ]

    def flow_index(self) -> dict[int, tuple[int, Send]]:
        """flow id -> (src rank, send)."""
        return {s.flow: (r, s) for r, _, s in self.sends()}

    def bytes_sent(self, rank: int) -> int:
        return sum(s.bytes for st in self.programs[rank] for s in st.sends)

    def bytes_received(self, rank: int) -> int:
        idx = self.flow_index()
        return sum(idx[rv.flow][1].bytes for st in self.programs[rank] for rv in st.recvs)

    def validate(self) -> Schedule:
        validate(self)
        return self


# -- validation ------------------------------------------------------------------------------

def validate(s: Schedule) -> None:
    """Check ranges, flow matching (each send received exactly once) and freedom from deadlock."""
    if s.ranks < 1:
        raise ScheduleError("ranks", f"must be >= 1, got {s.ranks}")
    if len(s.programs) != s.ranks:
        raise ScheduleError("programs", f"has {len(s.programs)} entries for {s.ranks} ranks")
    if s.placement is not None and len(s.placement) != s.ranks:
        raise ScheduleError("placement", f"has {len(s.placement)} hosts for {s.ranks} ranks")
    if not 0 <= s.job < 1 << 16:
        raise ScheduleError("job", f"must fit 16 bits, got {s.job}")
    coll_ids = {c.id for c in s.collectives}
    sends: dict[int, tuple[int, Send]] = {}
    # error paths are formatted only when raised: a k=16 AllToAll has a million sends
    for r, prog in enumerate(s.programs):
        for i, st in enumerate(prog):
            if st.compute_us < 0:
                raise ScheduleError(f"programs[{r}].steps[{i}].compute_us", "must be >= 0")
            if st.at_us is not None and st.at_us < 0:
                raise ScheduleError(f"programs[{r}].steps[{i}].at_us", "must be >= 0")
            if coll_ids and st.collective not in coll_ids:
                raise ScheduleError(f"programs[{r}].steps[{i}].collective",
                                    f"unknown collective {st.collective}")
            for j, fl in enumerate(st.wait_acked):
                own = sends.get(fl)
                if own is None or own[0] != r:
                    raise ScheduleError(f"programs[{r}].steps[{i}].wait_acked[{j}]",
                                        f"flow {fl} is not a send of an earlier step of rank {r}")
            for j, snd in enumerate(st.sends):
                dst, flow = snd.dst, snd.flow
                if (0 <= dst < s.ranks and dst != r and snd.bytes > 0 and 0 <= flow < 1 << 32
                        and flow not in sends):
                    sends[flow] = (r, snd)
                    continue
                p = f"programs[{r}].steps[{i}].sends[{j}]"
                if not 0 <= dst < s.ranks:
                    raise ScheduleError(f"{p}.dst", f"rank {dst} out of range 0..{s.ranks-1}")
                if dst == r:
                    raise ScheduleError(f"{p}.dst", f"rank {r} sends to itself")
                if snd.bytes <= 0:
                    raise ScheduleError(f"{p}.bytes", f"must be > 0, got {snd.bytes}")
                if not 0 <= flow < 1 << 32:
                    raise ScheduleError(f"{p}.flow", f"must fit 32 bits, got {flow}")
                raise ScheduleError(f"{p}.flow", f"flow {flow} is sent twice")
    received: set[int] = set()
    for r, prog in enumerate(s.programs):
        for i, st in enumerate(prog):
            for j, rv in enumerate(st.recvs):
                hit = sends.get(rv.flow)
                if (hit is not None and hit[0] == rv.src and hit[1].dst == r
                        and rv.flow not in received):
                    received.add(rv.flow)
                    continue
                p = f"programs[{r}].steps[{i}].recvs[{j}]"
                if hit is None:
                    raise ScheduleError(f"{p}.flow", f"no rank sends flow {rv.flow}")
                src, snd = hit
                if src != rv.src:
                    raise ScheduleError(f"{p}.src", f"flow {rv.flow} is sent by rank {src}")
                if snd.dst != r:
                    raise ScheduleError(f"{p}.flow", f"flow {rv.flow} goes to rank {snd.dst}")
                raise ScheduleError(f"{p}.flow", f"flow {rv.flow} is received twice")
    missing = sorted(set(sends) - received)
    if missing:
        src, snd = sends[missing[0]]
        raise ScheduleError(f"programs[{snd.dst}]", f"never receives flow {missing[0]} "
                            f"from rank {src} ({len(missing)} flows unreceived)")
    _check_deadlock(s)


def _check_deadlock(s: Schedule) -> None:
    """Run the steps symbolically: a step's sends are posted when it starts; it completes once
    its receives were posted by their senders. Receivers accept data early, so this suffices."""
    pos = [0] * s.ranks
    posted: set[int] = set()
    progress = True
    while progress:
        progress = False
        for r in range(s.ranks):
            while pos[r] < len(s.programs[r]):
                st = s.programs[r][pos[r]]
                posted.update(x.flow for x in st.sends)
                if all(rv.flow in posted for rv in st.recvs):
                    pos[r] += 1
                    progress = True
                else:
                    break
    for r in range(s.ranks):
        if pos[r] < len(s.programs[r]):
            raise ScheduleError(f"programs[{r}].steps[{pos[r]}].recvs",
                                "deadlock: waits for a flow that is never posted")


# -- (de)serialisation -----------------------------------------------------------------------

def to_dict(s: Schedule) -> dict[str, Any]:
    """The file form: plain dicts/lists, defaults omitted from steps to keep files short."""
    progs = []
    for r, prog in enumerate(s.programs):
        steps = []
        for st in prog:
            d: dict[str, Any] = {
                "sends": [{"dst": x.dst, "bytes": x.bytes, "flow": x.flow} for x in st.sends],
                "recvs": [{"src": x.src, "flow": x.flow} for x in st.recvs],
            }
            if st.compute_us:
                d["compute_us"] = st.compute_us
            if st.collective:
                d["collective"] = st.collective
            if st.at_us is not None:
                d["at_us"] = st.at_us
            if not st.wait_sends:
                d["wait_sends"] = False
            if st.label:
                d["label"] = st.label
            if st.wait_acked:
                d["wait_acked"] = list(st.wait_acked)
            steps.append(d)
        progs.append({"rank": r, "steps": steps})
    out: dict[str, Any] = {
        "version": FORMAT_VERSION, "name": s.name, "job": s.job, "ranks": s.ranks,
        "collectives": [{"id": c.id, "name": c.name, "bytes": c.bytes} for c in s.collectives],
        "programs": progs,
    }
    if s.placement is not None:
        out["placement"] = list(s.placement)
    if s.meta:
        out["meta"] = s.meta
    return out


def _obj(v: Any, path: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ScheduleError(path, f"expected a mapping, got {type(v).__name__}")
    return v


def _list(v: Any, path: str) -> list[Any]:
    if not isinstance(v, list):
        raise ScheduleError(path, f"expected a list, got {type(v).__name__}")
    return v


def _keys(d: dict[str, Any], path: str, required: set[str], optional: set[str]) -> None:
    for k in d:
        if k not in required | optional:
            raise ScheduleError(f"{path}.{k}" if path else str(k), "unknown field")
    for k in sorted(required):
        if k not in d:
            raise ScheduleError(f"{path}.{k}" if path else k, "missing required field")


def _int(d: dict[str, Any], k: str, path: str, default: int | None = None) -> int:
    v = d.get(k, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ScheduleError(f"{path}.{k}" if path else k, f"expected an integer, got {v!r}")
    return v


def _num(d: dict[str, Any], k: str, path: str, default: float) -> float:
    v = d.get(k, default)
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ScheduleError(f"{path}.{k}", f"expected a number, got {v!r}")
    return float(v)


def _str(d: dict[str, Any], k: str, path: str, default: str) -> str:
    v = d.get(k, default)
    if not isinstance(v, str):
        raise ScheduleError(f"{path}.{k}" if path else k, f"expected a string, got {v!r}")
    return v


def from_dict(d: Any) -> Schedule:
    """Parse and validate the file form; every error names the offending field."""
    d = _obj(d, "<schedule>")
    _keys(d, "", {"ranks", "programs"},
          {"version", "name", "job", "collectives", "placement", "meta"})
    version = _int(d, "version", "", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise ScheduleError("version", f"unsupported version {version} (want {FORMAT_VERSION})")
    ranks = _int(d, "ranks", "")
    colls = []
    for i, c in enumerate(_list(d.get("collectives", []), "collectives")):
        p = f"collectives[{i}]"
        c = _obj(c, p)
        _keys(c, p, {"id"}, {"name", "bytes"})
        colls.append(Collective(_int(c, "id", p), _str(c, "name", p, ""), _int(c, "bytes", p, 0)))
    placement = d.get("placement")
    if placement is not None:
        placement = [str(h) for h in _list(placement, "placement")]
    progs_in = _list(d["programs"], "programs")
    programs: list[list[Step] | None] = [None] * len(progs_in)
    for i, pg in enumerate(progs_in):
        p = f"programs[{i}]"
        pg = _obj(pg, p)
        _keys(pg, p, {"steps"}, {"rank"})
        rank = _int(pg, "rank", p, i)
        if rank != i:
            raise ScheduleError(f"{p}.rank", f"programs must be listed in rank order, got {rank}")
        steps = []
        for j, st in enumerate(_list(pg["steps"], f"{p}.steps")):
            sp = f"{p}.steps[{j}]"
            st = _obj(st, sp)
            _keys(st, sp, set(),
                  {"sends", "recvs", "compute_us", "collective", "at_us", "wait_sends", "label",
                   "wait_acked"})
            sends = []
            for k, x in enumerate(_list(st.get("sends", []), f"{sp}.sends")):
                xp = f"{sp}.sends[{k}]"
                x = _obj(x, xp)
                _keys(x, xp, {"dst", "bytes", "flow"}, set())
                sends.append(Send(_int(x, "dst", xp), _int(x, "bytes", xp), _int(x, "flow", xp)))
            recvs = []
            for k, x in enumerate(_list(st.get("recvs", []), f"{sp}.recvs")):
                xp = f"{sp}.recvs[{k}]"
                x = _obj(x, xp)
                _keys(x, xp, {"src", "flow"}, set())
                recvs.append(Recv(_int(x, "src", xp), _int(x, "flow", xp)))
            at = st.get("at_us")
            if at is not None:
                at = _num(st, "at_us", sp, 0.0)
            ws = st.get("wait_sends", True)
            if not isinstance(ws, bool):
                raise ScheduleError(f"{sp}.wait_sends", f"expected true/false, got {ws!r}")
            wa = [_int({"flow": x}, "flow", f"{sp}.wait_acked[{k}]")
                  for k, x in enumerate(_list(st.get("wait_acked", []), f"{sp}.wait_acked"))]
            steps.append(Step(sends, recvs, _num(st, "compute_us", sp, 0.0),
                              _int(st, "collective", sp, 0), at, ws, _str(st, "label", sp, ""),
                              wa))
        programs[i] = steps
    meta = d.get("meta", {})
    _obj(meta, "meta")
    s = Schedule(name=_str(d, "name", "", "schedule"), ranks=ranks,
                 programs=[p for p in programs if p is not None], collectives=colls,
                 placement=placement, job=_int(d, "job", "", 1), meta=meta)
    validate(s)
    return s


def dump(s: Schedule, path: str | Path) -> None:
    """Write JSON, or YAML when the suffix is .yaml/.yml."""
    path = Path(path)
    d = to_dict(s)
    if path.suffix in (".yaml", ".yml"):
        path.write_text(yaml.safe_dump(d, sort_keys=False))
    else:
        path.write_text(json.dumps(d, indent=1))


def load(path: str | Path) -> Schedule:
    """Read a JSON or YAML schedule file (YAML is a superset, so one parser reads both)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ScheduleError("<file>", f"cannot read {path}: {e.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise ScheduleError("<file>", f"{path} is not valid JSON/YAML: {e}") from None
    return from_dict(data)
