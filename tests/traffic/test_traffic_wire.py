"""The agent's struct-built frames are the scapy layers' bytes, and its hot path imports no
scapy (an agent process pays scapy's >1 s import otherwise)."""

from __future__ import annotations

import json
import subprocess
import sys

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from model.entropy import entropy_port
from traffic.frames import FlowHeader, build_ack_template, build_frame
from traffic.nexthop import Route
from traffic.packet import F_RETX, ROCEV2_PORT, CollectiveAck, CollectiveHeader

ROUTE = Route("eth0", "10.0.0.1", "02:00:00:00:00:01", "10.0.0.254", "02:00:00:00:00:fe")


def _scapy(dst_ip: str, sport: int, tos: int, hdr, payload: bytes) -> bytes:  # noqa: ANN001
    return bytes(Ether(src=ROUTE.src_mac, dst=ROUTE.nexthop_mac)
                 / IP(src=ROUTE.src_ip, dst=dst_ip, flags="DF", ttl=64, tos=tos)
                 / UDP(sport=sport, dport=ROCEV2_PORT, chksum=0) / hdr / payload)


def test_data_frames_equal_scapy_built_ones() -> None:
    h = FlowHeader(job=3, src_rank=1, dst_rank=2, step=70000, flow=77, npkts=10)
    for dst, length, qp, seq, flags, tos in [("10.0.1.9", 1400, 0, 0, 0, 0),
                                             ("10.3.1.2", 123, 3, 9, F_RETX, 2),
                                             ("192.168.255.1", 1, 1, 4, 0, 2)]:
        sport = entropy_port(3, 1, 77, qp)
        want = _scapy(dst, sport, tos, CollectiveHeader(
            flags=flags, job=3, src_rank=1, dst_rank=2, step=70000 & 0xFFFF, entropy=qp,
            flow=77, seq=seq, npkts=10, length=length), b"\0" * length)
        assert bytes(build_frame(ROUTE, dst, length, h, qp, seq, flags, tos)) == want
        template = _scapy(dst, 0, tos, CollectiveHeader(length=length), b"\0" * length)
        assert bytes(build_frame(ROUTE, dst, length, tos=tos)) == template


def test_ack_template_equals_scapy_built_one() -> None:
    want = _scapy("10.0.1.9", 0, 0, CollectiveHeader(flags="ACK") / CollectiveAck(), b"")
    assert bytes(build_ack_template(ROUTE, "10.0.1.9")) == want


def test_hot_path_imports_no_scapy() -> None:
    code = ("import sys, json; import traffic.agent, traffic.frames, traffic.wire, "
            "traffic.batchio, traffic.agentd; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'scapy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert json.loads(out) == []
