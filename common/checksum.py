"""The Internet checksum (RFC 1071): v1model's ``csum16`` hash, and the IPv4 header checksum
of the frames hosts, control-loop probes and the simulator build."""

from __future__ import annotations


def csum16(data: bytes) -> int:
    """Ones'-complement of the ones'-complement sum of 16-bit big-endian words (RFC 1071); an odd
    trailing byte is padded with a zero byte."""
    x = int.from_bytes(data, "big")
    if len(data) & 1:
        x <<= 8
    return csum16_int(x)


def csum16_int(x: int) -> int:
    """csum16 of the 16-bit words of the non-negative integer ``x`` (big-endian words).

    Since 2^16 = 1 (mod 0xFFFF), the end-around-carry sum of the words is x mod 0xFFFF, except
    that a non-zero input whose sum is a multiple of 0xFFFF sums to 0xFFFF, never 0."""
    s = x % 0xFFFF
    if s == 0 and x:
        s = 0xFFFF
    return (~s) & 0xFFFF
