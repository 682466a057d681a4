"""The scapy layers and the agent's struct layouts describe the same bytes."""

from __future__ import annotations

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from traffic.packet import (
    ACK,
    F_ACK,
    F_RETX,
    HDR,
    ROCEV2_PORT,
    SEQ_OFFSET,
    VERSION,
    CollectiveAck,
    CollectiveHeader,
    entropy_port,
)


def test_scapy_layer_matches_struct_layout():
    h = CollectiveHeader(flags="RETX", job=7, src_rank=3, dst_rank=9, step=4, entropy=2,
                         flow=123456, seq=0xABCDEF, npkts=99, length=1400)
    raw = bytes(h)
    assert raw == HDR.pack(VERSION, F_RETX, 7, 3, 9, 4, 2, 123456, 0xABCDEF, 99, 1400, 0)
    assert raw[SEQ_OFFSET:SEQ_OFFSET + 4] == (0xABCDEF).to_bytes(4, "big")


def test_udp_dispatch_and_ack_layer():
    pkt = (Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=50000, dport=ROCEV2_PORT)
           / CollectiveHeader(flags="ACK", flow=5) / CollectiveAck(cum=10, base=12, sack=5))
    back = Ether(bytes(pkt))
    assert back[CollectiveHeader].flow == 5
    assert back[CollectiveAck].cum == 10 and back[CollectiveAck].sack == 5
    assert bytes(back[CollectiveAck])[:ACK.size] == ACK.pack(10, 12, 5)
    assert int(back[CollectiveHeader].flags) == F_ACK


def test_entropy_ports_spread_a_flow():
    ports = {entropy_port(1, 0, 42, qp) for qp in range(8)}
    assert len(ports) == 8
    assert all(49152 <= p <= 65535 for p in ports)
    assert entropy_port(1, 0, 42, 3) == entropy_port(1, 0, 42, 3)
