"""Hash and checksum algorithms of v1model's ``HashAlgorithm`` as BMv2 computes them.

All functions take the hash input as ``bytes`` (see ``pack_fields``) and return an unsigned int.
Check values (the "123456789" test vector of the CRC catalogue): CRC-16/ARC 0xBB3D,
CRC-32/ISO-HDLC 0xCBF43926.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable

from fastcrc import crc16 as _fastcrc16

# the Internet checksum is shared with hosts and probes (re-exported for the code generator)
from common.checksum import csum16 as csum16
from common.checksum import csum16_int as csum16_int

_crc16_arc = _fastcrc16.arc


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC (BMv2 ``crc16``): poly 0x8005, init 0, reflected, xorout 0 (``fastcrc``, C)."""
    return _crc16_arc(data)


def crc32(data: bytes) -> int:
    """The IEEE 802.3 CRC-32 (BMv2 ``crc32``); ``zlib.crc32`` is already unsigned."""
    return zlib.crc32(data)


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
