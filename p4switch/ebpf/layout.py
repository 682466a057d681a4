"""How a program's state lives in BPF maps: the contract between the C generator (``cgen``) and
the user-space side that writes entries and reads counters (``dataplane``).

Encodings (all integers little-endian in map values, as the BPF program reads them natively;
table keys are big-endian byte strings so that an LPM trie matches prefixes bit by bit):

* a table value is ``u32 action, u32 pad, u64 packets, u64 bytes, u64 data[n_data]``: the action
  id (1-based index into the table's action list, 0 = none), the direct counter, the action
  data in the order of the action's data parameters;
* ``exact`` tables: a hash map keyed by the keys' bytes (each key in ceil(W/8) bytes, MSB first);
* ``lpm`` tables (one lpm key, the others exact): an LPM trie keyed by
  ``u32 prefixlen, bytes`` with the exact keys first and the lpm key last, left-aligned;
* ``scan`` tables (ternary/range/optional keys, or several lpm keys): an array of entries
  ``value, u64 lo[k], u64 hi[k], u64 mask[k]`` in priority order (first match wins), with the
  number of live entries in a one-element array; a key matches when
  ``lo <= (key & mask) <= hi`` (exact: full mask, lo = hi; ternary/lpm: lo = hi = value & mask;
  range: full mask; wildcard: mask 0);
* a counter is a per-CPU array of ``u64 packets, u64 bytes``; a register an array of u64;
* a meter an array of ``METER``; a table with a direct meter has one more array (``_dm``)
  whose slot the entry's value names in its ``pad`` word (0: none, GREEN);
* an action-profile entry holds its member's action and data; an action-selector group entry
  has action ``GROUP_FLAG | slot``, and slot of the table's ``_grp`` array holds
  ``u32 n, u32 pad, value[GROUP_MAX]``: the group's members in ascending id order, each
  repeated by its weight (the program hashes the selector keys modulo n);
* a ``digest`` is a record ``u32 id, u32 receiver, u64 v[n]`` in the ``p4digests`` ring
  buffer (``DigestLayout``).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field


class TableKind(enum.StrEnum):
    """How a table's entries are stored (module docstring)."""

    EXACT = "exact"
    LPM = "lpm"
    SCAN = "scan"


@dataclass
class KeyLayout:
    name: str  # TableKey.name (the control-plane key name)
    match_kind: str
    width: int

    @property
    def nbytes(self) -> int:
        return (self.width + 7) // 8


@dataclass
class TableLayout:
    cp_name: str
    map_name: str  # entries; default action in map_name + "_def", scan count in + "_n"
    kind: TableKind
    keys: list[KeyLayout]  # in map-key order (lpm: exact keys first, the lpm key last)
    actions: list[str]  # action keys; id = index + 1
    n_data: int
    size: int
    direct_counter: bool = False
    direct_meter: str | None = None  # "packets"/"bytes": entries' meters in map_name + "_dm"
    profile: str | None = None  # the action profile/selector (control-plane name)
    selector: bool = False  # groups in map_name + "_grp" (GROUP_MAX member values each)

    @property
    def n_groups(self) -> int:
        """Group slots of a selector table: one per entry at most."""
        return max(1, min(self.size, 1024))

    @property
    def value_size(self) -> int:
        return 24 + 8 * self.n_data

    @property
    def key_bytes(self) -> int:
        return sum(k.nbytes for k in self.keys)

    def pack_value(self, action_id: int, data: list[int], packets: int = 0,
                   bytes_: int = 0, meter_slot: int = 0) -> bytes:
        d = list(data) + [0] * (self.n_data - len(data))
        return struct.pack(f"<IIQQ{self.n_data}Q", action_id, meter_slot, packets, bytes_, *d)

    @staticmethod
    def unpack_counters(value: bytes) -> tuple[int, int]:
        return struct.unpack_from("<QQ", value, 8)

    def pack_key(self, values: list[int], prefix_len: int | None = None) -> bytes:
        """The map key for exact values (and, for LPM tables, the lpm key's prefix length)."""
        out = bytearray()
        for k, v in zip(self.keys, values, strict=True):
            if k.match_kind == "lpm":
                v <<= 8 * k.nbytes - k.width
            out += v.to_bytes(k.nbytes, "big")
        if self.kind is TableKind.LPM:
            exact_bits = 8 * sum(k.nbytes for k in self.keys[:-1])
            return struct.pack("<I", exact_bits + (prefix_len or 0)) + bytes(out)
        return bytes(out)

    def pack_scan_entry(self, value: bytes, lo: list[int], hi: list[int],
                        mask: list[int]) -> bytes:
        n = len(self.keys)
        return value + struct.pack(f"<{n}Q{n}Q{n}Q", *lo, *hi, *mask)

    @property
    def scan_entry_size(self) -> int:
        return self.value_size + 24 * len(self.keys)


@dataclass
class CounterLayout:
    cp_name: str
    map_name: str
    size: int


GROUP_FLAG = 0x80000000
"""A table value whose action has this bit names a group (slot in the low 16 bits)."""
GROUP_MAX = 64
"""Member values a group holds on this target (members repeated by their weights)."""


DIGEST_MAX = 16
"""Fields a digest record carries (``struct p4_digest``: u32 id, u32 receiver, u64 v[n])."""


@dataclass
class DigestLayout:
    """One digest type: its record id (1-based) in the ``p4digests`` ring buffer, and its
    fields (name, width) in order."""

    name: str
    id: int
    fields: list[tuple[str, int]]

    def unpack(self, record: bytes) -> tuple[int, dict[str, int]]:
        """(receiver, values) of one record of this type."""
        n = len(self.fields)
        _, receiver, *vals = struct.unpack_from(f"<II{n}Q", record)
        return receiver, {f: v & ((1 << w) - 1) for (f, w), v in zip(self.fields, vals,
                                                                       strict=True)}


@dataclass
class MeterLayout:
    cp_name: str
    map_name: str
    size: int
    packets: bool  # MeterType.packets (else bytes)


METER = struct.Struct("<IIQQQQQQQQ")
"""A meter (cgen's ``struct p4_meter``): spin lock, on, cir, cburst, pir, pburst (units/s and
units), committed and peak tokens (millionths of a unit), last update µs, has_last."""


def pack_meter(cir: int, cburst: int, pir: int, pburst: int) -> bytes:
    """A configured meter with full buckets and no packet seen yet."""
    return METER.pack(0, 1, cir, cburst, pir, pburst, cburst * 1000000, pburst * 1000000, 0, 0)


@dataclass
class RegisterLayout:
    cp_name: str
    map_name: str
    size: int
    width: int


REPL_MAX = 16
"""Replicas a multicast group or clone session holds on this target (cgen's P4_REPL_MAX)."""
REPL_SET = struct.Struct("<II" + "II" * REPL_MAX)
"""``p4mcast``/``p4clone`` value: n, pad, then (egress port, rid) of each replica."""
TXREC_HEAD = struct.Struct("<IIII")
"""A test run's copy in the ``p4tx`` ring: port, length, bytes cut, pad, then the frame."""


def pack_replicas(replicas: list[tuple[int, int]]) -> bytes:
    flat = [v for pr in replicas for v in pr] + [0] * (2 * (REPL_MAX - len(replicas)))
    return REPL_SET.pack(len(replicas), 0, *flat)


STAT_NAMES = ("rx", "tx", "drop", "parser_error", "no_port", "deparse_error", "cpu",
              "unsupported", "tail_drop", "assert", "no_egress", "pass_limit")
"""Per-CPU packet-path statistics of the program, by index into the ``p4stats`` map: frames
received, sent; dropped by the program (mark_to_drop: egress_spec the drop port), unused,
sent to a port with no interface, deparser failures, sent to the CPU port, dropped where this
target cannot do what the program says (docs/p4switch-ebpf.md), tail-dropped by the queue
model, failed assert/assume, an empty multicast group, too many resubmit/recirculate
passes."""

PIPELINE_REASONS = {"drop": "mark_to_drop", "assert": "assert", "no_egress": "no_egress",
                    "deparse_error": "error", "pass_limit": "error"}
"""The statistics that are the Python target's pipeline drop reasons (api.Drop.reason), for
``hidden_stats``'s drop sites."""


PORT_QUEUE = struct.Struct("<IIQQIIQQQQ")
"""``p4queues`` value per port: spin lock, pad, next free ns, rate b/s, depth, priority queues,
enqueued, tail drops, next free ns of the priority traffic, the most packets it held (the
packet itself included) (cgen's ``struct p4_port_q``)."""


@dataclass
class Layout:
    """Every map the generated program declares, by P4 object."""

    tables: dict[str, TableLayout] = field(default_factory=dict)
    counters: dict[str, CounterLayout] = field(default_factory=dict)
    registers: dict[str, RegisterLayout] = field(default_factory=dict)
    meters: dict[str, MeterLayout] = field(default_factory=dict)
    digests: dict[str, DigestLayout] = field(default_factory=dict)  # by the data type's name
    replication: bool = False  # p4mcast, p4clone and the test runs' p4tx ring exist
    drop_port: int = 511
    cpu_port: int | None = None
