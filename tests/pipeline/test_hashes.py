"""Known-answer tests of the hash/checksum algorithms (check values from the CRC catalogue and
RFC 1071), and of the field packing rule."""

from __future__ import annotations

import zlib

from scapy.layers.inet import IP
from scapy.utils import checksum as scapy_checksum

from p4switch.pipeline.hashes import crc16_arc, crc32, csum16, identity, pack_fields, xor16


def test_crc16_arc_check_value() -> None:
    assert crc16_arc(b"123456789") == 0xBB3D  # CRC-16/ARC check value


def test_crc16_arc_empty_and_single_byte() -> None:
    assert crc16_arc(b"") == 0
    # one byte 0x01 through the reflected 0xA001 register: 0xC0C1 (first table entry)
    assert crc16_arc(b"\x01") == 0xC0C1


def test_crc32_check_value() -> None:
    assert crc32(b"123456789") == 0xCBF43926
    assert crc32(b"hello") == zlib.crc32(b"hello")


def test_csum16_rfc1071_example() -> None:
    # RFC 1071 section 3: words 0x0001 0xf203 0xf4f5 0xf6f7 sum to 0xddf2 -> checksum 0x220d
    assert csum16(bytes.fromhex("0001f203f4f5f6f7")) == 0x220D


def test_csum16_matches_scapy_on_ipv4_header() -> None:
    pkt = IP(src="10.0.0.1", dst="10.0.1.2", ttl=63, id=7)
    raw = bytearray(bytes(pkt))
    want = int.from_bytes(raw[10:12], "big")
    raw[10:12] = b"\x00\x00"
    assert csum16(bytes(raw)) == want == scapy_checksum(bytes(raw))


def test_csum16_odd_length_pads_with_zero() -> None:
    assert csum16(b"\x12\x34\x56") == csum16(b"\x12\x34\x56\x00")


def test_xor16_and_identity() -> None:
    assert xor16(bytes.fromhex("12345678")) == 0x1234 ^ 0x5678
    assert xor16(bytes.fromhex("123456")) == 0x1234 ^ 0x5600
    assert identity(b"\x01\x02") == 0x0102


def test_pack_fields_msb_first_zero_pad_at_end() -> None:
    # 4 bits 0xA then 8 bits 0xBC -> 0xABC0 (12 bits padded at the end to 16)
    assert pack_fields([(0xA, 4), (0xBC, 8)]) == b"\xab\xc0"
    assert pack_fields([(0x1, 1)]) == b"\x80"
    assert pack_fields([(0x0A000001, 32), (6, 8)]) == bytes.fromhex("0a00000106")
