"""Reference CRCs for tests, written bit by bit from the algorithms' definitions: independent of
the pipeline's hash implementations (and of zlib), so tests can check the pipeline against them."""

from __future__ import annotations


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC bit by bit: reflected poly 0xA001, init 0, xorout 0."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def crc32_ieee(data: bytes) -> int:
    """CRC-32 (IEEE 802.3) bit by bit: reflected poly 0xEDB88320, init and xorout 0xFFFFFFFF."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xEDB88320 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF
