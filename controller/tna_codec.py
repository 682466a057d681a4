"""The tofino target's entities (model/tna.py) as P4Runtime 1.4 updates, by P4Info names.

Table entries go through :class:`~controller.p4rt_codec.P4Schema` like every target's; what only
the TNA program has is encoded here: action-profile members and groups (ECMP/flowlet) and the
``lb_select`` entries that point at a group. The P4Info is the one the Tofino compiler wrote for
p4src/tna/fabric.p4 (``--p4runtime-files``, ``--p4runtime-force-std-externs`` so that a standard
P4Runtime server such as Stratum takes it); docs/tofino.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from p4.v1 import p4runtime_pb2

from model.entries import Entry
from model.tna import (
    LB_SELECT,
    ProfileGroup,
    ProfileMember,
    SelectorEntry,
    TnaDiff,
    TnaSwitchEntries,
)
from p4switch import ExactMatch

from .p4rt_codec import P4Schema, encode

_V = TypeVar("_V")


def _get(d: Mapping[str, _V], name: str, what: str) -> _V:
    try:
        return d[name]
    except KeyError:
        raise KeyError(f"P4Info has no {what} {name!r}") from None


def profile_id(schema: P4Schema, name: str) -> int:
    """The id of action profile ``name``, or else that of the profile implementing
    ``lb_select``: a compiler may list a TNA ActionProfile and its ActionSelector as one profile
    or two under its own names, and P4Runtime writes members and groups of a selector table to
    the table's implementation."""
    profile = schema.index.by_name["action_profiles"].get(name)
    if profile is not None:
        return int(profile.id)
    select = schema.tables.get(LB_SELECT)
    if select is not None and select.implementation_id:
        return select.implementation_id
    raise KeyError(f"P4Info has no action profile {name!r}")


def member_message(schema: P4Schema, m: ProfileMember) -> p4runtime_pb2.ActionProfileMember:
    a = _get(schema.actions, m.action, "action")
    msg = p4runtime_pb2.ActionProfileMember(action_profile_id=profile_id(schema, m.profile),
                                            member_id=m.member_id)
    msg.action.action_id = a.id
    for pname, v in m.params:
        pf = _get(a.params_by_name, pname, f"parameter of {a.name}:")
        msg.action.params.add(param_id=pf.id, value=encode(v, pf.bitwidth))
    missing = set(a.params_by_name) - {n for n, _ in m.params}
    if missing:
        raise ValueError(f"member {m.member_id}: {a.name} needs {', '.join(sorted(missing))}")
    return msg


def group_message(schema: P4Schema, g: ProfileGroup) -> p4runtime_pb2.ActionProfileGroup:
    msg = p4runtime_pb2.ActionProfileGroup(action_profile_id=profile_id(schema, g.profile),
                                           group_id=g.group_id, max_size=g.max_size)
    for mid, weight in g.members:
        msg.members.add(member_id=mid, weight=weight)
    return msg


def selector_entry_message(schema: P4Schema, s: SelectorEntry) -> p4runtime_pb2.TableEntry:
    t = _get(schema.tables, s.table, "table")
    te = p4runtime_pb2.TableEntry(table_id=t.id)
    for name, m in s.match:
        f = _get(t.fields_by_name, name, f"key of {t.name}:")
        if not isinstance(m, ExactMatch):
            raise ValueError(f"{s.table}: selector tables take exact keys, not {m}")
        te.match.add(field_id=f.id).exact.value = encode(m.value, f.bitwidth)
    te.action.action_profile_group_id = s.group_id
    return te


def install_updates(schema: P4Schema, tna: TnaSwitchEntries) -> list[p4runtime_pb2.Update]:
    """INSERTs for a switch's whole state, in an order a target accepts: members before the
    groups that name them, groups before the entries that point at them."""
    ins = p4runtime_pb2.Update.INSERT
    ups: list[p4runtime_pb2.Update] = []
    for m in tna.members:
        ups.append(p4runtime_pb2.Update(type=ins, entity=p4runtime_pb2.Entity(
            action_profile_member=member_message(schema, m))))
    for g in tna.groups:
        ups.append(p4runtime_pb2.Update(type=ins, entity=p4runtime_pb2.Entity(
            action_profile_group=group_message(schema, g))))
    for s in tna.selector_entries:
        ups.append(p4runtime_pb2.Update(type=ins, entity=p4runtime_pb2.Entity(
            table_entry=selector_entry_message(schema, s))))
    for e in tna.entries:
        ups.append(p4runtime_pb2.Update(type=ins, entity=p4runtime_pb2.Entity(
            table_entry=schema.table_entry(e))))
    return ups


def _entity(schema: P4Schema, x: Entry | ProfileMember | ProfileGroup | SelectorEntry
            ) -> p4runtime_pb2.Entity:
    if isinstance(x, ProfileMember):
        return p4runtime_pb2.Entity(action_profile_member=member_message(schema, x))
    if isinstance(x, ProfileGroup):
        return p4runtime_pb2.Entity(action_profile_group=group_message(schema, x))
    if isinstance(x, SelectorEntry):
        return p4runtime_pb2.Entity(table_entry=selector_entry_message(schema, x))
    return p4runtime_pb2.Entity(table_entry=schema.table_entry(x))


_OPS = {"insert": p4runtime_pb2.Update.INSERT, "modify": p4runtime_pb2.Update.MODIFY,
        "delete": p4runtime_pb2.Update.DELETE}


def diff_updates(schema: P4Schema, diff: TnaDiff) -> list[p4runtime_pb2.Update]:
    """A run-time change (``model.tna.diff_tna``) as updates, in :meth:`TnaDiff.ordered` order."""
    return [p4runtime_pb2.Update(type=_OPS[op], entity=_entity(schema, x))
            for op, x in diff.ordered()]
