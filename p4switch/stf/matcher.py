"""Expected-vs-received packet comparison, as p4c's STF drivers compare.

An expectation is hex text where ``*`` matches any nibble. The received packet may be *longer*
than the expectation (trailing bytes are not checked) unless the text ends in ``$``, which
demands the exact length. This is bmv2stf's ``comparePacket`` rule; a received packet shorter
than the expectation never matches.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mismatch:
    """Why a packet did not match: ``position`` is the first differing nibble index (or the
    length at which it became too short/long)."""

    reason: str  # "different", "too short", "too long"
    position: int


def compare(pattern: str, data: bytes) -> Mismatch | None:
    """None if ``data`` matches ``pattern`` (hex with ``*`` nibbles, optional trailing ``$``)."""
    exact = pattern.endswith("$")
    pattern = pattern.rstrip("$").upper()
    got = data.hex().upper()
    for i, want in enumerate(pattern):
        if i >= len(got):
            return Mismatch("too short", len(got))
        if want != "*" and want != got[i]:
            return Mismatch("different", i)
    if exact and len(got) > len(pattern):
        return Mismatch("too long", len(pattern))
    return None


def spaced(hex_text: str) -> str:
    """Group hex text in bytes for humans (``0A0B ..`` -> ``0A 0B ..``)."""
    return " ".join(hex_text[i : i + 2] for i in range(0, len(hex_text), 2))
