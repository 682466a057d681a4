"""fabric.p4 on p4switch: controller operations on groups (failover, reweight, scheme change)
stay local to their group; egress queue-depth registers and ECN marking, driven through
ingress()/egress() with the queue's metadata."""

from __future__ import annotations

import math

from fabric_harness import MEMBER_PORT0, Fabric, fast_pkt, ip_int, member_mac, udp_pkt
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from model import lb as lm

FLOWS_A = [fast_pkt(ip_int(f"10.1.0.{i + 1}"), ip_int("10.2.0.1"), 1000 + i) for i in range(200)]
FLOWS_B = [fast_pkt(ip_int(f"10.1.1.{i + 1}"), ip_int("10.3.0.1"), 2000 + i) for i in range(200)]


def _two_groups() -> Fabric:
    """Group 1 (10.2/16) ECMP over 4 members on ports 10..13; group 2 (10.3/16) ECMP over 4
    members on ports 20..23."""
    f = Fabric()
    f.route_group("10.2.0.0", 16, 1)
    f.route_group("10.3.0.0", 16, 2)
    f.group_ecmp(1, 4, 0x0000)
    f.group_ecmp(2, 4, 0x0001)
    f.members(1, 4)
    f.members(2, 4, port0=20)
    return f


def test_ecmp_failover_removes_the_member_and_leaves_other_groups_alone() -> None:
    f = _two_groups()
    before_b = [f.out_port(p) for p in FLOWS_B]
    # member 2 (port 12) fails: indexes 0..2 become the live members 10, 11, 13; n = 3
    f.set_member(1, 2, MEMBER_PORT0 + 3, member_mac(3), modify=True)
    f.del_member(1, 3)
    f.group_ecmp(1, 3, 0x0000, modify=True)
    after_a = [f.out_port(p) for p in FLOWS_A]
    assert 12 not in after_a and None not in after_a
    assert set(after_a) == {10, 11, 13}
    assert [f.out_port(p) for p in FLOWS_B] == before_b
    assert sum(f.drops()) == 0


def test_scheme_change_is_one_lb_group_modify() -> None:
    f = _two_groups()
    before_b = [f.out_port(p) for p in FLOWS_B]
    f.group_rotate(1, 4, modify=True)
    assert [f.out_port(FLOWS_A[0]) for _ in range(6)] == [10, 11, 12, 13, 10, 11]
    f.group_random(1, 4, modify=True)
    assert {f.out_port(FLOWS_A[0]) for _ in range(100)} == {10, 11, 12, 13}
    f.group_ecmp(1, 4, 0x0000, modify=True)
    assert len({f.out_port(FLOWS_A[0]) for _ in range(10)}) == 1
    assert [f.out_port(p) for p in FLOWS_B] == before_b


def test_wam_reweight_of_one_group_does_not_disturb_another() -> None:
    """Two WaM groups; reweighting group 1 leaves group 2's sequence (counter, ranges) exactly
    as an undisturbed model predicts, and lb_member_ctr survives the rewrite."""
    f = Fabric()
    f.route_group("10.2.0.0", 16, 1, dst_id=1)
    f.route_group("10.3.0.0", 16, 2, dst_id=2)
    f.group_wam(1, 4, 3, 5, [4, 4, 4, 4])
    f.group_wam(2, 4, 9, 7, [8, 4, 4, 0], port0=20)
    ref2 = lm.WamGroup(4, 9, 7, [8, 4, 4, 0])
    a, b = FLOWS_A[0], FLOWS_B[0]
    for _ in range(20):
        f.out_port(a)
        assert f.out_port(b) - 20 == ref2.next_member()
    f.wam_ranges(1, [0, 8, 4, 4])  # move member 0's balls to member 1
    ctr0 = f.member_ctr(1, 0)
    got1 = []
    for _ in range(32):
        got1.append(f.out_port(a) - MEMBER_PORT0)
        assert f.out_port(b) - 20 == ref2.next_member()
    assert 0 not in got1 and got1.count(1) == 16
    assert f.member_ctr(1, 0) == ctr0  # kept, not reset by the rewrite
    assert f.member_ctr(1, 1)[0] == 5 + 16
    assert f.reg("MyIngress.wam_counter", 1) == 52
    assert f.reg("MyIngress.wam_counter", 2) == 52


# ---- egress: queue depth and ECN -------------------------------------------------------------
def _egress_fabric() -> Fabric:
    f = Fabric()
    f.route_nhop("10.2.0.0", 16, 7, 0x0A0000000007)
    return f


def test_queue_depth_registers_track_max_and_last() -> None:
    f = _egress_fabric()
    pkt = udp_pkt(dst="10.2.0.1")
    for depth in (3, 17, 5, 0):
        assert len(f.through_queue(pkt, deq_qdepth=depth)) == 1
        assert f.reg("MyEgress.port_qdepth_last", 7) == depth
    assert f.reg("MyEgress.port_qdepth_max", 7) == 17
    f.p.register_write("MyEgress.port_qdepth_max", 7, 0)  # the controller polls and clears
    f.through_queue(pkt, deq_qdepth=4)
    assert f.reg("MyEgress.port_qdepth_max", 7) == 4
    assert f.reg("MyEgress.port_qdepth_max", 8) == 0  # other ports untouched
    # process() reports empty queues: depth 0
    f.send(pkt)
    assert f.reg("MyEgress.port_qdepth_last", 7) == 0


def _ecn(data: bytes) -> int:
    return Ether(data)[IP].tos & 3


def _checksum_ok(data: bytes) -> bool:
    pkt = Ether(data)
    got = pkt[IP].chksum
    del pkt[IP].chksum
    return Ether(bytes(pkt))[IP].chksum == got


def test_ecn_marks_ect_packets_at_or_above_the_threshold() -> None:
    f = _egress_fabric()
    f.ecn_threshold(7, 10)
    ect0 = udp_pkt(dst="10.2.0.1", tos=0xB8 | 2)  # DSCP 46, ECT(0)
    ect1 = udp_pkt(dst="10.2.0.1", tos=1)
    not_ect = udp_pkt(dst="10.2.0.1", tos=0xB8)
    assert _ecn(f.through_queue(ect0, 9)[0]) == 2
    out = f.through_queue(ect0, 10)[0]
    assert _ecn(out) == 3 and Ether(out)[IP].tos >> 2 == 46
    assert _checksum_ok(out) and Ether(out)[IP].ttl == 63
    assert _ecn(f.through_queue(ect1, 50)[0]) == 3
    assert _ecn(f.through_queue(not_ect, 50)[0]) == 0  # Not-ECT is never marked
    ce = udp_pkt(dst="10.2.0.1", tos=3)
    assert _ecn(f.through_queue(ce, 0)[0]) == 3


def test_no_ecn_entry_means_no_marking() -> None:
    f = _egress_fabric()
    f.ecn_threshold(8, 1)  # another port
    out = f.through_queue(udp_pkt(dst="10.2.0.1", tos=2), 1000)[0]
    assert _ecn(out) == 2 and _checksum_ok(out)


def test_ecn_ramp_marks_with_probability_rising_from_kmin_to_kmax() -> None:
    """K_min 4, K_max 12: never at or below 4, always from 12, (depth - 4) / 8 between; 400
    packets per depth on a seeded pipeline, each fraction within 4 binomial sigmas."""
    f = _egress_fabric()
    f.ecn_ramp(7, 4, 12)
    pkt = udp_pkt(dst="10.2.0.1", tos=2)
    n = 400
    for depth in range(0, 16):
        marked = sum(_ecn(f.through_queue(pkt, depth)[0]) == 3 for _ in range(n))
        p = min(max((depth - 4) / 8, 0.0), 1.0)
        if p in (0.0, 1.0):
            assert marked == p * n, (depth, marked)
        else:
            assert abs(marked / n - p) <= 4 * math.sqrt(p * (1 - p) / n), (depth, marked)


def test_ecn_step_and_equal_ramp_ends_draw_no_random_number() -> None:
    """K_min = K_max installs the step action, which leaves random() alone: a run with the
    ramp off keeps every other random draw (spraying) where it was."""
    f = _egress_fabric()
    f.ecn_ramp(7, 9, 9)
    assert f.p.table_entries("MyEgress.ecn_config")[0].action == "MyEgress.set_ecn_threshold"
    state = f.p.rng.getstate()
    pkt = udp_pkt(dst="10.2.0.1", tos=2)
    assert [_ecn(f.through_queue(pkt, d)[0]) for d in (0, 8, 9, 30)] == [2, 2, 3, 3]
    assert f.p.rng.getstate() == state
