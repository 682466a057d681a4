"""The simulator's frames: byte for byte what the host agent puts on the wire, built without scapy.

Simulated hosts send real Ethernet/IPv4/UDP frames carrying traffic.packet's collective header,
so the P4 program parses, hashes and rewrites exactly what it sees on Mininet. traffic.frames
builds its templates with scapy (tens of µs each, one per destination and length); a k=16
AllToAll has a million (source, destination) pairs, so here the 42 bytes in front of the
collective header are packed with struct per flow instead (address parsing cached: 2,048
addresses, a million headers); tests/sim checks them against scapy.

Two deliberate differences from the agent, both sim-only and documented in docs/sim.md:
* data frames may be sent ECN-capable (ECT(0), tos 0x02) so fabric.p4's egress can CE-mark them;
* an ACK frame carries, in the collective header's ``reserved`` field, how many CE-marked data
  packets it acknowledges (the agent's ACKs leave it 0): the ECN echo of the simulated transport.
"""

from __future__ import annotations

import functools
import struct

from common.checksum import csum16_int
from model.spec import mac_int
from traffic.wire import ACK, F_ACK, F_DUP, F_NACK, F_TRIM, HDR, ROCEV2_PORT, VERSION

ETH_IP_UDP = 14 + 20 + 8
"""Bytes before the collective header."""
HDR_AT = ETH_IP_UDP
ACK_AT = HDR_AT + HDR.size
ACK_FRAME_LEN = ACK_AT + ACK.size
TOS_AT = 15
SPORT_AT = 14 + 20
ECN_MASK = 0x03
ECN_ECT0 = 0x02
ECN_CE = 0x03

_ETH = struct.Struct("!6s6sH")
_IP = struct.Struct("!BBHHHBBHII")
_UDP = struct.Struct("!HHHH")
_IP_ID = 1            # scapy's default, what the agent's frames carry
_IP_DF = 0x4000
_TTL = 64
_UDP_PROTO = 17


@functools.cache
def ip_int(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


@functools.cache
def _mac_bytes(text: str) -> bytes:
    return mac_int(text).to_bytes(6, "big")


def l2l3_header(src_mac: str, dst_mac: str, src_ip: str, dst_ip: str, sport: int, dport: int,
                payload_len: int, tos: int = 0) -> bytes:
    """Ethernet + IPv4 (DF, TTL 64, id 1, correct checksum) + UDP (checksum 0) for a UDP
    payload of ``payload_len`` bytes (the collective header included)."""
    src, dst = ip_int(src_ip), ip_int(dst_ip)
    total = 20 + 8 + payload_len
    s = (0x4500 | tos) + total + _IP_ID + _IP_DF + ((_TTL << 8) | _UDP_PROTO)
    s += (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF)
    ip = _IP.pack(0x45, tos, total, _IP_ID, _IP_DF, _TTL, _UDP_PROTO, csum16_int(s), src, dst)
    eth = _ETH.pack(_mac_bytes(dst_mac), _mac_bytes(src_mac), 0x0800)
    return eth + ip + _UDP.pack(sport, dport, 8 + payload_len, 0)


def data_frame(prefix: bytes, flags: int, job: int, src_rank: int, dst_rank: int, step: int,
               qp: int, flow: int, seq: int, npkts: int, length: int, zeros: bytes) -> bytes:
    """One data packet: its flow's ``prefix`` (l2l3_header for this length), the collective
    header, ``length`` zero bytes of payload (``zeros`` is at least that long)."""
    return (prefix + HDR.pack(VERSION, flags, job, src_rank, dst_rank, step & 0xFFFF, qp, flow,
                              seq, npkts, length, 0) + zeros[:length])


def ack_frame(prefix: bytes, job: int, me: int, peer: int, flow: int, cum: int, base: int,
              sack: int, nack: bool, ce: int, ce_bits: int = 0, dup: bool = False,
              trimmed: bool = False) -> bytes:
    """An ACK as the agent sends it (flags ACK[|NACK][|DUP][|TRIM], seq = cum, per-packet CE
    echo bitmap ``ce_bits``) plus the CE echo count."""
    flags = F_ACK | (F_NACK if nack else 0) | (F_DUP if dup else 0) | (F_TRIM if trimmed else 0)
    return (prefix + HDR.pack(VERSION, flags, job, me, peer, 0, 0, flow, cum, 0, 0,
                              min(ce, 0xFFFF)) + ACK.pack(cum, base, sack, ce_bits))


def ack_prefix(src_mac: str, dst_mac: str, src_ip: str, dst_ip: str,
               sport: int = ROCEV2_PORT) -> bytes:
    return l2l3_header(src_mac, dst_mac, src_ip, dst_ip, sport, ROCEV2_PORT,
                       HDR.size + ACK.size)
