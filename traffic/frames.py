"""Pre-built Ethernet frames for the data path.

scapy composes each distinct frame once (per flow, QP and payload length); per packet the agent
only patches the sequence number and flags into the bytes and hands them to a raw socket.
Building every packet with scapy costs tens of microseconds; patching costs well under one.
Pre-built frames on AF_PACKET (rather than a kernel UDP socket) give us full control of the
bytes on the wire: the source port per QP (entropy) and any field a P4 program may read.
The UDP checksum is 0 ("not computed", legal for IPv4) so patching needs no checksum update.
"""

from __future__ import annotations

from dataclasses import dataclass

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from .nexthop import Route
from .packet import FLAGS_OFFSET, HDR, ROCEV2_PORT, SEQ_OFFSET, CollectiveHeader, entropy_port

L2L3L4 = 14 + 20 + 8
SEQ_AT = L2L3L4 + SEQ_OFFSET
FLAGS_AT = L2L3L4 + FLAGS_OFFSET
OVERHEAD = L2L3L4 + HDR.size  # bytes on the wire besides payload (no FCS/preamble)


@dataclass(frozen=True)
class FlowHeader:
    job: int
    src_rank: int
    dst_rank: int
    step: int
    flow: int
    npkts: int


def build_frame(route: Route, dst_ip: str, h: FlowHeader, qp: int, length: int,
                dscp: int = 0) -> bytearray:
    """One frame template; its sequence number and flags are patched per packet."""
    pkt = (Ether(src=route.src_mac, dst=route.nexthop_mac)
           / IP(src=route.src_ip, dst=dst_ip, flags="DF", ttl=64, tos=dscp << 2)
           / UDP(sport=entropy_port(h.job, h.src_rank, h.flow, qp), dport=ROCEV2_PORT, chksum=0)
           / CollectiveHeader(job=h.job, src_rank=h.src_rank, dst_rank=h.dst_rank,
                              step=h.step & 0xFFFF, entropy=qp, flow=h.flow, npkts=h.npkts,
                              length=length)
           / (b"\x00" * length))
    return bytearray(bytes(pkt))


class FrameCache:
    """Templates per (flow, qp, length): a flow needs at most 2 x QPs of them."""

    def __init__(self) -> None:
        self._frames: dict[tuple[int, int, int], bytearray] = {}

    def get(self, route: Route, dst_ip: str, h: FlowHeader, qp: int, length: int) -> bytearray:
        key = (h.flow, qp, length)
        f = self._frames.get(key)
        if f is None:
            f = self._frames[key] = build_frame(route, dst_ip, h, qp, length)
        return f

    def drop_flow(self, flow: int) -> None:
        for k in [k for k in self._frames if k[0] == flow]:
            del self._frames[k]
