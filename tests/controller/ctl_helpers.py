"""Shared helpers of the controller tests: fabric.p4 compiled once, frames built by hand."""

from __future__ import annotations

import functools
import ipaddress
import struct
from pathlib import Path

from common.checksum import csum16
from p4switch import Program, compile_file

FABRIC_P4 = Path(__file__).resolve().parents[2] / "p4src" / "fabric.p4"


@functools.cache
def fabric_program() -> Program:
    return compile_file(str(FABRIC_P4))


def udp_frame(src: str, dst: str, sport: int, dport: int, smac: str, dmac: str,
              payload: bytes = b"x" * 16, ttl: int = 64) -> bytes:
    """Ethernet/IPv4/UDP with a correct IPv4 checksum (UDP checksum 0: none)."""
    l4 = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
    hdr = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(l4) + len(payload), 0, 0, ttl, 17, 0,
                      int(ipaddress.IPv4Address(src)), int(ipaddress.IPv4Address(dst)))
    hdr = hdr[:10] + struct.pack("!H", csum16(hdr)) + hdr[12:]
    mac = bytes.fromhex(dmac.replace(":", "")) + bytes.fromhex(smac.replace(":", ""))
    return mac + b"\x08\x00" + hdr + l4 + payload
