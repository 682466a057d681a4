"""fabric.p4 on p4switch: ECMP and flowlet member selection.

Expected members are computed here from hash input bytes built by hand (struct, MSB first) with
an independent bit-at-a-time CRC-16/ARC and zlib's CRC-32 -- not with model/lb.py.
The model is used only as a second, differential check over many random packets.
"""

from __future__ import annotations

import random
import socket
import struct
import zlib

import pytest
from crc_reference import crc16_arc
from fabric_harness import FLOWLET_SLOTS, Fabric, fast_pkt, ip_int, tcp_pkt, udp_pkt
from scapy.layers.inet import ICMP, IP
from scapy.layers.l2 import Ether

from model import lb as lm


def crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def test_independent_crcs_known_answers() -> None:
    assert crc16_arc(b"123456789") == 0xBB3D
    assert crc32(b"123456789") == 0xCBF43926


def five_tuple(src: str, dst: str, proto: int, sport: int, dport: int) -> tuple[bytes, bytes]:
    """(forward, reversed) 13-byte field layouts: src dst proto sport dport / dport sport proto
    dst src."""
    s, d = socket.inet_aton(src), socket.inet_aton(dst)
    fwd = s + d + struct.pack(">BHH", proto, sport, dport)
    rev = struct.pack(">HHB", dport, sport, proto) + d + s
    return fwd, rev


def ecmp_expected(seed: int, n: int, src: str, dst: str, proto: int, sport: int,
                  dport: int) -> int:
    fwd, rev = five_tuple(src, dst, proto, sport, dport)
    variant = seed & 3
    data = struct.pack(">H", seed) + (fwd if variant in (0, 2) else rev)
    h = crc32(data) if variant < 2 else crc16_arc(data)
    return h % n


def flowlet_expected(seed: int, n: int, fid: int, src: str, dst: str, proto: int, sport: int,
                     dport: int) -> int:
    fwd, rev = five_tuple(src, dst, proto, sport, dport)
    variant = seed & 3
    idb = struct.pack(">H", fid)
    data = struct.pack(">H", seed) + (fwd + idb if variant in (0, 2) else idb + rev)
    h = crc32(data) if variant < 2 else crc16_arc(data)
    return h % n


def flow_slot(src: str, dst: str, proto: int, sport: int, dport: int) -> int:
    return crc32(five_tuple(src, dst, proto, sport, dport)[0]) % FLOWLET_SLOTS


def _ecmp_fabric(n: int, seed: int, gid: int = 5) -> Fabric:
    f = Fabric()
    f.route_group("10.0.0.0", 8, gid)
    f.group_ecmp(gid, n, seed)
    f.members(gid, n)
    return f


# ---- ECMP ------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0x0000, 0x1234, 0x0001, 0xABCD, 0x0002, 0x5556, 0x0003, 0xFFFF])
@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_ecmp_member_is_the_hand_computed_crc(seed: int, n: int) -> None:
    f = _ecmp_fabric(n, seed)
    rng = random.Random(seed * 31 + n)
    for i in range(12):
        src = f"10.1.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        dst = f"10.2.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        sport, dport = rng.randrange(65536), rng.randrange(65536)
        if i % 2:
            pkt, proto = udp_pkt(src=src, dst=dst, sport=sport, dport=dport), 17
        else:
            pkt, proto = tcp_pkt(src=src, dst=dst, sport=sport, dport=dport), 6
        assert f.member(pkt) == ecmp_expected(seed, n, src, dst, proto, sport, dport), (i, src)


def test_ecmp_crc16_known_values_written_out() -> None:
    """Two fully hand-written CRC-16/ARC inputs (15 bytes each) and their residues."""
    data = bytes.fromhex("0002" "0a000001" "0a000102" "11" "04d2" "12b7")
    rev = bytes.fromhex("0003" "12b7" "04d2" "11" "0a000102" "0a000001")
    for seed, raw in ((2, data), (3, rev)):
        f = _ecmp_fabric(4, seed)
        got = f.member(udp_pkt(src="10.0.0.1", dst="10.0.1.2", sport=1234, dport=4791))
        assert got == crc16_arc(raw) % 4


def test_ecmp_without_l4_header_hashes_ports_as_zero() -> None:
    f = _ecmp_fabric(7, 0x40)
    for k in range(20):
        src = f"10.1.0.{k + 1}"
        pkt = bytes(Ether() / IP(src=src, dst="10.2.0.5") / ICMP())
        assert f.member(pkt) == ecmp_expected(0x40, 7, src, "10.2.0.5", 1, 0, 0)


def test_ecmp_non_first_fragment_hashes_ports_as_zero() -> None:
    """A UDP non-first fragment has no L4 header: the parser skips it, ports hash as 0."""
    f = _ecmp_fabric(7, 0x41)
    for k in range(20):
        src = f"10.1.1.{k + 1}"
        pkt = bytes(Ether() / IP(src=src, dst="10.2.0.5", proto=17, frag=100)
                    / (b"\x12\x34\x56\x78" + b"x" * 20))
        assert f.member(pkt) == ecmp_expected(0x41, 7, src, "10.2.0.5", 17, 0, 0)


def test_ecmp_is_per_flow_and_uses_all_members() -> None:
    f = _ecmp_fabric(4, 0x10)
    seen = set()
    for sport in range(64):
        first = f.member(udp_pkt(sport=sport * 7919 % 65536))
        for _ in range(3):
            assert f.member(udp_pkt(sport=sport * 7919 % 65536)) == first
        seen.add(first)
    assert seen == {0, 1, 2, 3}


def _members_for(seed: int, flows: list[tuple[int, int]], n: int = 4) -> list[int]:
    f = _ecmp_fabric(n, seed)
    return [f.member(fast_pkt(src, ip_int("10.2.0.1"), sp)) for src, sp in flows]


def test_seed_variants_decorrelate_but_same_variant_polarises() -> None:
    """README: within one variant another seed only relabels 2^k members (CRC linearity);
    a different seed[1:0] gives an independent-looking assignment."""
    rng = random.Random(7)
    flows = [(rng.randrange(1 << 32), rng.randrange(65536)) for _ in range(400)]
    base = _members_for(0x0000, flows)
    same_variant = _members_for(0x7A5C, flows)  # seed[1:0] = 0 too
    pairs = set(zip(base, same_variant, strict=True))
    # a relabelling: every base member maps to exactly one other member
    assert len(pairs) == 4
    for variant_seed in (0x0001, 0x0002, 0x0003):
        other = _members_for(variant_seed, flows)
        joint: dict[tuple[int, int], int] = {}
        for p in zip(base, other, strict=True):
            joint[p] = joint.get(p, 0) + 1
        assert len(joint) == 16, variant_seed  # every (member, member) pair occurs
        agree = sum(a == b for a, b in zip(base, other, strict=True))
        assert 40 < agree < 160, (variant_seed, agree)  # ~100 expected if independent


def test_ecmp_member_counter_indexes_group_times_64() -> None:
    f = _ecmp_fabric(3, 0x20, gid=9)
    counts = [0, 0, 0]
    for sport in range(60):
        counts[f.member(udp_pkt(sport=sport))] += 1
    size = len(udp_pkt())
    for k in range(3):
        assert f.p.counter_read("MyIngress.lb_member_ctr", 9 * 64 + k) == (counts[k],
                                                                           counts[k] * size)


def test_ecmp_differential_against_lb_model() -> None:
    """Many random packets, seeds and group sizes: the P4 and the Python model agree."""
    rng = random.Random(2024)
    f = _ecmp_fabric(64, 0)  # lb_member entries 0..63; lb_group is modified per packet
    for i in range(1500):
        seed = rng.randrange(65536)
        n = rng.choice([1, 2, 3, 4, 5, 8, 16, 63])
        f.group_ecmp(5, n, seed, modify=True)
        src = rng.randrange(1 << 32)
        dst = (10 << 24) | rng.randrange(1 << 24)
        sp, dp = rng.randrange(65536), rng.randrange(65536)
        proto = rng.choice([6, 17])
        model = lm.ecmp_member(lm.FlowKey(src, dst, proto, sp, dp), n, seed)
        assert f.member(fast_pkt(src, dst, sp, dp, proto=proto)) == model, i


# ---- flowlet ---------------------------------------------------------------------------------
FL = dict(src="10.1.0.7", dst="10.2.0.9", proto=17, sport=5555, dport=4791)


def _flowlet_fabric(n: int, seed: int, timeout: int) -> Fabric:
    f = Fabric()
    f.route_group("10.2.0.0", 16, 3)
    f.group_flowlet(3, n, seed, timeout)
    f.members(3, n)
    return f


def _fl_pkt() -> bytes:
    return udp_pkt(src=FL["src"], dst=FL["dst"], sport=FL["sport"], dport=FL["dport"])


@pytest.mark.parametrize("seed", [0x0100, 0x0101, 0x0102, 0x0103])
def test_flowlet_stays_within_a_flowlet_and_moves_after_a_gap(seed: int) -> None:
    timeout = 500
    f = _flowlet_fabric(8, seed, timeout)
    slot = flow_slot(**FL)
    t = 1_000_000  # up longer than the timeout: the first packet starts flowlet 1
    ids_seen = []
    for fid in range(1, 9):
        expected = flowlet_expected(seed, 8, fid, **FL)
        # a burst with gaps up to exactly the timeout stays on one member, one flowlet id
        for gap in (0, 1, 200, timeout, timeout, 3):
            t += gap
            assert f.member(_fl_pkt(), now=t) == expected, (fid, gap)
            assert f.reg("MyIngress.flowlet_id", slot) == fid
            assert f.reg("MyIngress.flowlet_last_ts", slot) == t
        ids_seen.append(expected)
        t += timeout + 1  # the gap is exceeded: the next packet starts flowlet fid + 1
    assert len(set(ids_seen)) > 1  # the flow did move between members


def test_flowlet_first_packet_of_an_unused_slot() -> None:
    """last = 0 in a never-used slot: before now > timeout the flow stays on flowlet 0."""
    f = _flowlet_fabric(4, 0x0200, 1000)
    slot = flow_slot(**FL)
    assert f.member(_fl_pkt(), now=1000) == flowlet_expected(0x0200, 4, 0, **FL)
    assert f.reg("MyIngress.flowlet_id", slot) == 0
    assert f.member(_fl_pkt(), now=2001) == flowlet_expected(0x0200, 4, 1, **FL)
    assert f.reg("MyIngress.flowlet_id", slot) == 1


def test_flowlet_id_written_by_controller_is_used() -> None:
    f = _flowlet_fabric(16, 0x0300, 100)
    slot = flow_slot(**FL)
    f.p.register_write("MyIngress.flowlet_id", slot, 0xFFFF)
    f.p.register_write("MyIngress.flowlet_last_ts", slot, 5_000)
    assert f.member(_fl_pkt(), now=5_050) == flowlet_expected(0x0300, 16, 0xFFFF, **FL)
    # the id wraps at 16 bits
    assert f.member(_fl_pkt(), now=5_200) == flowlet_expected(0x0300, 16, 0, **FL)
    assert f.reg("MyIngress.flowlet_id", slot) == 0


def test_flowlet_flows_are_independent() -> None:
    f = _flowlet_fabric(4, 0x0400, 50)
    other = dict(FL, sport=6666)
    assert flow_slot(**other) != flow_slot(**FL)
    f.member(_fl_pkt(), now=10_000)
    f.member(udp_pkt(src=other["src"], dst=other["dst"], sport=6666, dport=4791), now=10_010)
    # a long gap for FL only: other's id is untouched
    f.member(_fl_pkt(), now=20_000)
    assert f.reg("MyIngress.flowlet_id", flow_slot(**FL)) == 2
    assert f.reg("MyIngress.flowlet_id", flow_slot(**other)) == 1


def test_flowlet_differential_against_lb_model() -> None:
    rng = random.Random(99)
    n, seed, timeout = 5, 0x0777, 40
    f = _flowlet_fabric(n, seed, timeout)
    state = lm.FlowletState()
    flows = [(lm.ip(f"10.1.0.{i + 1}"), lm.ip("10.2.0.1"), 17, 1000 + i, 4791) for i in range(12)]
    t = 100_000
    for _ in range(600):
        t += rng.choice([0, 1, 5, 20, 39, 40, 41, 90])
        src, dst, proto, sp, dp = rng.choice(flows)
        expected = lm.flowlet_member(lm.FlowKey(src, dst, proto, sp, dp), t, n, seed, timeout,
                                     state)
        assert f.member(fast_pkt(src, dst, sp, dp), now=t) == expected
