"""fabric.p4 on p4switch: the per-packet schemes -- random spraying, destination rotation and
Whack-a-Mole (exact share per period, every window within log2(m) of its share)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from fabric_harness import DROP_LB_MEMBER_MISS, Fabric, fast_pkt, ip_int

from model import lb as lm

DST = ip_int("10.2.0.1")
PKT = fast_pkt(ip_int("10.1.0.1"), DST)


# ---- random ----------------------------------------------------------------------------------
def _random_fabric(n: int, seed: int | None) -> Fabric:
    f = Fabric(seed=seed)
    f.route_group("10.2.0.0", 16, 1)
    f.group_random(1, n)
    f.members(1, n)
    return f


def test_random_uses_all_members_roughly_uniformly() -> None:
    n, count = 4, 4000
    f = _random_fabric(n, seed=11)
    seq = [f.member(PKT) for _ in range(count)]
    hist = np.bincount(seq, minlength=n)
    assert len(hist) == n and hist.min() > 0
    chi2 = float(((hist - count / n) ** 2 / (count / n)).sum())
    assert chi2 < 30.0, hist  # 3 dof: p < 1e-6 under uniformity
    # per packet, not per flow: one flow is spread too, with many member changes
    changes = sum(a != b for a, b in zip(seq, seq[1:], strict=False))
    assert changes > count // 2


@pytest.mark.parametrize("n", [1, 3, 5])
def test_random_stays_in_range(n: int) -> None:
    f = _random_fabric(n, seed=3)
    seen = {f.member(PKT) for _ in range(300)}
    assert seen == set(range(n))


def test_random_is_reproducible_with_the_pipeline_seed() -> None:
    a = [_random_fabric(4, seed=5).member(PKT) for _ in range(1)]
    f1, f2, f3 = _random_fabric(4, 5), _random_fabric(4, 5), _random_fabric(4, 6)
    s1 = [f1.member(PKT) for _ in range(200)]
    s2 = [f2.member(PKT) for _ in range(200)]
    s3 = [f3.member(PKT) for _ in range(200)]
    assert s1 == s2 and s1[:1] == a
    assert s1 != s3


# ---- destination rotation --------------------------------------------------------------------
def _rotate_fabric(n: int) -> Fabric:
    f = Fabric()
    f.group_rotate(4, n)
    f.members(4, n)
    f.route_group("10.2.0.0", 16, 4, dst_id=100)
    f.route_group("10.3.0.0", 16, 4, dst_id=101)
    f.route_group("10.4.0.0", 16, 4, dst_id=100)  # shares dst_id 100 with 10.2/16
    return f


def test_rotation_cycles_in_order_per_destination() -> None:
    f = _rotate_fabric(3)
    a, b = fast_pkt(1, ip_int("10.2.0.1")), fast_pkt(1, ip_int("10.3.0.1"))
    got_a, got_b = [], []
    for i in range(12):
        got_a.append(f.member(a))
        if i % 3 == 0:  # interleave another destination at a different rate
            got_b.append(f.member(b))
    assert got_a == [0, 1, 2] * 4
    assert got_b == [0, 1, 2, 0]
    assert f.reg("MyIngress.rot_next", 100) == 0
    assert f.reg("MyIngress.rot_next", 101) == 1


def test_rotation_ignores_flows_and_shared_dst_id_shares_one_counter() -> None:
    f = _rotate_fabric(4)
    seq = [f.member(fast_pkt(ip_int(f"10.1.0.{i + 1}"), ip_int("10.2.0.1"), sport=i))
           for i in range(5)]
    assert seq == [0, 1, 2, 3, 0]
    assert f.member(fast_pkt(1, ip_int("10.4.0.1"))) == 1  # same dst_id 100
    assert f.member(fast_pkt(1, ip_int("10.2.0.1"))) == 2


def test_rotation_after_the_group_shrinks_restarts_at_zero() -> None:
    f = _rotate_fabric(4)
    pkt = fast_pkt(1, ip_int("10.2.0.1"))
    assert [f.member(pkt) for _ in range(3)] == [0, 1, 2]  # rot_next[100] = 3
    f.group_rotate(4, 2, modify=True)
    assert [f.member(pkt) for _ in range(5)] == [0, 1, 0, 1, 0]


def test_rotation_register_written_by_controller() -> None:
    f = _rotate_fabric(5)
    f.p.register_write("MyIngress.rot_next", 101, 3)
    assert [f.member(fast_pkt(1, ip_int("10.3.0.9"))) for _ in range(4)] == [3, 4, 0, 1]


# ---- Whack-a-Mole ----------------------------------------------------------------------------
def _wam_fabric(log2_m: int, a: int, b: int, balls: list[int], gid: int = 2) -> Fabric:
    """One WaM group ``gid`` for 10.2/16, whose route's dst_id (its wam_counter cell) is also
    ``gid``."""
    f = Fabric()
    f.route_group("10.2.0.0", 16, gid, dst_id=gid)
    f.group_wam(gid, log2_m, a, b, balls)
    return f


def _run(f: Fabric, count: int) -> np.ndarray:
    return np.array([f.member(PKT) for _ in range(count)], dtype=np.int64)


def max_window_deviation(seq: np.ndarray, balls: list[int], max_window: int) -> float:
    """max over members k, window lengths w <= max_window and all starts of
    |count_k(window) - w * c_k / m| (numpy prefix sums)."""
    m = sum(balls)
    worst = 0.0
    for k, c in enumerate(balls):
        prefix = np.concatenate(([0], np.cumsum(seq == k)))
        for w in range(1, min(max_window, len(seq)) + 1):
            counts = prefix[w:] - prefix[:-w]
            dev = np.abs(counts - w * c / m).max()
            worst = max(worst, float(dev))
    return worst


def check_wam_sequence(seq: np.ndarray, balls: list[int], log2_m: int) -> None:
    m = 1 << log2_m
    assert set(np.unique(seq)) <= {k for k, c in enumerate(balls) if c > 0}
    # exact weighted share over every period of m consecutive packets (any phase)
    for k, c in enumerate(balls):
        prefix = np.concatenate(([0], np.cumsum(seq == k)))
        assert np.all(prefix[m:] - prefix[:-m] == c), (k, c)
    # every window of length 1 .. 4m within log2(m) packets of its share
    assert max_window_deviation(seq, balls, 4 * m) <= log2_m


PROFILES = [
    # (weights, log2_m, a, b)
    ([1, 1, 1, 1], 6, 0, 1),
    ([1, 1, 1, 1], 6, 17, 45),
    ([3, 1], 8, 5, 3),
    ([5, 2, 1], 7, 100, 77),
    ([1, 1, 1], 6, 9, 21),  # 64 balls do not split evenly: 22/21/21
    ([7, 0, 2, 1], 5, 3, 31),  # a member without balls
]


@pytest.mark.parametrize("weights,log2_m,a,b", PROFILES)
def test_wam_exact_period_share_and_every_window_within_log2m(weights: list[int], log2_m: int,
                                                               a: int, b: int) -> None:
    m = 1 << log2_m
    balls = lm.balls_from_weights(weights, m)
    assert sum(balls) == m
    f = _wam_fabric(log2_m, a, b, balls)
    seq = _run(f, 6 * m)
    check_wam_sequence(seq, balls, log2_m)
    assert f.reg("MyIngress.wam_counter", 2) == 6 * m
    # the member counter saw exactly the share: 6 periods
    for k, c in enumerate(balls):
        assert f.member_ctr(2, k)[0] == 6 * c


def test_wam_share_by_hand_for_one_period() -> None:
    """m = 8, balls 5:2:1, a = 0, b = 1: slots are the 3-bit reversals 0 4 2 6 1 5 3 7,
    ranges [0,4]->0 [5,6]->1 [7]->2."""
    f = _wam_fabric(3, 0, 1, [5, 2, 1])
    assert _run(f, 16).tolist() == [0, 0, 0, 1, 0, 1, 0, 2] * 2


def test_wam_after_a_reweight_mid_period() -> None:
    log2_m = 7
    m = 1 << log2_m
    before = lm.balls_from_weights([1, 1, 1, 1], m)
    after = lm.balls_from_weights([5, 2, 1, 0], m)  # balls moved off member 3
    f = _wam_fabric(log2_m, 11, 13, before)
    check_wam_sequence(_run(f, 2 * m + 37), before, log2_m)  # stop mid-period
    f.wam_ranges(2, after)
    seq = _run(f, 6 * m)
    assert 3 not in seq
    check_wam_sequence(seq, after, log2_m)
    assert f.reg("MyIngress.wam_counter", 2) == 8 * m + 37  # the counter kept running


def test_wam_seed_shuffle_changes_order_not_property() -> None:
    log2_m = 6
    m = 1 << log2_m
    # 3:2:2 -> 28/18/18 balls: ranges not aligned to dyadic blocks, so every shuffle bit
    # matters (for a dyadic profile such as 3:1 only (a, b) mod 4 changes the sequence)
    balls = lm.balls_from_weights([3, 2, 2], m)
    shuffles = ((0, 1), (1, 1), (0, 3), (29, 55), (1000, 7))
    seqs = []
    for a, b in shuffles:
        seq = _run(_wam_fabric(log2_m, a, b, balls), 3 * m)
        check_wam_sequence(seq, balls, log2_m)
        seqs.append(tuple(seq.tolist()))
    assert len(set(seqs)) == len(shuffles)


def test_wam_counter_wraps_at_16_bits_without_breaking_the_period() -> None:
    log2_m = 5
    m = 1 << log2_m
    balls = lm.balls_from_weights([5, 2, 1], m)
    f = _wam_fabric(log2_m, 7, 9, balls)
    f.p.register_write("MyIngress.wam_counter", 2, 0x10000 - 2 * m - 5)
    seq = _run(f, 6 * m)
    check_wam_sequence(seq, balls, log2_m)
    assert f.reg("MyIngress.wam_counter", 2) == 4 * m - 5


def test_wam_edge_widths() -> None:
    # l = 0: one slot, every packet to the single member
    f = _wam_fabric(0, 5, 3, [0, 1])
    assert set(_run(f, 10).tolist()) == {1}
    # l = 16: m = 65536; the P4 agrees with the model, and windows are still tight
    balls = [20000, 30000, 15536]
    f = _wam_fabric(16, 1234, 4321, balls)
    group = lm.WamGroup(16, 1234, 4321, balls)
    seq = _run(f, 512)
    assert seq.tolist() == lm.wam_sequence(group, 512)
    assert max_window_deviation(seq, balls, 512) <= 16


def test_wam_slot_without_a_range_is_dropped_as_member_miss() -> None:
    f = _wam_fabric(3, 0, 1, [4, 4])
    f.wam_ranges(2, [4, 0])  # only slots 0..3 mapped now
    outs = [f.out_port(PKT) for _ in range(16)]
    assert outs.count(None) == 8
    assert f.drops()[DROP_LB_MEMBER_MISS] == 8


def test_wam_differential_against_lb_model() -> None:
    rng = random.Random(5)
    for _ in range(6):
        log2_m = rng.randrange(0, 11)
        m = 1 << log2_m
        weights = [rng.randrange(0, 6) for _ in range(rng.randrange(1, 6))]
        if sum(weights) == 0:
            weights[0] = 1
        balls = lm.balls_from_weights(weights, m)
        a, b = rng.randrange(65536), rng.randrange(65536) | 1
        f = _wam_fabric(log2_m, a, b, balls)
        group = lm.WamGroup(log2_m, a, b, balls)
        assert _run(f, 200).tolist() == lm.wam_sequence(group, 200), (log2_m, a, b, balls)


def test_wam_counter_is_per_destination_so_interleaved_destinations_each_spray() -> None:
    """Two destinations share one 2-member group and their packets alternate, as two senders'
    line-rate flows do at an edge switch. A counter per group would give each destination one
    member for as long as they alternate; per dst_id each gets its own bit-reversal sequence
    (both members in turn), and the model predicts every choice."""
    f = Fabric()
    f.route_group("10.2.0.0", 16, 2, dst_id=7)
    f.route_group("10.3.0.0", 16, 2, dst_id=8)
    f.group_wam(2, 8, 5, 3, [128, 128])
    ref = lm.WamGroup(8, 5, 3, [128, 128])
    to2 = fast_pkt(ip_int("10.1.0.1"), ip_int("10.2.0.1"))
    to3 = fast_pkt(ip_int("10.1.0.2"), ip_int("10.3.0.1"))
    seq2, seq3 = [], []
    for _ in range(256):
        seq2.append(f.member(to2))
        seq3.append(f.member(to3))
        assert seq2[-1] == ref.next_member(7) and seq3[-1] == ref.next_member(8)
    for seq in (seq2, seq3):
        # the group's two members in turn (a shared counter: one member for all 256)
        assert all(seq[i] != seq[i + 1] for i in range(len(seq) - 1))
        assert seq.count(0) == seq.count(1) == 128
    assert f.reg("MyIngress.wam_counter", 7) == f.reg("MyIngress.wam_counter", 8) == 256
    assert f.reg("MyIngress.wam_counter", 2) == 0  # the group id indexes nothing


def test_wam_routes_sharing_a_dst_id_share_one_counter() -> None:
    f = Fabric()
    f.route_group("10.2.0.0", 16, 2, dst_id=7)
    f.route_group("10.4.0.0", 16, 2, dst_id=7)
    f.group_wam(2, 3, 0, 1, [5, 2, 1])
    pkts = [fast_pkt(ip_int("10.1.0.1"), ip_int(d)) for d in ("10.2.0.1", "10.4.0.1")]
    # one sequence (the by-hand period of test_wam_share_by_hand_for_one_period) over both
    assert [f.member(pkts[i % 2]) for i in range(16)] == [0, 0, 0, 1, 0, 1, 0, 2] * 2
    assert f.reg("MyIngress.wam_counter", 7) == 16
