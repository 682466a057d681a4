"""The collective traffic's wire format as struct layouts: what the host agent packs and parses.

The header names what a P4 program or a capture needs to attribute a packet to a collective:
job, ranks, step, flow, and the transport's sequence number. ACKs reuse the header (flag ACK)
and add a cumulative ACK plus a 64-bit SACK bitmap at a base sequence and, aligned with it, a
64-bit ECN echo (bit i: packet base+i arrived CE-marked). ``entropy`` is the QP / entropy value
the source port was derived from (UEC's entropy values, multi-QP NCCL).

Kept free of scapy (traffic.packet holds the equivalent scapy layers, which tests keep
byte-identical to these): importing scapy costs over a second of CPU per process, and the
agent's data path never needs it.
"""

from __future__ import annotations

import struct

from model.entropy import ROCEV2_PORT

__all__ = ["ACK", "ACK_AT", "F_ACK", "F_ACKREQ", "F_DUP", "F_LAST", "F_NACK", "F_READY", "F_RETX",
           "F_TRIM",
           "FLAG_NAMES",
           "HDR", "HDR_AT", "OVERHEAD", "ROCEV2_PORT", "SPORT_AT", "TRIM_BYTES", "VERSION", "ip4",
           "l2l3_header", "mac6"]

VERSION = 2
"""2: ACKs carry the per-packet ECN echo bitmap (24-byte ACK)."""

F_ACK, F_NACK, F_RETX, F_LAST, F_READY = 0x01, 0x02, 0x04, 0x08, 0x10
F_ACKREQ = 0x20
"""Data: ACK this packet at once (the sender's window closed or it has nothing new left;
RoCE's BTH AckReq, UEC's AR), so the receiver's ACK coalescing never waits for its timer."""
F_DUP = 0x40
"""ACK: a duplicate arrived since the previous ACK (D-SACK, RFC 2883): the sender counts one
spurious retransmission (RFC 3708)."""
F_TRIM = 0x80
"""NACK: the packet named by the ACK's ``base`` arrived trimmed to its headers by a switch's
full queue (p4switch.queues): resend it now, it was not lost to reordering."""
FLAG_NAMES = ["ACK", "NACK", "RETX", "LAST", "READY", "ACKREQ", "DUP", "TRIM"]

#: version, flags, job, src_rank, dst_rank, step, entropy, flow, seq, npkts, length, reserved
HDR = struct.Struct("!BBHHHHHIIIHH")
#: cumulative ack (all seq < cum arrived), SACK base, bitmap for seq base .. base+63, and the
#: CE echo for the same 64 sequence numbers
ACK = struct.Struct("!IIQQ")

SPORT_AT = 14 + 20           # UDP source port inside a frame
HDR_AT = 14 + 20 + 8         # collective header inside a frame
OVERHEAD = HDR_AT + HDR.size  # bytes on the wire besides payload (no FCS/preamble)
ACK_AT = HDR_AT + HDR.size   # the ACK fields inside an ACK frame
TRIM_BYTES = ACK_AT
"""What a switch that trims keeps of a data frame (p4switch ``--trim-bytes``): Ethernet, IPv4,
UDP and the collective header, whose sequence number the receiver NACKs."""

_ETH = struct.Struct("!6s6sH")
_IP = struct.Struct("!BBHHHBBHII")
_UDP = struct.Struct("!HHHH")
IP_ID = 1            # scapy's default id, kept so frames stay identical to the scapy layers'
IP_DF = 0x4000
TTL = 64
UDP_PROTO = 17


def ip4(text: str) -> int:
    """A dotted IPv4 address as an integer."""
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def mac6(text: str) -> bytes:
    """``aa:bb:cc:dd:ee:ff`` as 6 bytes."""
    return bytes.fromhex(text.replace(":", ""))


def l2l3_header(src_mac: str, dst_mac: str, src_ip: str, dst_ip: str, sport: int, dport: int,
                payload_len: int, tos: int = 0) -> bytes:
    """Ethernet + IPv4 (DF, TTL 64, id 1, correct header checksum) + UDP (checksum 0, "not
    computed", legal for IPv4: per-packet patches need no checksum update) for a UDP payload
    of ``payload_len`` bytes (the collective header included)."""
    src, dst = ip4(src_ip), ip4(dst_ip)
    total = 20 + 8 + payload_len
    s = (0x4500 | tos) + total + IP_ID + IP_DF + ((TTL << 8) | UDP_PROTO)
    s += (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    ip = _IP.pack(0x45, tos, total, IP_ID, IP_DF, TTL, UDP_PROTO, ~s & 0xFFFF, src, dst)
    return _ETH.pack(mac6(dst_mac), mac6(src_mac), 0x0800) + ip + \
        _UDP.pack(sport, dport, 8 + payload_len, 0)


assert HDR.size == 28 and ACK.size == 24
