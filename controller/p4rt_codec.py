"""Entries, counters, registers and packet metadata <-> P4Runtime 1.4 messages, by P4Info names.

Ids are never hard-coded: a :class:`P4Schema` is built from whatever P4Info the target produced
(p4switch's or p4c's), so the same controller drives both; it reads the P4Info through the
index the switch's server uses (``p4switch.P4InfoIndex``). Values go out in the canonical
(shortest big-endian) byte form the spec asks for since 1.3.
"""

from __future__ import annotations

from typing import TypeVar

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from model.entries import Entry, Match
from p4switch import (
    ActionInfo,
    ExactMatch,
    LpmMatch,
    P4InfoIndex,
    RangeMatch,
    TableInfo,
    TernaryMatch,
    canonical_bytes,
)

_V = TypeVar("_V")


def encode(value: int, bitwidth: int) -> bytes:
    """Canonical bytes of an unsigned value that must fit ``bitwidth`` bits."""
    if value < 0 or value >> bitwidth:
        raise ValueError(f"value {value} does not fit {bitwidth} bits")
    return canonical_bytes(value)


def decode(data: bytes) -> int:
    return int.from_bytes(data, "big")


class P4Schema:
    """Messages of one P4Info by name (full names; aliases accepted too), over the index the
    switch's P4Runtime server reads the same P4Info with (``p4switch.P4InfoIndex``)."""

    def __init__(self, info: p4info_pb2.P4Info) -> None:
        self.info = info
        self.index = P4InfoIndex.of(info)
        self.tables: dict[str, TableInfo] = self.index.by_name["tables"]
        self.actions: dict[str, ActionInfo] = self.index.by_name["actions"]

    def _lookup(self, d: dict[str, _V], name: str, what: str) -> _V:
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
            f = self._lookup(t.fields_by_name, name, f"key of {t.name}:")
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
            pf = self._lookup(a.params_by_name, pname, f"parameter of {a.name}:")
            te.action.action.params.add(param_id=pf.id, value=encode(v, pf.bitwidth))
        return te

    def entry_of(self, te: p4runtime_pb2.TableEntry) -> Entry:
        """Decode a read-back table entry (direct actions only)."""
        t = self.index.tables[te.table_id]
        match: dict[str, Match] = {}
        for fm in te.match:
            name = t.fields[fm.field_id].name
            kind = fm.WhichOneof("field_match_type")
            if kind == "exact":
                match[name] = ExactMatch(decode(fm.exact.value))
            elif kind == "lpm":
                match[name] = LpmMatch(decode(fm.lpm.value), fm.lpm.prefix_len)
            elif kind == "range":
                match[name] = RangeMatch(decode(fm.range.low), decode(fm.range.high))
            elif kind == "ternary":
                match[name] = TernaryMatch(decode(fm.ternary.value), decode(fm.ternary.mask))
        a = self.index.actions[te.action.action.action_id]
        params = {a.params[p.param_id][0]: decode(p.value) for p in te.action.action.params}
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
        ent.counter_entry.counter_id = self.index.named("counters", counter).id
        if index is not None:
            ent.counter_entry.index.index = index
        return ent

    def register_entity(self, register: str, index: int | None = None) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        ent.register_entry.register_id = self.index.named("registers", register).id
        if index is not None:
            ent.register_entry.index.index = index
        return ent

    def register_write(self, register: str, index: int, value: int) -> p4runtime_pb2.Update:
        r = self.index.named("registers", register)
        u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
        u.entity.register_entry.register_id = r.id
        u.entity.register_entry.index.index = index
        u.entity.register_entry.data.bitstring = encode(value, r.bitwidth)
        return u

    def counter_name(self, counter_id: int) -> str:
        return self.index.counters[counter_id].name

    def register_name(self, register_id: int) -> str:
        return self.index.registers[register_id].name

    # ---- packet I/O --------------------------------------------------------------------------
    def packet_out(self, payload: bytes, **metadata: int) -> p4runtime_pb2.PacketOut:
        if not self.index.packet_out:
            raise KeyError("P4Info has no controller header 'packet_out'")
        fields = {f.name: f for f in self.index.packet_out}
        pkt = p4runtime_pb2.PacketOut(payload=payload)
        for name, v in metadata.items():
            f = self._lookup(fields, name, "packet_out metadata")
            pkt.metadata.add(metadata_id=f.id, value=encode(v, f.bitwidth))
        return pkt

    def packet_in_metadata(self, pkt: p4runtime_pb2.PacketIn) -> dict[str, int]:
        names = {f.id: f.name for f in self.index.packet_in}
        return {names.get(m.metadata_id, str(m.metadata_id)): decode(m.value)
                for m in pkt.metadata}
