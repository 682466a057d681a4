"""The id -> name index the server translates P4Runtime messages with, and value codecs.

Why the index is built from the P4Info the *client* pushed rather than from our own: a client
may push a P4Info produced elsewhere (e.g. by p4c for the same program, with p4c's hashed ids).
As long as every object it names exists in the compiled program with the same shape (match
field names, bitwidths and kinds; action parameter names and bitwidths), we accept it and speak
the client's ids. Names in P4Info are the control-plane names the pipeline resolves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4.config.v1 import p4info_pb2

from p4switch.runtime.errors import invalid, not_found

MF = p4info_pb2.MatchField


# --------------------------------------------------------------------------------------------
# Bytestrings (spec §8.3)
# --------------------------------------------------------------------------------------------


def decode(value: bytes, bitwidth: int, what: str) -> int:
    """Unsigned big-endian bytestring -> int. Any length is accepted (padded strings too, as the
    spec requires for program upgrades) as long as the value fits ``bitwidth``; empty strings
    and values that do not fit are rejected with INVALID_ARGUMENT (see docs/p4runtime.md)."""
    if len(value) == 0:
        raise invalid(f"{what}: empty bytestring")
    v = int.from_bytes(value, "big")
    if bitwidth and v.bit_length() > bitwidth:
        raise invalid(f"{what}: value 0x{value.hex()} does not fit in {bitwidth} bits")
    return v


def encode(value: int) -> bytes:
    """int -> canonical bytestring (shortest, at least one byte), for read-write symmetry."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


# --------------------------------------------------------------------------------------------
# Index
# --------------------------------------------------------------------------------------------


@dataclass
class FieldInfo:
    id: int
    name: str
    bitwidth: int
    match_type: int  # p4info MatchField.MatchType
    other: str = ""


@dataclass
class ActionInfo:
    id: int
    name: str
    params: dict[int, tuple[str, int]] = field(default_factory=dict)  # id -> (name, bitwidth)


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


@dataclass
class Schema:
    p4info: p4info_pb2.P4Info
    tables: dict[int, TableInfo] = field(default_factory=dict)
    actions: dict[int, ActionInfo] = field(default_factory=dict)
    profiles: dict[int, SimpleInfo] = field(default_factory=dict)
    counters: dict[int, SimpleInfo] = field(default_factory=dict)
    direct_counters: dict[int, SimpleInfo] = field(default_factory=dict)
    meters: dict[int, SimpleInfo] = field(default_factory=dict)
    direct_meters: dict[int, SimpleInfo] = field(default_factory=dict)
    registers: dict[int, SimpleInfo] = field(default_factory=dict)
    digests: dict[int, SimpleInfo] = field(default_factory=dict)
    value_sets: dict[int, SimpleInfo] = field(default_factory=dict)
    packet_in: list[PacketMetaInfo] = field(default_factory=list)
    packet_out: list[PacketMetaInfo] = field(default_factory=list)
    action_by_name: dict[str, int] = field(default_factory=dict)
    digest_by_name: dict[str, int] = field(default_factory=dict)
    table_by_name: dict[str, int] = field(default_factory=dict)

    # lookups that raise the spec's error for an unknown id -----------------------------------
    @staticmethod
    def _get(d: dict, key: int, what: str):
        try:
            return d[key]
        except KeyError:
            raise not_found(f"unknown {what} id {key}") from None

    def table(self, tid: int) -> TableInfo:
        return self._get(self.tables, tid, "table")

    def action(self, aid: int) -> ActionInfo:
        return self._get(self.actions, aid, "action")

    def profile(self, pid: int) -> SimpleInfo:
        return self._get(self.profiles, pid, "action profile")

    def counter(self, cid: int) -> SimpleInfo:
        return self._get(self.counters, cid, "counter")

    def direct_counter(self, cid: int) -> SimpleInfo:
        return self._get(self.direct_counters, cid, "direct counter")

    def meter(self, mid: int) -> SimpleInfo:
        return self._get(self.meters, mid, "meter")

    def direct_meter(self, mid: int) -> SimpleInfo:
        return self._get(self.direct_meters, mid, "direct meter")

    def register(self, rid: int) -> SimpleInfo:
        return self._get(self.registers, rid, "register")

    def digest(self, did: int) -> SimpleInfo:
        return self._get(self.digests, did, "digest")

    def value_set(self, vid: int) -> SimpleInfo:
        return self._get(self.value_sets, vid, "value set")


def _bitwidth_of(spec) -> int:
    which = spec.WhichOneof("type_spec")
    if which == "bitstring":
        bs = spec.bitstring
        kind = bs.WhichOneof("type_spec")
        return getattr(bs, kind).bitwidth if kind in ("bit", "int") else 0
    if which == "bool":
        return 1
    return 0


def build_schema(p4info: p4info_pb2.P4Info) -> Schema:
    s = Schema(p4info=p4info)
    for a in p4info.actions:
        ai = ActionInfo(a.preamble.id, a.preamble.name,
                        {p.id: (p.name, p.bitwidth) for p in a.params})
        s.actions[ai.id] = ai
        s.action_by_name[ai.name] = ai.id
    dres: dict[int, str] = {}
    for dc in p4info.direct_counters:
        dres[dc.preamble.id] = "counter"
        s.direct_counters[dc.preamble.id] = SimpleInfo(
            dc.preamble.id, dc.preamble.name, unit=dc.spec.unit, direct_table_id=dc.direct_table_id)
    for dm in p4info.direct_meters:
        dres[dm.preamble.id] = "meter"
        s.direct_meters[dm.preamble.id] = SimpleInfo(
            dm.preamble.id, dm.preamble.name, unit=dm.spec.unit, direct_table_id=dm.direct_table_id)
    for t in p4info.tables:
        dc = next((r for r in t.direct_resource_ids if dres.get(r) == "counter"), 0)
        dm = next((r for r in t.direct_resource_ids if dres.get(r) == "meter"), 0)
        ti = TableInfo(
            id=t.preamble.id,
            name=t.preamble.name,
            fields={f.id: FieldInfo(f.id, f.name, f.bitwidth, f.match_type, f.other_match_type)
                    for f in t.match_fields},
            actions={r.id: r.scope for r in t.action_refs},
            const_default_action_id=t.const_default_action_id,
            implementation_id=t.implementation_id,
            direct_counter_id=dc,
            direct_meter_id=dm,
            is_const=t.is_const_table,
            size=t.size,
        )
        s.tables[ti.id] = ti
        s.table_by_name[ti.name] = ti.id
    for ap in p4info.action_profiles:
        s.profiles[ap.preamble.id] = SimpleInfo(
            ap.preamble.id, ap.preamble.name, size=ap.size, with_selector=ap.with_selector,
            table_ids=list(ap.table_ids), max_group_size=ap.max_group_size)
    for c in p4info.counters:
        s.counters[c.preamble.id] = SimpleInfo(c.preamble.id, c.preamble.name, size=c.size,
                                               unit=c.spec.unit)
    for m in p4info.meters:
        s.meters[m.preamble.id] = SimpleInfo(m.preamble.id, m.preamble.name, size=m.size,
                                             unit=m.spec.unit)
    for r in p4info.registers:
        s.registers[r.preamble.id] = SimpleInfo(r.preamble.id, r.preamble.name, size=r.size,
                                                bitwidth=_bitwidth_of(r.type_spec),
                                                is_bool=r.type_spec.HasField("bool"))
    for d in p4info.digests:
        s.digests[d.preamble.id] = SimpleInfo(d.preamble.id, d.preamble.name)
        s.digest_by_name[d.preamble.name] = d.preamble.id
    for v in p4info.value_sets:
        s.value_sets[v.preamble.id] = SimpleInfo(v.preamble.id, v.preamble.name, size=v.size)
    for cpm in p4info.controller_packet_metadata:
        metas = [PacketMetaInfo(m.id, m.name, m.bitwidth) for m in cpm.metadata]
        if cpm.preamble.name == "packet_in":
            s.packet_in = metas
        elif cpm.preamble.name == "packet_out":
            s.packet_out = metas
    return s


# --------------------------------------------------------------------------------------------
# Consistency of a pushed P4Info with the compiled program
# --------------------------------------------------------------------------------------------


def is_empty(p4info: p4info_pb2.P4Info) -> bool:
    """A P4Info with no objects at all: the server then uses the one it generates itself."""
    return not any(
        len(getattr(p4info, f)) for f in (
            "tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
            "direct_meters", "controller_packet_metadata", "value_sets", "registers", "digests")
    )


def check_compatible(pushed: p4info_pb2.P4Info, generated: p4info_pb2.P4Info) -> None:
    """INVALID_ARGUMENT unless every object of ``pushed`` exists in ``generated`` (by name) with
    the same shape. Ids may differ; ids must be unique within ``pushed``."""
    seen: dict[int, str] = {}

    def index(objs) -> dict[str, Any]:
        return {o.preamble.name: o for o in objs}

    def check_ids(objs, kind: str) -> None:
        for o in objs:
            pid = o.preamble.id
            if pid == 0:
                raise invalid(f"P4Info {kind} {o.preamble.name!r} has id 0")
            if pid in seen:
                raise invalid(f"P4Info id {pid} used by both {seen[pid]!r} and {o.preamble.name!r}")
            seen[pid] = o.preamble.name

    kinds = ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
             "direct_meters", "controller_packet_metadata", "value_sets", "registers", "digests")
    a: list[tuple[object, ...]]  # an object's shape as pushed (a) and as generated (b)
    b: list[tuple[object, ...]]
    for kind in kinds:
        mine = index(getattr(generated, kind))
        check_ids(getattr(pushed, kind), kind)
        for obj in getattr(pushed, kind):
            name = obj.preamble.name
            if name not in mine:
                raise invalid(f"P4Info {kind[:-1]} {name!r} is not in the program")
            gen = mine[name]
            if kind == "tables":
                a = sorted((f.name, f.bitwidth, f.match_type) for f in obj.match_fields)
                b = sorted((f.name, f.bitwidth, f.match_type) for f in gen.match_fields)
                if a != b:
                    raise invalid(f"P4Info table {name!r}: match fields differ from the program")
            elif kind == "actions":
                a = sorted((p.name, p.bitwidth) for p in obj.params)
                b = sorted((p.name, p.bitwidth) for p in gen.params)
                if a != b:
                    raise invalid(f"P4Info action {name!r}: parameters differ from the program")
            elif kind == "controller_packet_metadata":
                a = [(m.name, m.bitwidth) for m in obj.metadata]
                b = [(m.name, m.bitwidth) for m in gen.metadata]
                if sorted(a) != sorted(b):
                    raise invalid(f"P4Info controller header {name!r} differs from the program")
            elif kind == "registers":
                if _bitwidth_of(obj.type_spec) != _bitwidth_of(gen.type_spec):
                    raise invalid(f"P4Info register {name!r}: width differs from the program")
