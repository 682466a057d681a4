"""Programming a p4switch pipeline object directly (the simulator's and the tests' way in).

The same :class:`~model.entries.Entry` values the controller sends over P4Runtime go
through the pipeline's ``PipelineAPI`` here, so a simulated fabric is programmed exactly like the
emulated one, without gRPC.
"""

from __future__ import annotations

from collections.abc import Iterable

from model.entries import Entry, EntryDiff
from model.routing import SwitchEntries
from p4switch import PipelineAPI


def _entries(entries: SwitchEntries | Iterable[Entry]) -> Iterable[Entry]:
    return entries.entries if isinstance(entries, SwitchEntries) else entries


def install_on_pipeline(pipeline: PipelineAPI, entries: SwitchEntries | Iterable[Entry]) -> int:
    """Insert every entry of one switch; returns how many. A rejected entry raises the
    pipeline's StateError (the entries before it stay installed)."""
    n = 0
    for e in _entries(entries):
        pipeline.table_add(e.table, e.to_table_entry())
        n += 1
    return n


def apply_diff_on_pipeline(pipeline: PipelineAPI, diff: EntryDiff) -> int:
    """Apply an EntryDiff in the order a Write batch would carry it."""
    for op, e in diff.ordered():
        if op == "insert":
            pipeline.table_add(e.table, e.to_table_entry())
        elif op == "modify":
            pipeline.table_modify(e.table, e.to_table_entry())
        else:
            pipeline.table_delete(e.table, e.match_dict, priority=e.priority)
    return len(diff)
