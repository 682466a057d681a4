"""The index the server translates P4Runtime messages with (the shared ``p4info_index``, its
lookups answering NOT_FOUND), value codecs, and the check of a pushed P4Info.

Why the index is built from the P4Info the *client* pushed rather than from our own: a client
may push a P4Info produced elsewhere (e.g. by p4c for the same program, with p4c's hashed ids).
As long as every object it names exists in the compiled program with the same shape (match
field names, bitwidths and kinds; action parameter names and bitwidths), we accept it and speak
the client's ids. Names in P4Info are the control-plane names the pipeline resolves.
"""

from __future__ import annotations

from typing import Any

from p4.config.v1 import p4info_pb2

from p4switch.p4info_index import (
    MF,
    ActionInfo,
    FieldInfo,
    P4InfoIndex,
    PacketMetaInfo,
    SimpleInfo,
    TableInfo,
    bitwidth_of,
    canonical_bytes,
)
from p4switch.runtime.errors import invalid, not_found

__all__ = ["MF", "ActionInfo", "FieldInfo", "PacketMetaInfo", "Schema", "SimpleInfo",
           "TableInfo", "build_schema", "check_compatible", "decode", "encode", "is_empty"]


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
    return canonical_bytes(value)


# --------------------------------------------------------------------------------------------
# Index: the shared one (p4info_index.py), with lookups that answer an unknown id as the spec says
# --------------------------------------------------------------------------------------------


class Schema(P4InfoIndex):
    """The server's view of the shared P4Info index: its lookups raise NOT_FOUND."""

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
        return self._get(self.action_profiles, pid, "action profile")

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


def build_schema(p4info: p4info_pb2.P4Info) -> Schema:
    return Schema.of(p4info)



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
                if bitwidth_of(obj.type_spec) != bitwidth_of(gen.type_spec):
                    raise invalid(f"P4Info register {name!r}: width differs from the program")
