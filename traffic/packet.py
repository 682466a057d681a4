"""The collective traffic's wire format as scapy layers over UDP (RoCEv2's port 4791), for
captures, tests and tools; the layout itself and what the host agent packs and parses are
traffic.wire's struct layouts (no scapy), which tests keep byte-identical to these layers.
"""

from __future__ import annotations

from scapy.fields import ByteField, FlagsField, IntField, LongField, ShortField
from scapy.layers.inet import UDP
from scapy.packet import Packet, Raw, bind_layers

from .wire import (  # noqa: F401 - re-exported: the layout's names beside its layers
    ACK,
    F_ACK,
    F_ACKREQ,
    F_DUP,
    F_LAST,
    F_NACK,
    F_READY,
    F_RETX,
    FLAG_NAMES,
    HDR,
    ROCEV2_PORT,
    VERSION,
)


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
