"""The one index of a P4Info: every object by id and by name, with what its messages need.

The P4Runtime server reads requests by id (``runtime/schema.py`` adds lookups that answer an
unknown id with the spec's NOT_FOUND); the controller writes them by name
(``controller/p4rt_codec.py``). Both read the same P4Info the same way through this index, so
a field's id, width and match kind cannot differ between the two ends. Names are the full
control-plane names; a preamble's alias (p4c's shortest unique suffix) also finds the object
by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Self, TypeVar

from p4.config.v1 import p4info_pb2

MF = p4info_pb2.MatchField


def canonical_bytes(value: int) -> bytes:
    """The canonical P4Runtime bytestring of an unsigned value: shortest big-endian, at least
    one byte (spec §8.3, since 1.3)."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


@dataclass
class FieldInfo:
    id: int
    name: str
    bitwidth: int
    match_type: int  # p4info MatchField.MatchType
    other: str = ""


@dataclass
class ParamInfo:
    id: int
    name: str
    bitwidth: int


@dataclass
class ActionInfo:
    id: int
    name: str
    params: dict[int, tuple[str, int]] = field(default_factory=dict)  # id -> (name, bitwidth)
    params_by_name: dict[str, ParamInfo] = field(default_factory=dict)


@dataclass
class TableInfo:
    id: int
    name: str
    fields: dict[int, FieldInfo]
    actions: dict[int, int]  # action id -> ActionRef scope
    const_default_action_id: int
    implementation_id: int
    direct_counter_id: int
    direct_meter_id: int
    is_const: bool
    size: int
    fields_by_name: dict[str, FieldInfo] = field(default_factory=dict)

    @property
    def needs_priority(self) -> bool:
        return any(
            f.match_type in (MF.TERNARY, MF.RANGE, MF.OPTIONAL) for f in self.fields.values()
        )


@dataclass
class SimpleInfo:
    """Counters, meters, registers, action profiles, digests, value sets: id, name, extras."""

    id: int
    name: str
    size: int = 0
    unit: int = 0
    bitwidth: int = 0
    with_selector: bool = False
    table_ids: list[int] = field(default_factory=list)
    direct_table_id: int = 0
    max_group_size: int = 0
    is_bool: bool = False  # a register of type bool (P4Data bool), not bit<1>


@dataclass
class PacketMetaInfo:
    id: int
    name: str
    bitwidth: int


class _Named(Protocol):
    id: int
    name: str


_T = TypeVar("_T", bound=_Named)

KINDS = ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
         "direct_meters", "registers", "digests", "value_sets")
"""The P4Info sections this index holds by id and by name (its attributes of those names)."""


@dataclass
class P4InfoIndex:
    p4info: p4info_pb2.P4Info
    tables: dict[int, TableInfo] = field(default_factory=dict)
    actions: dict[int, ActionInfo] = field(default_factory=dict)
    action_profiles: dict[int, SimpleInfo] = field(default_factory=dict)
    counters: dict[int, SimpleInfo] = field(default_factory=dict)
    direct_counters: dict[int, SimpleInfo] = field(default_factory=dict)
    meters: dict[int, SimpleInfo] = field(default_factory=dict)
    direct_meters: dict[int, SimpleInfo] = field(default_factory=dict)
    registers: dict[int, SimpleInfo] = field(default_factory=dict)
    digests: dict[int, SimpleInfo] = field(default_factory=dict)
    value_sets: dict[int, SimpleInfo] = field(default_factory=dict)
    packet_in: list[PacketMetaInfo] = field(default_factory=list)
    packet_out: list[PacketMetaInfo] = field(default_factory=list)
    by_name: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Section (one of ``KINDS``) -> full name or alias -> its info."""
    action_by_name: dict[str, int] = field(default_factory=dict)   # full names only
    digest_by_name: dict[str, int] = field(default_factory=dict)
    table_by_name: dict[str, int] = field(default_factory=dict)

    @property
    def profiles(self) -> dict[int, SimpleInfo]:
        return self.action_profiles

    def named(self, kind: str, name: str) -> Any:
        """The info of section ``kind``'s object called ``name`` (full name or alias);
        KeyError naming what is missing."""
        try:
            return self.by_name[kind][name]
        except KeyError:
            raise KeyError(f"P4Info has no {kind.rstrip('s').replace('_', ' ')} "
                           f"{name!r}") from None

    @classmethod
    def of(cls, p4info: p4info_pb2.P4Info) -> Self:
        """The index of ``p4info`` (an instance of ``cls``: the server's subclass adds its
        lookups)."""
        s = cls(p4info=p4info)
        aliases: dict[str, dict[str, Any]] = {k: {} for k in KINDS}

        def add(kind: str, pre: p4info_pb2.Preamble, info: _T) -> _T:
            getattr(s, kind)[info.id] = info
            s.by_name.setdefault(kind, {})[pre.name] = info
            if pre.alias:
                aliases[kind].setdefault(pre.alias, info)
            return info

        for a in p4info.actions:
            ai = add("actions", a.preamble, ActionInfo(
                a.preamble.id, a.preamble.name, {p.id: (p.name, p.bitwidth) for p in a.params},
                {p.name: ParamInfo(p.id, p.name, p.bitwidth) for p in a.params}))
            s.action_by_name[ai.name] = ai.id
        dres: dict[int, str] = {}
        for dc in p4info.direct_counters:
            dres[dc.preamble.id] = "counter"
            add("direct_counters", dc.preamble, SimpleInfo(
                dc.preamble.id, dc.preamble.name, unit=dc.spec.unit,
                direct_table_id=dc.direct_table_id))
        for dm in p4info.direct_meters:
            dres[dm.preamble.id] = "meter"
            add("direct_meters", dm.preamble, SimpleInfo(
                dm.preamble.id, dm.preamble.name, unit=dm.spec.unit,
                direct_table_id=dm.direct_table_id))
        for t in p4info.tables:
            fields = {f.id: FieldInfo(f.id, f.name, f.bitwidth, f.match_type, f.other_match_type)
                      for f in t.match_fields}
            ti = add("tables", t.preamble, TableInfo(
                id=t.preamble.id,
                name=t.preamble.name,
                fields=fields,
                actions={r.id: r.scope for r in t.action_refs},
                const_default_action_id=t.const_default_action_id,
                implementation_id=t.implementation_id,
                direct_counter_id=next(
                    (r for r in t.direct_resource_ids if dres.get(r) == "counter"), 0),
                direct_meter_id=next(
                    (r for r in t.direct_resource_ids if dres.get(r) == "meter"), 0),
                is_const=t.is_const_table,
                size=t.size,
                fields_by_name={f.name: f for f in fields.values()},
            ))
            s.table_by_name[ti.name] = ti.id
        for ap in p4info.action_profiles:
            add("action_profiles", ap.preamble, SimpleInfo(
                ap.preamble.id, ap.preamble.name, size=ap.size, with_selector=ap.with_selector,
                table_ids=list(ap.table_ids), max_group_size=ap.max_group_size))
        for c in p4info.counters:
            add("counters", c.preamble, SimpleInfo(c.preamble.id, c.preamble.name, size=c.size,
                                                   unit=c.spec.unit))
        for m in p4info.meters:
            add("meters", m.preamble, SimpleInfo(m.preamble.id, m.preamble.name, size=m.size,
                                                 unit=m.spec.unit))
        for r in p4info.registers:
            add("registers", r.preamble, SimpleInfo(
                r.preamble.id, r.preamble.name, size=r.size, bitwidth=bitwidth_of(r.type_spec),
                is_bool=r.type_spec.HasField("bool")))
        for d in p4info.digests:
            add("digests", d.preamble, SimpleInfo(d.preamble.id, d.preamble.name))
            s.digest_by_name[d.preamble.name] = d.preamble.id
        for v in p4info.value_sets:
            add("value_sets", v.preamble, SimpleInfo(v.preamble.id, v.preamble.name,
                                                     size=v.size))
        for cpm in p4info.controller_packet_metadata:
            metas = [PacketMetaInfo(m.id, m.name, m.bitwidth) for m in cpm.metadata]
            if cpm.preamble.name == "packet_in":
                s.packet_in = metas
            elif cpm.preamble.name == "packet_out":
                s.packet_out = metas
        for kind in KINDS:   # an alias never hides a full name
            names = s.by_name.setdefault(kind, {})
            for alias, info in aliases[kind].items():
                names.setdefault(alias, info)
        return s


def bitwidth_of(spec: Any) -> int:
    """The width of a P4Data type spec: ``bit<W>``/``int<W>`` W, bool 1, else 0."""
    which = spec.WhichOneof("type_spec")
    if which == "bitstring":
        bs = spec.bitstring
        kind = bs.WhichOneof("type_spec")
        return int(getattr(bs, kind).bitwidth) if kind in ("bit", "int") else 0
    if which == "bool":
        return 1
    return 0

