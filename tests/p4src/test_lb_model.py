"""Unit tests of model/lb.py, the reference model of fabric.p4's member selection.

The P4 program itself is tested on p4switch elsewhere against this model; here the model is
checked against known answers, hand-built hash inputs and the Whack-a-Mole window bound.
"""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import numpy as np
import pytest

from model import lb as lm

DEFINES = Path(__file__).resolve().parents[2] / "p4src" / "include" / "defines.p4"
CONTRACT = DEFINES.with_name("contract.p4")  # the constants defines.p4 shares with tna/fabric.p4


# ---- hashing ---------------------------------------------------------------------------------
def _crc16_arc_bitwise(data: bytes) -> int:
    """Independent bit-at-a-time CRC-16/ARC (no table) to cross-check the model's."""
    crc = 0
    for byte in data:
        for i in range(8):
            bit = (byte >> i) & 1  # reflected input: LSB first
            top = crc & 1
            crc >>= 1
            if top ^ bit:
                crc ^= 0xA001
    return crc


def test_crc16_arc_known_answer() -> None:
    assert lm.crc16_arc(b"123456789") == 0xBB3D
    assert lm.crc16_arc(b"") == 0


def test_crc32_known_answer() -> None:
    assert lm.crc32(b"123456789") == 0xCBF43926


def test_crc16_matches_bitwise_implementation() -> None:
    rng = random.Random(1)
    for n in range(0, 40):
        data = bytes(rng.randrange(256) for _ in range(n))
        assert lm.crc16_arc(data) == _crc16_arc_bitwise(data)


def test_pack_fields_msb_first_and_zero_padded() -> None:
    assert lm.pack_fields([(0x1, 4), (0xA, 4)]) == b"\x1a"
    assert lm.pack_fields([(1, 1)]) == b"\x80"
    assert lm.pack_fields([(0x123, 12)]) == b"\x12\x30"
    assert lm.pack_fields([(0x1FF, 9), (0, 7)]) == b"\xff\x80"
    # values wider than their field are truncated, like P4 casts
    assert lm.pack_fields([(0x1AB, 8)]) == b"\xab"


def test_v1_hash_base_and_zero_max() -> None:
    assert lm.v1_hash("crc16", [(0, 8)], 0, base=7) == 7
    h = lm.crc16_arc(b"\x31\x32")
    assert lm.v1_hash("crc16", [(0x3132, 16)], 10, base=100) == 100 + h % 10


# ---- ECMP ------------------------------------------------------------------------------------
FLOW = lm.FlowKey(lm.ip("10.0.0.1"), lm.ip("10.0.1.2"), 6, 1234, 80)
# src(32) dst(32) proto(8) sport(16) dport(16) = 13 bytes, written out by hand
FLOW_BYTES = bytes.fromhex("0a0000010a0001020604d20050")


def test_ecmp_variants_by_hand() -> None:
    rev = bytes.fromhex("005004d2060a0001020a000001")
    for n in (1, 2, 3, 4, 7, 64):
        assert lm.ecmp_member(FLOW, n, 0x10) == lm.crc32(b"\x00\x10" + FLOW_BYTES) % n
        assert lm.ecmp_member(FLOW, n, 0x11) == lm.crc32(b"\x00\x11" + rev) % n
        assert lm.ecmp_member(FLOW, n, 0x12) == lm.crc16_arc(b"\x00\x12" + FLOW_BYTES) % n
        assert lm.ecmp_member(FLOW, n, 0x13) == lm.crc16_arc(b"\x00\x13" + rev) % n


def test_crc16_variant_ignores_the_leading_zero_seed_byte() -> None:
    # CRC-16/ARC has init 0, so leading zero bytes do not change it: seed 0x0002 = 00 02
    assert lm.ecmp_member(FLOW, 4, 2) == lm.crc16_arc(b"\x02" + FLOW_BYTES) % 4


def test_ecmp_is_per_flow_and_spreads() -> None:
    assert len({lm.ecmp_member(FLOW, 4, 7) for _ in range(10)}) == 1
    flows = [lm.FlowKey(lm.ip("10.0.0.1"), lm.ip("10.0.1.2"), 17, p, 4791) for p in range(400)]
    for seed in (0, 1):  # the crc32 variants
        counts = np.bincount([lm.ecmp_member(f, 4, seed) for f in flows], minlength=4)
        assert counts.min() > 60, (seed, counts)


def test_crc16_variant_spreads_consecutive_ports_badly() -> None:
    """Why crc32 is variant 0: CRC-16/ARC mod 4 uses 2 of 4 members for sports 0..399."""
    flows = [lm.FlowKey(lm.ip("10.0.0.1"), lm.ip("10.0.1.2"), 17, p, 4791) for p in range(400)]
    counts = np.bincount([lm.ecmp_member(f, 4, 2) for f in flows], minlength=4)
    assert sorted(counts.tolist()) == [0, 0, 200, 200]


def _tier2_max_share(seed1: int, seed2: int, n: int) -> float:
    """Of the flows tier 1 sends to member 0, the largest fraction tier 2 sends to one member."""
    rng = random.Random(11)
    flows = [
        lm.FlowKey(rng.getrandbits(32), rng.getrandbits(32), 17, rng.getrandbits(16), 4791)
        for _ in range(6000)
    ]
    sub = [f for f in flows if lm.ecmp_member(f, n, seed1) == 0]
    counts = np.bincount([lm.ecmp_member(f, n, seed2) for f in sub], minlength=n)
    return float(counts.max()) / len(sub)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_same_variant_polarises(n: int) -> None:
    """Why variants: seeds 1 and 5 share variant 1, so tier 2 repeats tier 1's choice."""
    assert _tier2_max_share(1, 5, n) == 1.0


@pytest.mark.parametrize("n", [2, 3, 4, 8])
@pytest.mark.parametrize(("s1", "s2"), [(0, 1), (0, 2), (1, 2), (2, 3)])
def test_different_variants_decorrelate_tiers(n: int, s1: int, s2: int) -> None:
    assert _tier2_max_share(s1, s2, n) < 1 / n + 0.05


# ---- flowlet ---------------------------------------------------------------------------------
def test_flowlet_slot_is_crc32_mod_slots() -> None:
    assert lm.flowlet_slot(FLOW) == lm.crc32(FLOW_BYTES) % lm.FLOWLET_SLOTS


def test_flowlet_hash_includes_the_id() -> None:
    fwd = b"\x00\x00" + FLOW_BYTES + b"\x00\x03"
    assert lm.flowlet_hash_member(FLOW, 3, 5, 0) == lm.crc32(fwd) % 5
    rev = bytes.fromhex("0003005004d2060a0001020a000001")
    assert lm.flowlet_hash_member(FLOW, 3, 5, 3) == lm.crc16_arc(b"\x00\x03" + rev) % 5


def test_flowlet_keeps_member_until_gap_exceeds_timeout() -> None:
    st = lm.FlowletState()
    n, seed, timeout = 4, 5, 100
    slot = lm.flowlet_slot(FLOW)

    def expected(fid: int) -> int:
        return lm.flowlet_hash_member(FLOW, fid, n, seed)

    # first packet at t=1000 > timeout since last=0: flowlet 1
    assert lm.flowlet_member(FLOW, 1000, n, seed, timeout, st) == expected(1)
    assert st.flowlet_id[slot] == 1
    # gaps <= timeout (including exactly the timeout) keep flowlet 1, read back each packet
    for t in (1050, 1150, 1250):
        assert lm.flowlet_member(FLOW, t, n, seed, timeout, st) == expected(1)
    assert st.flowlet_id[slot] == 1
    # gap 101 > 100: new flowlet 2, and the packets after it stay on flowlet 2
    assert lm.flowlet_member(FLOW, 1351, n, seed, timeout, st) == expected(2)
    assert lm.flowlet_member(FLOW, 1360, n, seed, timeout, st) == expected(2)
    assert st.flowlet_id[slot] == 2 and st.last_ts[slot] == 1360


def test_flowlet_moves_between_members_over_flowlets() -> None:
    st = lm.FlowletState()
    members = [lm.flowlet_member(FLOW, 1000 + 1000 * k, 4, 0, 100, st) for k in range(20)]
    assert len(set(members)) > 1


def test_flowlet_early_packets_stay_on_flowlet_zero() -> None:
    st = lm.FlowletState()
    # now - 0 = 50 <= timeout: no new flowlet yet
    assert lm.flowlet_member(FLOW, 50, 4, 0, 100, st) == lm.flowlet_hash_member(FLOW, 0, 4, 0)


# ---- random ----------------------------------------------------------------------------------
def test_random_member_range() -> None:
    rng = random.Random(3)
    picks = [lm.random_member(3, rng) for _ in range(300)]
    assert set(picks) == {0, 1, 2}


# ---- destination rotation --------------------------------------------------------------------
def test_rotation_cycles_per_destination() -> None:
    st = lm.RotationState()
    assert [lm.rotation_member(7, 3, st) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    # another destination has its own counter
    assert [lm.rotation_member(8, 3, st) for _ in range(2)] == [0, 1]
    assert lm.rotation_member(7, 3, st) == 1
    assert st.next_member == {7: 2, 8: 2}


def test_rotation_group_shrink_restarts_at_zero() -> None:
    st = lm.RotationState()
    assert [lm.rotation_member(0, 4, st) for _ in range(3)] == [0, 1, 2]
    # stored next member is 3; the group shrinks to 2 members
    assert [lm.rotation_member(0, 2, st) for _ in range(3)] == [0, 1, 0]


# ---- Whack-a-Mole ----------------------------------------------------------------------------
def test_bit_reverse() -> None:
    assert lm.bit_reverse(0b001, 3) == 0b100
    assert lm.bit_reverse(0b110, 3) == 0b011
    assert lm.bit_reverse(1, 16) == 0x8000


def test_wam_slot_unshuffled_is_van_der_corput() -> None:
    assert [lm.wam_slot(j, 3, 0, 1) for j in range(8)] == [0, 4, 2, 6, 1, 5, 3, 7]


def test_wam_slot_edge_widths() -> None:
    assert {lm.wam_slot(j, 0, 5, 3) for j in range(10)} == {0}
    slots = [lm.wam_slot(j, 16, 0, 1) for j in range(4)]
    assert slots == [0, 0x8000, 0x4000, 0xC000]
    with pytest.raises(ValueError):
        lm.wam_slot(0, 17, 0, 1)


@pytest.mark.parametrize("log2_m", [1, 4, 8, 16])
@pytest.mark.parametrize(("a", "b"), [(0, 1), (5, 3), (1000, 40001)])
def test_wam_slot_is_a_permutation_over_a_period(log2_m: int, a: int, b: int) -> None:
    m = 1 << log2_m
    start = 777
    assert sorted(lm.wam_slot(j & 0xFFFF, log2_m, a, b) for j in range(start, start + m)) == list(
        range(m)
    )


def test_balls_from_weights() -> None:
    assert lm.balls_from_weights([1, 1, 1, 1], 16) == [4, 4, 4, 4]
    assert lm.balls_from_weights([3, 1], 256) == [192, 64]
    assert lm.balls_from_weights([5, 2, 1], 256) == [160, 64, 32]
    assert sum(lm.balls_from_weights([1, 1, 1], 16)) == 16
    assert lm.ball_ranges([4, 0, 12]) == [(0, 3, 0), (4, 15, 2)]


def _max_window_deviation(
    seq: np.ndarray, shares: np.ndarray, n_members: int, max_len: int, starts: int
) -> float:
    """Largest |count - share| over all windows [s, s+w) with s < starts and 1 <= w <= max_len.

    ``shares[t, k]`` is member k's expected fraction for packet t (balls/m at that time).
    """
    worst = 0.0
    for k in range(n_members):
        cnt = np.concatenate(([0], np.cumsum(seq == k)))
        exp = np.concatenate(([0.0], np.cumsum(shares[:, k])))
        for w in range(1, max_len + 1):
            dev = (cnt[w : w + starts] - cnt[:starts]) - (exp[w : w + starts] - exp[:starts])
            worst = max(worst, float(np.abs(dev).max()))
    return worst


PROFILES = [[1, 1, 1, 1], [3, 1], [5, 2, 1], [1, 2, 3, 4, 5, 6, 7, 8]]
SEEDS = [(0, 1), (37, 5), (12345, 40503)]


@pytest.mark.parametrize("weights", PROFILES, ids=lambda w: ":".join(map(str, w)))
@pytest.mark.parametrize(("a", "b"), SEEDS)
@pytest.mark.parametrize("log2_m", [4, 8])
def test_wam_full_period_exact_and_windows_within_log2m(
    weights: list[int], a: int, b: int, log2_m: int
) -> None:
    m = 1 << log2_m
    balls = lm.balls_from_weights(weights, m)
    group = lm.WamGroup(log2_m, a, b, balls, j=4242)
    seq = np.array(lm.wam_sequence(group, 5 * m))
    n = len(weights)
    # exact weighted share over every full period of m consecutive packets
    for s in range(m):
        counts = np.bincount(seq[s : s + m], minlength=n)
        assert counts.tolist() == balls
    shares = np.tile(np.array(balls, dtype=float) / m, (len(seq), 1))
    assert _max_window_deviation(seq, shares, n, 4 * m, m) <= log2_m


@pytest.mark.parametrize(
    ("before", "after"), [([1, 1, 1, 1], [3, 1, 0, 0]), ([5, 2, 1], [1, 1, 6]), ([3, 1], [1, 3])]
)
def test_wam_after_reweight(before: list[int], after: list[int]) -> None:
    log2_m = 8
    m = 1 << log2_m
    n = max(len(before), len(after))
    b0 = lm.balls_from_weights(before, m) + [0] * (n - len(before))
    b1 = lm.balls_from_weights(after, m) + [0] * (n - len(after))
    group = lm.WamGroup(log2_m, 91, 7, b0, j=1000)
    pre = lm.wam_sequence(group, m + 37)  # reweight mid-period
    group.reweight(b1)
    post = np.array(lm.wam_sequence(group, 5 * m))
    # windows wholly after the reweight: exact per period, within log2(m) on every window
    for s in range(m):
        assert np.bincount(post[s : s + m], minlength=n).tolist() == b1
    shares_post = np.tile(np.array(b1, dtype=float) / m, (len(post), 1))
    assert _max_window_deviation(post, shares_post, n, 4 * m, m) <= log2_m
    # windows straddling the reweight, against the per-packet share in force
    seq = np.concatenate((np.array(pre), post))
    shares = np.vstack(
        (
            np.tile(np.array(b0, dtype=float) / m, (len(pre), 1)),
            np.tile(np.array(b1, dtype=float) / m, (len(post), 1)),
        )
    )
    straddle = _max_window_deviation(seq[m:], shares[m:], n, 4 * m, 37)
    assert straddle <= 2 * log2_m


def test_wam_counter_wraps_at_16_bits() -> None:
    group = lm.WamGroup(4, 3, 5, [4, 4, 4, 4], j=0xFFFE)
    seq = lm.wam_sequence(group, 32)
    assert group.j == 30
    for s in range(16):
        assert sorted(np.bincount(seq[s : s + 16], minlength=4).tolist()) == [4, 4, 4, 4]


def test_wam_unmapped_slot_raises() -> None:
    group = lm.WamGroup(2, 0, 1, [4])
    group.balls = [2, 0]  # bypass the check: slots 2, 3 have no range
    with pytest.raises(LookupError):
        [group.member_of_slot(s) for s in range(4)]


def test_wam_group_rejects_wrong_ball_total() -> None:
    with pytest.raises(ValueError):
        lm.WamGroup(3, 0, 1, [4, 3])


# ---- the model's constants match the P4 --------------------------------------------------------
def test_constants_match_defines_p4() -> None:
    text = CONTRACT.read_text() + DEFINES.read_text()
    defines = {k: int(v) for k, v in re.findall(r"#define\s+(\w+)\s+(\d+)", text)}
    consts = {k: int(v, 0) for k, v in re.findall(r"const\s+bit<\d+>\s+(\w+)\s*=\s*(\w+);", text)}
    for name in ("LB_MAX_GROUPS", "LB_MAX_MEMBERS", "FLOWLET_SLOTS", "ROT_SLOTS", "WAM_L_MAX"):
        assert defines[name] == getattr(lm, name), name
    assert defines["LB_MEMBER_CTR_SIZE"] == lm.LB_MAX_GROUPS * lm.LB_MAX_MEMBERS
    for name, value in consts.items():
        if name.startswith(("SCHEME_", "DROP_")) and hasattr(lm, name):
            assert getattr(lm, name) == value, name
    assert consts["CPU_PORT"] == lm.CPU_PORT
    assert math.log2(lm.LB_MAX_MEMBERS).is_integer()


def test_wam_counter_per_dst_id() -> None:
    """next_member(dst_id) reads and advances that destination's cell (missing cells read 0),
    as fabric.p4's wam_counter[dst_id]; each destination's sequence is the one-counter
    sequence, whatever the interleaving."""
    solo = lm.wam_sequence(lm.WamGroup(5, 9, 7, [16, 8, 8]), 64)
    group = lm.WamGroup(5, 9, 7, [16, 8, 8])
    got: dict[int, list[int]] = {3: [], 11: []}
    order = [3, 11, 11, 3, 3, 3, 11] * 40
    for d in order:
        got[d].append(group.next_member(d))
    for d, seq in got.items():
        assert seq[:64] == solo[: len(seq[:64])]
        assert group.counters[d] == order.count(d)
    assert group.j == 0  # the single-cell counter is untouched
