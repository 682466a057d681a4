"""Reference model of p4src/fabric.p4's load-balancing member selection.

Each function computes, from a packet's fields and the group's state, the member index the P4
program chooses, so tests can check the program on p4switch (and BMv2) packet by packet and the
benchmark can study the schemes without a switch. It follows the P4 line by line; the constants
mirror p4src/include/defines.p4 and must change with it.

Hash conventions (v1model/BMv2, docs/architecture.md and p4src/README.md): the data fields are concatenated bit-wise
MSB-first and zero-padded to a whole byte at the end; ``hash(out, algo, base, data, max)`` gives
``base + H mod max``; crc16 is CRC-16/ARC and crc32 the IEEE CRC-32.
"""

from __future__ import annotations

import random as _random
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# ---- constants mirrored from p4src/include/defines.p4 ---------------------------------------
CPU_PORT = 255
LB_MAX_GROUPS = 256
LB_MAX_MEMBERS = 64
FLOWLET_SLOTS = 4096
ROT_SLOTS = 16384
WAM_L_MAX = 16

SCHEME_ECMP = 1
SCHEME_FLOWLET = 2
SCHEME_RANDOM = 3
SCHEME_ROTATE = 4
SCHEME_WAM = 5

DROP_PARSER_ERROR = 1
DROP_BAD_CHECKSUM = 2
DROP_NOT_IPV4 = 3
DROP_TTL_EXPIRED = 4
DROP_ROUTE_MISS = 5
DROP_ROUTE_BLACKHOLE = 6
DROP_LB_GROUP_MISS = 7
DROP_LB_EMPTY = 8
DROP_LB_MEMBER_MISS = 9

_MASK16 = 0xFFFF
_MASK48 = (1 << 48) - 1


# ---- hashing ---------------------------------------------------------------------------------
def _crc16_arc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC16_TABLE = _crc16_arc_table()


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC (poly 0x8005 reflected, init 0, xorout 0): v1model's HashAlgorithm.crc16."""
    crc = 0
    for b in data:
        crc = (crc >> 8) ^ _CRC16_TABLE[(crc ^ b) & 0xFF]
    return crc


def crc32(data: bytes) -> int:
    """IEEE CRC-32: v1model's HashAlgorithm.crc32."""
    return zlib.crc32(data) & 0xFFFFFFFF


def pack_fields(fields: Iterable[tuple[int, int]]) -> bytes:
    """Concatenate (value, width) pairs MSB-first and zero-pad to a whole byte at the end."""
    acc = 0
    nbits = 0
    for value, width in fields:
        if width <= 0:
            raise ValueError(f"field width must be positive, got {width}")
        acc = (acc << width) | (value & ((1 << width) - 1))
        nbits += width
    pad = (-nbits) % 8
    acc <<= pad
    return acc.to_bytes((nbits + pad) // 8, "big")


def v1_hash(algo: str, fields: Iterable[tuple[int, int]], max_: int, base: int = 0) -> int:
    """``hash(out, algo, base, {fields}, max)`` before truncation to the output width."""
    data = pack_fields(fields)
    if algo == "crc16":
        h = crc16_arc(data)
    elif algo == "crc32":
        h = crc32(data)
    else:
        raise ValueError(f"unsupported algorithm {algo!r}")
    return base if max_ == 0 else base + h % max_


# ---- packet fields ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FlowKey:
    """The 5-tuple as the P4 hashes it; ports are 0 for packets without TCP/UDP."""

    src: int
    dst: int
    proto: int
    sport: int = 0
    dport: int = 0

    def fields(self) -> list[tuple[int, int]]:
        return [(self.src, 32), (self.dst, 32), (self.proto, 8), (self.sport, 16), (self.dport, 16)]


def ip(s: str) -> int:
    """Dotted quad -> int, for readable tests."""
    a, b, c, d = (int(x) for x in s.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


# ---- ECMP ------------------------------------------------------------------------------------
def seeded_hash_member(fields: list[tuple[int, int]], n_members: int, seed: int) -> int:
    """H(seed, fields) mod n, the variant chosen by seed[1:0].

    0: crc32 over (seed, fields); 1: crc32 over (seed, reversed fields); 2 and 3: the same with
    crc16. Variants exist because CRC is linear: a hashed-in seed only XORs a constant into the
    CRC, which for 2^k members relabels them, so switches of one variant polarise whatever their
    seeds; switches of different variants do not. crc32 comes first because CRC-16/ARC's low
    bits spread structured inputs (consecutive ports) badly.
    """
    variant = seed & 3
    ordered = fields[::-1] if variant in (1, 3) else fields
    algo = "crc32" if variant in (0, 1) else "crc16"
    return v1_hash(algo, [(seed, 16), *ordered], n_members) & _MASK16


def ecmp_member(flow: FlowKey, n_members: int, seed: int) -> int:
    """ECMP member of a flow: H(seed, src, dst, proto, sport, dport) mod n."""
    return seeded_hash_member(flow.fields(), n_members, seed)


# ---- flowlet ---------------------------------------------------------------------------------
def flowlet_slot(flow: FlowKey) -> int:
    """Flowlet register index: crc32(5-tuple) mod FLOWLET_SLOTS (shared by all groups)."""
    return v1_hash("crc32", flow.fields(), FLOWLET_SLOTS)


@dataclass
class FlowletState:
    """The flowlet_last_ts / flowlet_id registers (missing cells read 0, as after reset)."""

    last_ts: dict[int, int] = field(default_factory=dict)
    flowlet_id: dict[int, int] = field(default_factory=dict)


def flowlet_member(
    flow: FlowKey, now_us: int, n_members: int, seed: int, timeout_us: int, state: FlowletState
) -> int:
    """Update the slot's registers for a packet at ``now_us`` and return its member."""
    slot = flowlet_slot(flow)
    last = state.last_ts.get(slot, 0)
    fid = state.flowlet_id.get(slot, 0)
    if ((now_us - last) & _MASK48) > timeout_us:
        fid = (fid + 1) & _MASK16
        state.flowlet_id[slot] = fid
    state.last_ts[slot] = now_us & _MASK48
    return flowlet_hash_member(flow, fid, n_members, seed)


def flowlet_hash_member(flow: FlowKey, flowlet_id: int, n_members: int, seed: int) -> int:
    """As ECMP with the 16-bit flowlet id after dport (reversed variants: before it)."""
    return seeded_hash_member([*flow.fields(), (flowlet_id, 16)], n_members, seed)


# ---- random ----------------------------------------------------------------------------------
def random_member(n_members: int, rng: _random.Random) -> int:
    """random(0, n-1): uniform; the switch's generator cannot be predicted, only its range."""
    return rng.randint(0, n_members - 1)


# ---- destination rotation --------------------------------------------------------------------
@dataclass
class RotationState:
    """The rot_next register, indexed by the route's dst_id (missing cells read 0)."""

    next_member: dict[int, int] = field(default_factory=dict)


def rotation_member(dst_id: int, n_members: int, state: RotationState) -> int:
    """Return rot_next[dst_id] (0 if the group shrank below it) and advance it cyclically.

    dst_id is the per-(group, destination) slot the controller puts in the route's
    set_lb_group(group_id, dst_id); it is exact, so destinations never share a counter.
    """
    member = state.next_member.get(dst_id, 0)
    if member >= n_members:
        member = 0
    state.next_member[dst_id] = 0 if member + 1 == n_members else (member + 1) & _MASK16
    return member


# ---- Whack-a-Mole ----------------------------------------------------------------------------
def bit_reverse(value: int, bits: int) -> int:
    """Reverse the low ``bits`` bits of ``value``."""
    out = 0
    for i in range(bits):
        out = (out << 1) | ((value >> i) & 1)
    return out


def wam_slot(j: int, log2_m: int, a: int, b: int) -> int:
    """slot = bitreverse_l((a + b*j) mod 2^l), computed as the P4 does with 16-bit arithmetic."""
    if not 0 <= log2_m <= WAM_L_MAX:
        raise ValueError(f"log2_m must be in [0, {WAM_L_MAX}], got {log2_m}")
    mask = ((1 << log2_m) - 1) & _MASK16
    jp = ((a + b * j) & _MASK16) & mask
    return bit_reverse(jp, 16) >> (16 - log2_m)


def balls_from_weights(weights: Sequence[float], m: int) -> list[int]:
    """Split m balls by weight (largest remainder, ties to the lower index); sum is exactly m.

    This is the controller's job; it lives here so the model and the controller agree.
    """
    total = float(sum(weights))
    if total <= 0 or any(w < 0 for w in weights):
        raise ValueError("weights must be non-negative with a positive sum")
    exact = [w * m / total for w in weights]
    balls = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda k: (-(exact[k] - balls[k]), k))
    for k in order[: m - sum(balls)]:
        balls[k] += 1
    return balls


def ball_ranges(balls: Sequence[int]) -> list[tuple[int, int, int]]:
    """Cumulative ranges (lo, hi inclusive, member) for wam_slot_to_member; 0-ball members skipped."""
    ranges = []
    lo = 0
    for member, count in enumerate(balls):
        if count > 0:
            ranges.append((lo, lo + count - 1, member))
        lo += count
    return ranges


@dataclass
class WamGroup:
    """One Whack-a-Mole group: the lb_wam parameters, its ranges and its wam_counter cells.

    The P4 keeps one counter per route ``dst_id`` (the per-(group, destination) slot rotation
    uses too): ``next_member(dst_id)`` reads and advances that destination's cell, missing cells
    read 0. ``j`` is the one cell of a group whose packets all carry one ``dst_id``
    (``next_member()`` without one), which the single-sequence tests use.
    """

    log2_m: int
    a: int
    b: int
    balls: list[int]
    j: int = 0
    counters: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._check()

    @property
    def m(self) -> int:
        return 1 << self.log2_m

    def _check(self) -> None:
        if sum(self.balls) != self.m:
            raise ValueError(f"balls must sum to m={self.m}, got {sum(self.balls)}")

    def reweight(self, balls: Sequence[int]) -> None:
        """Whack-a-mole: the controller rewrites the ranges; the counters keep running."""
        self.balls = list(balls)
        self._check()

    def member_of_slot(self, slot: int) -> int:
        for lo, hi, member in ball_ranges(self.balls):
            if lo <= slot <= hi:
                return member
        raise LookupError(f"slot {slot} has no range")  # the P4 drops: DROP_LB_MEMBER_MISS

    def next_member(self, dst_id: int | None = None) -> int:
        """One packet: read j (``wam_counter[dst_id]``, or ``j``), write j+1 (16-bit), map
        slot -> member."""
        j = self.j if dst_id is None else self.counters.get(dst_id, 0)
        slot = wam_slot(j, self.log2_m, self.a, self.b)
        if dst_id is None:
            self.j = (j + 1) & _MASK16
        else:
            self.counters[dst_id] = (j + 1) & _MASK16
        return self.member_of_slot(slot)


def wam_sequence(group: WamGroup, count: int) -> list[int]:
    """The members of the next ``count`` packets of a group (advances its counter)."""
    return [group.next_member() for _ in range(count)]
