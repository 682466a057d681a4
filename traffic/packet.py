"""Wire format of p4fabric collective traffic: a scapy layer over UDP (RoCEv2's port 4791).

The header names what a P4 program or a capture needs to attribute a packet to a collective:
job, ranks, step, flow, and the transport's sequence number. ACKs reuse the header (flag ACK)
and add a cumulative ACK plus a 64-bit SACK bitmap at a base sequence and, aligned with it, a
64-bit ECN echo (bit i: packet base+i arrived CE-marked) that host path policies (policies.py)
read per packet. `entropy` is the QP / entropy value the
source port was derived from: like Meta's multi-QP NCCL and UEC's entropy values, one flow may
use several source ports so that ECMP hashing spreads it.

The host agent does not parse with scapy per packet (too slow); it uses the `struct` layouts
below, which tests keep byte-identical to the scapy layers.
"""

from __future__ import annotations

import struct

from scapy.fields import ByteField, FlagsField, IntField, LongField, ShortField
from scapy.layers.inet import UDP
from scapy.packet import Packet, Raw, bind_layers

from model.entropy import ROCEV2_PORT

VERSION = 2
"""2: ACKs carry the per-packet ECN echo bitmap (24-byte CollectiveAck)."""

F_ACK, F_NACK, F_RETX, F_LAST, F_READY = 0x01, 0x02, 0x04, 0x08, 0x10
FLAG_NAMES = ["ACK", "NACK", "RETX", "LAST", "READY"]

#: version, flags, job, src_rank, dst_rank, step, entropy, flow, seq, npkts, length, reserved
HDR = struct.Struct("!BBHHHHHIIIHH")
#: cumulative ack (all seq < cum arrived), SACK base, bitmap for seq base .. base+63, and the
#: CE echo for the same 64 sequence numbers
ACK = struct.Struct("!IIQQ")


class CollectiveHeader(Packet):
    name = "P4FabricCollective"
    fields_desc = [
        ByteField("version", VERSION),
        FlagsField("flags", 0, 8, FLAG_NAMES),
        ShortField("job", 0),
        ShortField("src_rank", 0),
        ShortField("dst_rank", 0),
        ShortField("step", 0),
        ShortField("entropy", 0),
        IntField("flow", 0),
        IntField("seq", 0),
        IntField("npkts", 0),
        ShortField("length", 0),
        ShortField("reserved", 0),
    ]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return CollectiveAck if int(self.flags) & F_ACK else Raw

    def mysummary(self) -> str:
        return self.sprintf("job=%job% %src_rank%->%dst_rank% flow=%flow% seq=%seq% %flags%")


class CollectiveAck(Packet):
    name = "P4FabricAck"
    fields_desc = [IntField("cum", 0), IntField("base", 0), LongField("sack", 0),
                   LongField("ce", 0)]


bind_layers(UDP, CollectiveHeader, dport=ROCEV2_PORT)
assert HDR.size == 28 and ACK.size == 24
