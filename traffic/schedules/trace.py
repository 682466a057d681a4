"""Import of a simple message trace into a schedule.

A trace is a CSV or JSON list of messages: `src, dst, bytes` plus either `time_us` (post the
send at that time) or `after` (ids of messages the sender must have received first), or both;
`id` defaults to the row index. Each message becomes a step of its sender that does not wait for
its own send to complete (traces record when sends were posted, not when they finished); every
message nobody waits on is collected by a final step of its receiver so completion is measured.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from .format import Collective, Recv, Schedule, ScheduleError, Send, Step

_FIELDS = {"id", "src", "dst", "bytes", "time_us", "after"}


def _row_int(row: dict[str, Any], key: str, path: str) -> int:
    v = row.get(key)
    try:
        if isinstance(v, bool):
            raise ValueError
        return int(v)  # type: ignore[arg-type]  # v may be anything from the file: int() raises, caught below
    except (TypeError, ValueError):
        raise ScheduleError(f"{path}.{key}", f"expected an integer, got {v!r}") from None


def from_rows(rows: list[dict[str, Any]], ranks: int | None = None) -> Schedule:
    msgs = []
    for i, row in enumerate(rows):
        p = f"rows[{i}]"
        if not isinstance(row, dict):
            raise ScheduleError(p, "expected a mapping")
        for k in row:
            if k not in _FIELDS:
                raise ScheduleError(f"{p}.{k}", "unknown field")
        for k in ("src", "dst", "bytes"):
            if row.get(k) in (None, ""):
                raise ScheduleError(f"{p}.{k}", "missing required field")
        mid = _row_int(row, "id", p) if row.get("id") not in (None, "") else i
        t = row.get("time_us")
        if t in (None, ""):
            t = None
        else:
            try:
                t = float(t)
            except (TypeError, ValueError):
                raise ScheduleError(f"{p}.time_us", f"expected a number, got {t!r}") from None
        after = row.get("after") or []
        if isinstance(after, str):
            after = [a for a in after.replace(",", ";").split(";") if a.strip()]
        if not isinstance(after, list):
            raise ScheduleError(f"{p}.after", "expected a list of message ids")
        deps = [_row_int({"after": a}, "after", p) for a in after]
        msgs.append((i, mid, _row_int(row, "src", p), _row_int(row, "dst", p),
                     _row_int(row, "bytes", p), t, deps))
    if not msgs:
        raise ScheduleError("rows", "trace is empty")
    n = ranks if ranks is not None else 1 + max(max(m[2], m[3]) for m in msgs)
    by_id: dict[int, tuple] = {}
    for m in msgs:
        if m[1] in by_id:
            raise ScheduleError(f"rows[{m[0]}].id", f"duplicate message id {m[1]}")
        by_id[m[1]] = m
    flow_of = {m[1]: k for k, m in enumerate(msgs)}
    waited: set[int] = set()
    programs: list[list[Step]] = [[] for _ in range(n)]
    row_of: list[dict[int, int]] = [{} for _ in range(n)]
    order = sorted(msgs, key=lambda m: (m[5] if m[5] is not None else 0.0, m[0]))
    for i, mid, src, dst, nbytes, t, deps in order:
        recvs = []
        for d in deps:
            if d not in by_id:
                raise ScheduleError(f"rows[{i}].after", f"unknown message id {d}")
            if by_id[d][3] != src:
                raise ScheduleError(f"rows[{i}].after", f"message {d} goes to rank "
                                    f"{by_id[d][3]}, not to the sender {src}")
            recvs.append(Recv(by_id[d][2], flow_of[d]))
            waited.add(d)
        if not 0 <= src < n:
            raise ScheduleError(f"rows[{i}].src", f"rank {src} out of range 0..{n - 1}")
        row_of[src][len(programs[src])] = i
        programs[src].append(Step([Send(dst, nbytes, flow_of[mid])], recvs, at_us=t,
                                  wait_sends=False, label=f"msg {mid}"))
    for r in range(n):
        rest = [Recv(m[2], flow_of[m[1]]) for m in msgs if m[3] == r and m[1] not in waited]
        if rest:
            programs[r].append(Step([], rest, label="drain"))
    s = Schedule("trace", n, programs, [Collective(0, "trace", sum(m[4] for m in msgs))])
    try:
        s.validate()
    except ScheduleError as e:  # point at the trace row rather than the generated program
        where = re.match(r"programs\[(\d+)\]\.steps\[(\d+)\]", e.field)
        if where and int(where.group(2)) in row_of[int(where.group(1))]:
            index = row_of[int(where.group(1))][int(where.group(2))]
            raise ScheduleError(f"rows[{index}].after", str(e).split(": ", 1)[1]) from None
        raise
    return s


def load_trace(path: str | Path, ranks: int | None = None) -> Schedule:
    """Read a .csv (header row with the field names) or .json (list of objects) trace."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ScheduleError("<file>", f"cannot read {path}: {e.strerror}") from None
    if path.suffix == ".csv":
        rows: Any = list(csv.DictReader(text.splitlines()))
    else:
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as e:
            raise ScheduleError("<file>", f"{path} is not valid JSON: {e}") from None
        if not isinstance(rows, list):
            raise ScheduleError("rows", "a JSON trace is a list of message objects")
    return from_rows(rows, ranks)
