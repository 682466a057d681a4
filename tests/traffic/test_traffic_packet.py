"""The scapy layers and the agent's struct layouts describe the same bytes."""

from __future__ import annotations

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from model.entropy import entropy_port
from traffic.frames import FlowHeader, FrameCache, build_frame
from traffic.nexthop import Route
from traffic.packet import (
    ACK,
    F_ACK,
    F_RETX,
    HDR,
    ROCEV2_PORT,
    VERSION,
    CollectiveAck,
    CollectiveHeader,
)


def test_scapy_layer_matches_struct_layout():
    h = CollectiveHeader(flags="RETX", job=7, src_rank=3, dst_rank=9, step=4, entropy=2,
                         flow=123456, seq=0xABCDEF, npkts=99, length=1400)
    raw = bytes(h)
    assert raw == HDR.pack(VERSION, F_RETX, 7, 3, 9, 4, 2, 123456, 0xABCDEF, 99, 1400, 0)
    assert CollectiveHeader(raw).seq == 0xABCDEF


def test_patched_template_equals_scapy_built_frame():
    route = Route("eth0", "10.0.0.1", "02:00:00:00:00:01", "10.0.0.254", "02:00:00:00:00:fe")
    h = FlowHeader(job=3, src_rank=1, dst_rank=2, step=5, flow=77, npkts=10)
    cache = FrameCache()
    for length in (1400, 123):
        cache.prebuild(route, "10.0.1.9", length)
    for qp, seq, length, flags in [(0, 0, 1400, 0), (3, 9, 123, F_RETX), (1, 4, 1400, 0)]:
        sport = entropy_port(3, 1, 77, qp)
        got = cache.frame("10.0.1.9", h, sport, qp, seq, length, flags)
        assert bytes(got) == bytes(build_frame(route, "10.0.1.9", length, h, qp, seq, flags))
    assert len(cache) == 2
    pkt = Ether(bytes(got))
    assert pkt[Ether].dst == "02:00:00:00:00:fe" and pkt[IP].dst == "10.0.1.9"
    assert pkt[UDP].dport == ROCEV2_PORT and pkt[CollectiveHeader].seq == 4


def test_udp_dispatch_and_ack_layer():
    pkt = (Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=50000, dport=ROCEV2_PORT)
           / CollectiveHeader(flags="ACK", flow=5) / CollectiveAck(cum=10, base=12, sack=5, ce=4))
    back = Ether(bytes(pkt))
    assert back[CollectiveHeader].flow == 5
    assert back[CollectiveAck].cum == 10 and back[CollectiveAck].sack == 5
    assert bytes(back[CollectiveAck])[:ACK.size] == ACK.pack(10, 12, 5, 4)
    assert int(back[CollectiveHeader].flags) == F_ACK


def test_entropy_ports_spread_a_flow():
    ports = {entropy_port(1, 0, 42, qp) for qp in range(8)}
    assert len(ports) == 8
    assert all(49152 <= p <= 65535 for p in ports)
    assert entropy_port(1, 0, 42, 3) == entropy_port(1, 0, 42, 3)


def test_a_trimmed_packets_nack_keeps_its_trim_flag_on_the_wire():
    """The agent's raw ACK frames carry every flag of the ACK: a NACK of a trimmed packet
    must say so (F_TRIM), or its sender takes it for a reordering NACK and waits for a
    timeout."""
    from traffic.transport import Ack
    from traffic.wire import ACK_AT, HDR_AT

    route = Route("eth0", "10.0.0.1", "02:00:00:00:00:01", "10.0.0.254", "02:00:00:00:00:fe")
    cache = FrameCache()
    cache.prebuild_ack(route, "10.0.1.9")
    sent = Ack(3, 7, 0, nack=True, trimmed=True)
    f = bytes(cache.ack("10.0.1.9", 50000, 1, 0, 1, 77, sent.cum, sent.base, sent.sack,
                        sent.nack, sent.ce, sent.dup, sent.trimmed))
    flags = HDR.unpack_from(f, HDR_AT)[1]
    assert flags == sent.flags
    assert Ack.parse(flags, *ACK.unpack_from(f, ACK_AT)) == sent
