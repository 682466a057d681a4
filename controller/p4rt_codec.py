"""Entries, counters, registers and packet metadata <-> P4Runtime 1.4 messages, by P4Info names.

Ids are never hard-coded: a :class:`P4Schema` is built from whatever P4Info the target produced
(p4switch's or p4c's), so the same controller drives both. Values go out in the canonical
(shortest big-endian) byte form the spec asks for since 1.3.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from model.entries import Entry, Match
from p4switch import ExactMatch, LpmMatch, RangeMatch, TernaryMatch


def encode(value: int, bitwidth: int) -> bytes:
    """Canonical bytes of an unsigned value that must fit ``bitwidth`` bits."""
    if value < 0 or value >> bitwidth:
        raise ValueError(f"value {value} does not fit {bitwidth} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def decode(data: bytes) -> int:
    return int.from_bytes(data, "big")


@dataclass(frozen=True)
class _Field:
    id: int
    bitwidth: int


@dataclass
class _Table:
    id: int
    name: str
    keys: dict[str, _Field]
    key_names: dict[int, str]


@dataclass
class _Action:
    id: int
    name: str
    params: dict[str, _Field]
    param_names: dict[int, str]


class P4Schema:
    """Name -> id/bitwidth lookups of one P4Info (full names; aliases accepted too)."""

    def __init__(self, info: p4info_pb2.P4Info) -> None:
        self.info = info
        self.tables: dict[str, _Table] = {}
        self.tables_by_id: dict[int, _Table] = {}
        for t in info.tables:
            tb = _Table(t.preamble.id, t.preamble.name,
                        {m.name: _Field(m.id, m.bitwidth) for m in t.match_fields},
                        {m.id: m.name for m in t.match_fields})
            self._index(self.tables, t.preamble, tb)
            self.tables_by_id[tb.id] = tb
        self.actions: dict[str, _Action] = {}
        self.actions_by_id: dict[int, _Action] = {}
        for a in info.actions:
            ac = _Action(a.preamble.id, a.preamble.name,
                         {p.name: _Field(p.id, p.bitwidth) for p in a.params},
                         {p.id: p.name for p in a.params})
            self._index(self.actions, a.preamble, ac)
            self.actions_by_id[ac.id] = ac
        self.counters: dict[str, int] = {}
        for c in info.counters:
            self._index(self.counters, c.preamble, c.preamble.id)
        self.registers: dict[str, tuple[int, int]] = {}
        for r in info.registers:
            width = r.type_spec.bitstring.bit.bitwidth or r.type_spec.bitstring.varbit.max_bitwidth
            self._index(self.registers, r.preamble, (r.preamble.id, width))
        self.packet_meta: dict[str, dict[str, _Field]] = {
            m.preamble.name: {f.name: _Field(f.id, f.bitwidth) for f in m.metadata}
            for m in info.controller_packet_metadata}

    @staticmethod
    def _index(d: dict, pre: p4info_pb2.Preamble, value: object) -> None:
        d[pre.name] = value
        if pre.alias and pre.alias not in d:
            d[pre.alias] = value

    def _lookup(self, d: dict, name: str, what: str):
        try:
            return d[name]
        except KeyError:
            raise KeyError(f"P4Info has no {what} {name!r}") from None

    # ---- table entries -----------------------------------------------------------------------
    def table_entry(self, e: Entry) -> p4runtime_pb2.TableEntry:
        t = self._lookup(self.tables, e.table, "table")
        a = self._lookup(self.actions, e.action, "action")
        te = p4runtime_pb2.TableEntry(table_id=t.id, priority=e.priority)
        for name, m in e.match:
            f = self._lookup(t.keys, name, f"key of {t.name}:")
            fm = te.match.add(field_id=f.id)
            if isinstance(m, ExactMatch):
                fm.exact.value = encode(m.value, f.bitwidth)
            elif isinstance(m, LpmMatch):
                if m.prefix_len == 0:
                    del te.match[-1]  # /0 is the wildcard: omitted
                    continue
                mask = ((1 << m.prefix_len) - 1) << (f.bitwidth - m.prefix_len)
                fm.lpm.value = encode(m.value & mask, f.bitwidth)
                fm.lpm.prefix_len = m.prefix_len
            elif isinstance(m, RangeMatch):
                fm.range.low = encode(m.low, f.bitwidth)
                fm.range.high = encode(m.high, f.bitwidth)
            elif isinstance(m, TernaryMatch):
                fm.ternary.value = encode(m.value & m.mask, f.bitwidth)
                fm.ternary.mask = encode(m.mask, f.bitwidth)
        te.action.action.action_id = a.id
        for pname, v in e.params:
            pf = self._lookup(a.params, pname, f"parameter of {a.name}:")
            te.action.action.params.add(param_id=pf.id, value=encode(v, pf.bitwidth))
        return te

    def entry_of(self, te: p4runtime_pb2.TableEntry) -> Entry:
        """Decode a read-back table entry (direct actions only)."""
        t = self.tables_by_id[te.table_id]
        match: dict[str, Match] = {}
        for fm in te.match:
            name = t.key_names[fm.field_id]
            kind = fm.WhichOneof("field_match_type")
            if kind == "exact":
                match[name] = ExactMatch(decode(fm.exact.value))
            elif kind == "lpm":
                match[name] = LpmMatch(decode(fm.lpm.value), fm.lpm.prefix_len)
            elif kind == "range":
                match[name] = RangeMatch(decode(fm.range.low), decode(fm.range.high))
            elif kind == "ternary":
                match[name] = TernaryMatch(decode(fm.ternary.value), decode(fm.ternary.mask))
        a = self.actions_by_id[te.action.action.action_id]
        params = {a.param_names[p.param_id]: decode(p.value) for p in te.action.action.params}
        return Entry.make(t.name, match, a.name, params, te.priority)

    def update(self, op: str, e: Entry) -> p4runtime_pb2.Update:
        kind = {"insert": p4runtime_pb2.Update.INSERT, "modify": p4runtime_pb2.Update.MODIFY,
                "delete": p4runtime_pb2.Update.DELETE}[op]
        u = p4runtime_pb2.Update(type=kind)
        u.entity.table_entry.CopyFrom(self.table_entry(e))
        return u

    def table_wildcard(self, table: str | None = None) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        ent.table_entry.table_id = self._lookup(self.tables, table, "table").id if table else 0
        return ent

    # ---- counters / registers ----------------------------------------------------------------
    def counter_entity(self, counter: str, index: int | None = None) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        ent.counter_entry.counter_id = self._lookup(self.counters, counter, "counter")
        if index is not None:
            ent.counter_entry.index.index = index
        return ent

    def register_entity(self, register: str, index: int | None = None) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        ent.register_entry.register_id = self._lookup(self.registers, register, "register")[0]
        if index is not None:
            ent.register_entry.index.index = index
        return ent

    def register_write(self, register: str, index: int, value: int) -> p4runtime_pb2.Update:
        rid, width = self._lookup(self.registers, register, "register")
        u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
        u.entity.register_entry.register_id = rid
        u.entity.register_entry.index.index = index
        u.entity.register_entry.data.bitstring = encode(value, width)
        return u

    def counter_name(self, counter_id: int) -> str:
        for c in self.info.counters:
            if c.preamble.id == counter_id:
                return c.preamble.name
        raise KeyError(counter_id)

    def register_name(self, register_id: int) -> str:
        for r in self.info.registers:
            if r.preamble.id == register_id:
                return r.preamble.name
        raise KeyError(register_id)

    # ---- packet I/O --------------------------------------------------------------------------
    def packet_out(self, payload: bytes, **metadata: int) -> p4runtime_pb2.PacketOut:
        fields = self._lookup(self.packet_meta, "packet_out", "controller header")
        pkt = p4runtime_pb2.PacketOut(payload=payload)
        for name, v in metadata.items():
            f = self._lookup(fields, name, "packet_out metadata")
            pkt.metadata.add(metadata_id=f.id, value=encode(v, f.bitwidth))
        return pkt

    def packet_in_metadata(self, pkt: p4runtime_pb2.PacketIn) -> dict[str, int]:
        fields = self.packet_meta.get("packet_in", {})
        names = {f.id: n for n, f in fields.items()}
        return {names.get(m.metadata_id, str(m.metadata_id)): decode(m.value)
                for m in pkt.metadata}
