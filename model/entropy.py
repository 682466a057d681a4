"""The UDP ports of collective traffic: RoCEv2's destination port and the source port one QP
(entropy value) of a flow uses, so a host and the path model derive the same ports alone.

Kept apart from ``paths`` so that the traffic layer's packet code gets them without importing
routing (networkx, the pipeline's match types).
"""

from __future__ import annotations

import struct
import zlib

ROCEV2_PORT = 4791
"""UDP destination port of collective traffic (RoCEv2's): the port the paths are predicted for."""


def entropy_port(job: int, src_rank: int, flow: int, qp: int) -> int:
    """UDP source port for one QP of a flow: a hash into the dynamic range 49152..65535, so
    different QPs (entropy values) of the same flow land on different ECMP paths."""
    h = zlib.crc32(struct.pack("!HHII", job, src_rank, flow, qp))
    return 0xC000 | (h & 0x3FFF)
