"""Pre-built Ethernet frames for the data path.

One frame per (destination, payload length) is composed with struct (traffic.wire) before the
job starts; per packet the agent only writes the UDP source port (the flow's entropy value for
this QP) and the 28-byte collective header into those bytes and hands them to a raw socket
(traffic.batchio). Pre-built frames on AF_PACKET (rather than a kernel UDP socket) give full
control of the bytes on the wire: the source port per QP and any field a P4 program may read.
The UDP checksum is 0 ("not computed", legal for IPv4), so patching needs no checksum update,
and the IP header does not change per packet. No scapy here: tests compare these frames with
scapy-built ones (traffic.packet's layers) byte for byte.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from model.entropy import entropy_port

from .nexthop import Route
from .wire import (
    ACK,
    ACK_AT,
    F_ACK,
    F_DUP,
    F_NACK,
    F_TRIM,
    HDR,
    HDR_AT,
    OVERHEAD,
    ROCEV2_PORT,
    SPORT_AT,
    VERSION,
    l2l3_header,
)

__all__ = ["ACK_AT", "HDR_AT", "OVERHEAD", "SPORT_AT", "FlowHeader", "FrameCache",
           "build_ack_template", "build_frame"]

_SPORT = struct.Struct("!H")


@dataclass(frozen=True)
class FlowHeader:
    """The per-flow constant part of the collective header."""

    job: int
    src_rank: int
    dst_rank: int
    step: int
    flow: int
    npkts: int


def build_frame(route: Route, dst_ip: str, length: int, h: FlowHeader | None = None,
                qp: int = 0, seq: int = 0, flags: int = 0, tos: int = 0) -> bytearray:
    """A complete frame (a template when `h` is None: header zero but for its version and
    length); ``tos`` 2 sends it ECN-capable (ECT(0)) so switches CE-mark instead of only
    queueing."""
    sport = 0 if h is None else entropy_port(h.job, h.src_rank, h.flow, qp)
    f = bytearray(l2l3_header(route.src_mac, route.nexthop_mac, route.src_ip, dst_ip, sport,
                              ROCEV2_PORT, HDR.size + length, tos))
    f += bytes(HDR.size + length)
    if h is None:
        HDR.pack_into(f, HDR_AT, VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, length, 0)
    else:
        HDR.pack_into(f, HDR_AT, VERSION, flags, h.job, h.src_rank, h.dst_rank,
                      h.step & 0xFFFF, qp, h.flow, seq, h.npkts, length, 0)
    return f


def build_ack_template(route: Route, dst_ip: str) -> bytearray:
    """An ACK frame to ``dst_ip`` (non-ECT; source port, header and ACK fields left zero)."""
    f = bytearray(l2l3_header(route.src_mac, route.nexthop_mac, route.src_ip, dst_ip, 0,
                              ROCEV2_PORT, HDR.size + ACK.size))
    f += bytes(HDR.size + ACK.size)
    HDR.pack_into(f, HDR_AT, VERSION, F_ACK, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    return f


class FrameCache:
    """Templates per (destination, payload length); `frame()` patches one packet into one."""

    def __init__(self) -> None:
        self._t: dict[tuple[str, int], bytearray] = {}
        self._ack: dict[str, bytearray] = {}

    def prebuild(self, route: Route, dst_ip: str, length: int, tos: int = 0) -> None:
        if (dst_ip, length) not in self._t:
            self._t[(dst_ip, length)] = build_frame(route, dst_ip, length, tos=tos)

    def __len__(self) -> int:
        return len(self._t)

    def frame(self, dst_ip: str, h: FlowHeader, sport: int, qp: int, seq: int, length: int,
              flags: int) -> bytearray:
        """The frame for one packet (valid until the next call for the same template)."""
        f = self._t[(dst_ip, length)]
        _SPORT.pack_into(f, SPORT_AT, sport)
        HDR.pack_into(f, HDR_AT, VERSION, flags, h.job, h.src_rank, h.dst_rank, h.step & 0xFFFF,
                      qp, h.flow, seq, h.npkts, length, 0)
        return f

    def prebuild_ack(self, route: Route, dst_ip: str) -> None:
        """The control-frame template (ACKs, READY beacons) to ``dst_ip``."""
        if dst_ip not in self._ack:
            self._ack[dst_ip] = build_ack_template(route, dst_ip)

    def control(self, dst_ip: str, sport: int, flags: int, job: int, me: int = 0,
                peer: int = 0, flow: int = 0, cum: int = 0, base: int = 0, sack: int = 0,
                ce: int = 0) -> bytearray:
        """A control frame (ACK-sized: READY beacons carry zero ACK fields, which receivers
        ignore) to ``dst_ip`` from UDP source port ``sport`` (valid until the next control
        frame to the same destination)."""
        f = self._ack[dst_ip]
        _SPORT.pack_into(f, SPORT_AT, sport)
        HDR.pack_into(f, HDR_AT, VERSION, flags, job, me, peer, 0, 0, flow, cum, 0, 0, 0)
        ACK.pack_into(f, ACK_AT, cum, base, sack, ce)
        return f

    def ack(self, dst_ip: str, sport: int, job: int, me: int, peer: int, flow: int, cum: int,
            base: int, sack: int, nack: bool, ce: int, dup: bool = False,
            trimmed: bool = False) -> bytearray:
        """The ACK frame from rank ``me`` to ``peer`` for ``flow`` with UDP source port
        ``sport``: the entropy of the data it answers, so ACKs spread over the ECMP paths
        like the data (UEC ACKs echo the entropy value) instead of all sharing one path from
        port 4791. ``trimmed``: a NACK of a packet a switch trimmed (F_TRIM)."""
        return self.control(dst_ip, sport, F_ACK | (F_NACK if nack else 0) |
                            (F_DUP if dup else 0) | (F_TRIM if trimmed else 0), job, me, peer,
                            flow, cum, base, sack, ce)
