"""The neutral table entry the controller computes, and its renderings.

Routing and the schemes produce :class:`Entry` values (pure data, hashable, compared by value) so
the same computation programs the Mininet fabric over P4Runtime, the simulator through the
pipeline API and p4switch's ``--entries`` files. Names are the P4Info fully-qualified names of
p4src/fabric.p4; match values reuse the pipeline API's frozen match dataclasses (exact, lpm,
range), which carry no behaviour, only the values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from p4switch import ExactMatch, LpmMatch, MatchValue, RangeMatch, TableEntry, TernaryMatch

Match = ExactMatch | LpmMatch | RangeMatch | TernaryMatch
EntryKey = tuple[str, tuple[tuple[str, Match], ...], int]
"""What identifies an installed entry (table, match, priority): a P4Runtime write replaces it."""

# fabric.p4's control-plane names, written once
IPV4_LPM = "MyIngress.ipv4_lpm"
LB_GROUP = "MyIngress.lb_group"
LB_MEMBER = "MyIngress.lb_member"
WAM_SLOT = "MyIngress.wam_slot_to_member"
PORT_SMAC = "MyEgress.port_smac"
ECN_CONFIG = "MyEgress.ecn_config"
K_DST = "hdr.ipv4.dstAddr"
K_GROUP = "meta.lb.group_id"
K_MEMBER = "meta.lb.member_idx"
K_SLOT = "meta.lb.wam_slot"
K_EGRESS = "standard_metadata.egress_port"


@dataclass(frozen=True)
class Entry:
    """One table entry: ``match`` and ``params`` are sorted (name, value) tuples so entries hash.

    Two entries with the same :attr:`key` (table, match, priority) are the same P4Runtime entity;
    a differing action or parameter makes one a MODIFY of the other.
    """

    table: str
    match: tuple[tuple[str, Match], ...]
    action: str
    params: tuple[tuple[str, int], ...] = ()
    priority: int = 0

    @classmethod
    def make(cls, table: str, match: Mapping[str, Match], action: str,
             params: Mapping[str, int] | None = None, priority: int = 0) -> Entry:
        return cls(table, tuple(sorted(match.items())), action,
                   tuple(sorted((params or {}).items())), priority)

    @property
    def key(self) -> EntryKey:
        return (self.table, self.match, self.priority)

    @property
    def match_dict(self) -> dict[str, MatchValue]:
        return dict(self.match)

    @property
    def params_dict(self) -> dict[str, int]:
        return dict(self.params)

    def to_table_entry(self) -> TableEntry:
        """The p4switch pipeline API's form (what ``Pipeline.table_add`` takes)."""
        return TableEntry(match=self.match_dict, action=self.action, params=self.params_dict,
                          priority=self.priority)

    def to_stf(self) -> str:
        """An STF ``add`` line, as p4switch ``--entries`` files and p4c's STF tests write it."""
        keys = []
        for name, m in self.match:
            if isinstance(m, ExactMatch):
                keys.append(f"{name}:{m.value:#x}")
            elif isinstance(m, LpmMatch):
                keys.append(f"{name}:{m.value:#x}/{m.prefix_len}")
            elif isinstance(m, RangeMatch):
                keys.append(f"{name}:{m.low}->{m.high}")
            else:
                keys.append(f"{name}:{m.value:#x}&&&{m.mask:#x}")
        args = ", ".join(f"{k}:{v:#x}" for k, v in self.params)
        prio = f" {self.priority}" if self.priority else ""
        return f"add {self.table}{prio} {' '.join(keys)} {self.action}({args})"


@dataclass(frozen=True)
class EntryDiff:
    """What turns one entry set into another: apply deletes of range tables first (ranges must
    not overlap), then inserts, modifies, and the other deletes, so a route never points at a
    group that is already gone."""

    inserts: tuple[Entry, ...] = ()
    modifies: tuple[Entry, ...] = ()
    deletes: tuple[Entry, ...] = ()

    def __len__(self) -> int:
        return len(self.inserts) + len(self.modifies) + len(self.deletes)

    def ordered(self) -> list[tuple[str, Entry]]:
        """(op, entry) in the order a Write batch should carry them; op is insert/modify/delete."""
        first = [("delete", e) for e in self.deletes if e.table == WAM_SLOT]
        last = [("delete", e) for e in self.deletes if e.table != WAM_SLOT]
        return (first + [("insert", e) for e in self.inserts]
                + [("modify", e) for e in self.modifies] + last)


def diff_entries(old: Iterable[Entry], new: Iterable[Entry]) -> EntryDiff:
    """The INSERT/MODIFY/DELETE updates from ``old`` to ``new`` (keyed by table+match+priority)."""
    before = {e.key: e for e in old}
    after = {e.key: e for e in new}
    inserts = tuple(e for k, e in after.items() if k not in before)
    modifies = tuple(e for k, e in after.items() if k in before and before[k] != e)
    deletes = tuple(e for k, e in before.items() if k not in after)
    return EntryDiff(inserts, modifies, deletes)
