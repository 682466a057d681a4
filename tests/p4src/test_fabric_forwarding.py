"""fabric.p4 on p4switch: IPv4 forwarding, header rewrites, checksums, CPU port, counters and
every drop reason of p4src/README.md, with packets built and re-checked by scapy."""

from __future__ import annotations

import pytest
from fabric_harness import (
    CPU_PORT,
    DROP_BAD_CHECKSUM,
    DROP_LB_EMPTY,
    DROP_LB_GROUP_MISS,
    DROP_LB_MEMBER_MISS,
    DROP_NOT_IPV4,
    DROP_PARSER_ERROR,
    DROP_ROUTE_BLACKHOLE,
    DROP_ROUTE_MISS,
    DROP_TTL_EXPIRED,
    HOST_SMAC,
    Fabric,
    fast_pkt,
    ip_int,
    tcp_pkt,
    udp_pkt,
)
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether

from p4switch import LpmMatch

NHOP_MAC = 0x0A0B0C0D0E0F


def _fabric_with_route() -> Fabric:
    f = Fabric()
    f.route_nhop("10.2.0.0", 16, 7, NHOP_MAC)
    return f


def _ip_checksum_ok(raw: bytes) -> bool:
    """Let scapy recompute the IPv4 header checksum and compare with the one on the wire."""
    pkt = Ether(raw)
    got = pkt[IP].chksum
    del pkt[IP].chksum
    return Ether(bytes(pkt))[IP].chksum == got


# ---- forwarding ------------------------------------------------------------------------------
def test_direct_next_hop_rewrites_dmac_decrements_ttl_and_fixes_checksum() -> None:
    f = _fabric_with_route()
    sent = udp_pkt(dst="10.2.3.4", ttl=64, tos=0x28)
    res = f.send(sent)
    assert [o.port for o in res.outputs] == [7]
    out = Ether(res.outputs[0].data)
    assert out.dst == "0a:0b:0c:0d:0e:0f"
    assert out.src == HOST_SMAC  # no port_smac entry: source MAC kept
    assert out[IP].ttl == 63
    assert out[IP].tos == 0x28
    assert _ip_checksum_ok(res.outputs[0].data)
    assert out[IP].chksum != Ether(sent)[IP].chksum
    # everything but dst MAC, TTL and the IP checksum is unchanged, payload included
    exp = Ether(sent)
    exp.dst = "0a:0b:0c:0d:0e:0f"
    exp[IP].ttl = 63
    del exp[IP].chksum
    assert res.outputs[0].data == bytes(exp)


@pytest.mark.parametrize("ttl", [2, 3, 100, 255])
def test_ttl_and_checksum_for_many_ttls(ttl: int) -> None:
    f = _fabric_with_route()
    res = f.send(tcp_pkt(dst="10.2.0.9", ttl=ttl, id=0xBEEF, flags="DF"))
    out = Ether(res.outputs[0].data)
    assert out[IP].ttl == ttl - 1
    assert _ip_checksum_ok(res.outputs[0].data)
    # the L4 checksum needs no change (TTL is not in the pseudo-header): scapy agrees
    tcp_sum = out[TCP].chksum
    del out[TCP].chksum
    assert Ether(bytes(out))[TCP].chksum == tcp_sum


def test_port_smac_rewrites_source_mac() -> None:
    f = _fabric_with_route()
    f.port_smac(7, 0x02AA000000FF)
    out = Ether(f.send(udp_pkt(dst="10.2.0.1")).outputs[0].data)
    assert out.src == "02:aa:00:00:00:ff"
    f.port_smac(8, 0x02AA00000011)  # another port's entry does not apply
    out = Ether(f.send(udp_pkt(dst="10.2.0.1")).outputs[0].data)
    assert out.src == "02:aa:00:00:00:ff"


def test_longest_prefix_wins_and_lpm_direct_counter() -> None:
    f = Fabric()
    f.route_nhop("10.0.0.0", 8, 3, 0x1)
    f.route_nhop("10.2.0.0", 16, 4, 0x2)
    f.route_nhop("10.2.3.4", 32, 5, 0x3)
    assert f.out_port(udp_pkt(dst="10.9.9.9")) == 3
    assert f.out_port(udp_pkt(dst="10.2.9.9")) == 4
    assert f.out_port(udp_pkt(dst="10.2.9.8")) == 4
    assert f.out_port(udp_pkt(dst="10.2.3.4")) == 5
    hits = {e.match["hdr.ipv4.dstAddr"].prefix_len: e.packets
            for e in f.p.table_entries("MyIngress.ipv4_lpm")}
    assert hits == {8: 1, 16: 2, 32: 1}
    e16 = next(e for e in f.p.table_entries("MyIngress.ipv4_lpm")
               if e.match["hdr.ipv4.dstAddr"] == LpmMatch(ip_int("10.2.0.0"), 16))
    assert e16.bytes == 2 * len(udp_pkt(dst="10.2.9.9"))


def test_send_to_cpu_adds_packet_in_with_ingress_port_and_keeps_ttl() -> None:
    f = Fabric()
    f.route_cpu("10.3.0.0", 16)
    sent = udp_pkt(dst="10.3.0.1", ttl=9)
    res = f.send(sent, port=6)
    assert [o.port for o in res.outputs] == [CPU_PORT]
    data = res.outputs[0].data
    # packet_in: ingress_port (9 bits) + 7 pad bits, MSB first
    assert int.from_bytes(data[:2], "big") == 6 << 7
    assert data[2:] == sent  # TTL not decremented, nothing else touched


def test_packet_out_from_cpu_leaves_unchanged_on_its_port() -> None:
    f = Fabric()  # no routes at all: packet-out bypasses routing
    inner = udp_pkt(dst="10.9.0.1", ttl=1)  # TTL 1 would be dropped if it were routed
    hdr = (300 << 7).to_bytes(2, "big")
    res = f.send(hdr + inner, port=CPU_PORT)
    assert [(o.port, o.data) for o in res.outputs] == [(300, inner)]
    assert sum(f.drops()) == 0


def test_port_rx_tx_counters_packets_and_bytes() -> None:
    f = _fabric_with_route()
    a = udp_pkt(dst="10.2.0.1", payload=b"a" * 10)
    b = udp_pkt(dst="10.2.0.1", payload=b"b" * 50)
    f.send(a, port=2)
    f.send(b, port=2)
    f.send(a, port=3)
    f.send(udp_pkt(dst="10.99.0.1"), port=3)  # route miss: rx counted, no tx
    assert f.p.counter_read("MyIngress.port_rx_ctr", 2) == (2, len(a) + len(b))
    assert f.p.counter_read("MyIngress.port_rx_ctr", 3) == (2, len(a) + len(udp_pkt(dst="10.99.0.1")))
    assert f.p.counter_read("MyEgress.port_tx_ctr", 7) == (3, 2 * len(a) + len(b))
    assert f.p.counter_read("MyEgress.port_tx_ctr", 2) == (0, 0)
    assert f.p.counter_read("MyEgress.port_tx_ctr", 3) == (0, 0)


# ---- drops -----------------------------------------------------------------------------------
def _lb_fabric() -> Fabric:
    f = _fabric_with_route()
    f.route_blackhole("10.66.0.0", 16)
    f.route_group("10.70.0.0", 16, group_id=70)  # no lb_group entry: group miss
    f.route_group("10.71.0.0", 16, group_id=71)
    f.group_ecmp(71, 0)  # empty group
    f.route_group("10.72.0.0", 16, group_id=72)
    f.group_ecmp(72, 4)
    f.members(72, 3)  # member 3 missing
    return f


def _bad_version() -> bytes:
    p = Ether(udp_pkt(dst="10.2.0.1"))
    p[IP].version = 6
    del p[IP].chksum
    return bytes(p)


def _with_options() -> bytes:
    return udp_pkt(dst="10.2.0.1", options=b"\x01\x01\x01\x00")  # IHL 6


def _truncated_ip() -> bytes:
    return udp_pkt(dst="10.2.0.1")[: 14 + 12]


def _truncated_eth() -> bytes:
    return udp_pkt(dst="10.2.0.1")[:10]


def _bad_checksum() -> bytes:
    p = Ether(udp_pkt(dst="10.2.0.1"))
    p[IP].chksum ^= 0x0101
    return bytes(p)


def _arp() -> bytes:
    return bytes(Ether(src=HOST_SMAC, dst="ff:ff:ff:ff:ff:ff") / ARP(pdst="10.2.0.1"))


def _ipv6() -> bytes:
    return bytes(Ether(src=HOST_SMAC) / IPv6(dst="2001:db8::1") / UDP())


DROP_CASES = [
    ("bad_version", _bad_version, DROP_PARSER_ERROR),
    ("ip_options", _with_options, DROP_PARSER_ERROR),
    ("truncated_ip", _truncated_ip, DROP_PARSER_ERROR),
    ("truncated_eth", _truncated_eth, DROP_PARSER_ERROR),
    ("truncated_tcp", lambda: tcp_pkt(dst="10.2.0.1", payload=b"")[: 14 + 20 + 10],
     DROP_PARSER_ERROR),
    ("bad_checksum", _bad_checksum, DROP_BAD_CHECKSUM),
    ("arp", _arp, DROP_NOT_IPV4),
    ("ipv6", _ipv6, DROP_NOT_IPV4),
    ("ttl1", lambda: udp_pkt(dst="10.2.0.1", ttl=1), DROP_TTL_EXPIRED),
    ("ttl0", lambda: udp_pkt(dst="10.2.0.1", ttl=0), DROP_TTL_EXPIRED),
    ("ttl1_to_group", lambda: udp_pkt(dst="10.72.0.1", ttl=1), DROP_TTL_EXPIRED),
    ("route_miss", lambda: udp_pkt(dst="192.168.0.1"), DROP_ROUTE_MISS),
    ("blackhole", lambda: udp_pkt(dst="10.66.1.1"), DROP_ROUTE_BLACKHOLE),
    ("group_miss", lambda: udp_pkt(dst="10.70.0.1"), DROP_LB_GROUP_MISS),
    ("empty_group", lambda: udp_pkt(dst="10.71.0.1"), DROP_LB_EMPTY),
]


@pytest.mark.parametrize("name,build,reason", DROP_CASES, ids=[c[0] for c in DROP_CASES])
def test_each_drop_reason_is_counted_once(name: str, build, reason: int) -> None:
    f = _lb_fabric()
    data = build()
    res = f.send(data)
    assert res.outputs == []
    expected = [0] * 16
    expected[reason] = 1
    assert f.drops() == expected
    assert f.p.counter_read("MyIngress.drop_ctr", reason)[1] == len(data)
    assert f.p.counter_read("MyIngress.port_rx_ctr", 1)[0] == 1


def test_member_miss_is_counted_and_present_members_forward() -> None:
    f = _lb_fabric()
    got: dict[int | None, int] = {}
    for sport in range(200):
        port = f.out_port(udp_pkt(dst="10.72.0.1", sport=sport))
        got[port] = got.get(port, 0) + 1
    assert set(got) == {10, 11, 12, None}
    assert f.drops()[DROP_LB_MEMBER_MISS] == got[None]
    assert sum(f.drops()) == got[None]
    # lb_member_ctr counts only hits
    assert sum(f.member_ctr(72, k)[0] for k in range(4)) == 200 - got[None]
    assert f.member_ctr(72, 3) == (0, 0)


def test_drop_reason_zero_is_never_counted_on_forwarded_packets() -> None:
    f = _lb_fabric()
    for _ in range(5):
        f.send(udp_pkt(dst="10.2.0.1"))
    assert f.drops() == [0] * 16


def test_fast_packet_builder_matches_scapy() -> None:
    """The harness's struct-built frames are byte-identical to scapy's (checksums included)."""
    for src, dst, sp, dp in (("10.1.0.1", "10.2.0.1", 1000, 4791), ("1.2.3.4", "250.0.9.8", 0,
                                                                     65535)):
        want = Ether(udp_pkt(src=src, dst=dst, sport=sp, dport=dp, ttl=17))
        want[UDP].chksum = 0
        assert fast_pkt(ip_int(src), ip_int(dst), sp, dp, ttl=17) == bytes(want)
        want = Ether(tcp_pkt(src=src, dst=dst, sport=sp, dport=dp, payload=b"p" * 16))
        want[TCP].chksum = 0
        assert fast_pkt(ip_int(src), ip_int(dst), sp, dp, proto=6) == bytes(want)


def test_packet_out_is_not_rewritten_by_egress_or_the_checksum_update() -> None:
    """README: a packet-out leaves unchanged -- even on a port with a router source MAC and an
    ECN threshold, and even with a (deliberately) wrong IPv4 checksum."""
    f = Fabric()
    f.port_smac(300, 0x02AA000000FF)
    f.ecn_threshold(300, 0)
    good = udp_pkt(dst="10.9.0.1", tos=2)
    bad = Ether(good)
    bad[IP].chksum ^= 0x00FF
    for inner in (good, bytes(bad)):
        outs = f.through_queue((300 << 7).to_bytes(2, "big") + inner, deq_qdepth=40,
                               port=CPU_PORT)
        assert outs == [inner]
    assert f.reg("MyEgress.port_qdepth_max", 300) == 40
    assert f.p.counter_read("MyEgress.port_tx_ctr", 300)[0] == 2
    # a routed packet on the same port is still rewritten and marked
    f.route_nhop("10.2.0.0", 16, 300, NHOP_MAC)
    out = Ether(f.through_queue(udp_pkt(dst="10.2.0.1", tos=2), deq_qdepth=40)[0])
    assert out.src == "02:aa:00:00:00:ff" and out[IP].tos & 3 == 3
