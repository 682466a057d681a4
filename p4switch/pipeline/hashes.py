"""Hash and checksum algorithms of v1model's ``HashAlgorithm`` as BMv2 computes them.

All functions take the hash input as ``bytes`` (see ``pack_fields``) and return an unsigned int.
Check values (the "123456789" test vector of the CRC catalogue): CRC-16/ARC 0xBB3D,
CRC-32/ISO-HDLC 0xCBF43926.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable, Iterable


def _crc16_arc_table() -> list[int]:
    # CRC-16/ARC: poly 0x8005, reflected in and out -> process LSB first with poly 0xA001.
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC16_TABLE = _crc16_arc_table()
_LITTLE = sys.byteorder == "little"


def _crc16_arc_table2() -> list[int]:
    # Two bytes per step: for a reflected 16-bit CRC the whole register is consumed by a
    # 16-bit little-endian word, so T2[w] = two single-byte steps from register w.
    t = _CRC16_TABLE
    out = []
    for w in range(1 << 16):
        crc = (w >> 8) ^ t[w & 0xFF]
        out.append((crc >> 8) ^ t[crc & 0xFF])
    return out


_CRC16_TABLE2: list[int] | None = None


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC (BMv2 ``crc16``): poly 0x8005, init 0, reflected, xorout 0."""
    global _CRC16_TABLE2
    t2 = _CRC16_TABLE2
    if t2 is None:
        t2 = _CRC16_TABLE2 = _crc16_arc_table2()
    n = len(data)
    crc = 0
    if n > 1:
        words = memoryview(data)[: n & ~1].cast("H")
        if _LITTLE:
            for w in words:
                crc = t2[crc ^ w]
        else:
            for w in words:
                crc = t2[crc ^ (((w & 0xFF) << 8) | (w >> 8))]
    if n & 1:
        crc = (crc >> 8) ^ _CRC16_TABLE[(crc ^ data[-1]) & 0xFF]
    return crc


def crc32(data: bytes) -> int:
    """The IEEE 802.3 CRC-32 (BMv2 ``crc32``)."""
    return zlib.crc32(data) & 0xFFFFFFFF


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


def xor16(data: bytes) -> int:
    """XOR of the 16-bit big-endian words (odd trailing byte zero-padded), as BMv2's xor16."""
    if len(data) & 1:
        data = data + b"\x00"
    acc = 0
    for i in range(0, len(data), 2):
        acc ^= (data[i] << 8) | data[i + 1]
    return acc


def identity(data: bytes) -> int:
    """The input bytes as one big-endian integer (BMv2 ``identity``; callers truncate)."""
    return int.from_bytes(data, "big")


ALGORITHMS: dict[str, Callable[[bytes], int]] = {
    "crc16": crc16_arc,
    "crc32": crc32,
    "csum16": csum16,
    "xor16": xor16,
    "identity": identity,
}

UNSUPPORTED = ("crc16_custom", "crc32_custom", "random")


def memoize(fn: Callable[[bytes], int], limit: int = 1 << 16) -> Callable[[bytes], int]:
    """``fn`` with a bounded per-input cache (cleared when full): packets of one flow hash the
    same bytes, so a pure-Python CRC is computed once per flow rather than once per packet."""
    cache: dict[bytes, int] = {}
    get = cache.get

    def cached(data: bytes) -> int:
        r = get(data)
        if r is None:
            if len(cache) >= limit:
                cache.clear()
            r = cache[data] = fn(data)
        return r

    return cached


def algorithm(name: str) -> Callable[[bytes], int]:
    """The function for a ``HashAlgorithm`` member; ValueError for unsupported ones (the
    pipeline turns it into a build-time error)."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"hash algorithm {name!r} is not supported by p4switch") from None


def pack_fields(values: Iterable[tuple[int, int]]) -> bytes:
    """Concatenate (value, width) pairs bit-wise, MSB first, and zero-pad at the end to a whole
    byte, as BMv2 builds the input of a field-list calculation."""
    acc = 0
    total = 0
    for value, width in values:
        acc = (acc << width) | (value & ((1 << width) - 1))
        total += width
    pad = (-total) & 7
    return (acc << pad).to_bytes((total + pad) >> 3, "big")
