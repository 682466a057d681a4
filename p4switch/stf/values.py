"""STF key and argument values -> the pipeline API's match values.

The conversions replicate what p4c's BMv2 STF driver (``backends/bmv2/bmv2stf.py``) hands to
simple_switch_CLI, because that is what the expected outputs in STF files were written against:

* ternary ``0x****0101``: each written digit contributes a mask digit (``F`` for hex, ``1`` for
  binary, ``7`` for octal), each ``*`` a ``0`` mask digit and a ``0`` value digit. The mask only
  covers the digits written, so a short literal leaves the key's upper bits wildcarded
  (``0x0101`` on a 32-bit key is ``0x00000101 &&& 0x0000FFFF``). p4c rejects decimal ternary
  values; we accept them as exact (full mask) -- an extension.
* lpm without ``/len``: the prefix length is the number of non-``*`` digits times the digit
  width (``0x0a******`` is ``0x0a000000/8``); decimal without ``/len`` means the full width.
* exact: the number; a key left out of an ``add`` is 0 for exact keys, ``0/0`` for lpm and
  ``0 &&& 0`` for ternary, as bmv2stf fills them -- for us a missing lpm/ternary/range/optional
  key is simply a wildcard, and a missing exact key is 0.
"""

from __future__ import annotations

from p4switch.pipeline.api import (
    ExactMatch,
    LpmMatch,
    MatchValue,
    OptionalMatch,
    RangeMatch,
    TernaryMatch,
)

from .syntax import KeyValue, parse_int

_DIGIT_BITS = {"0x": 4, "0b": 1, "0o": 3}


def split_radix(text: str) -> tuple[str, str, bool]:
    """(prefix, digits, negative) of a number text; prefix is "" for decimal."""
    neg = text.startswith("-")
    body = text[1:] if neg else text
    low = body[:2].lower()
    if low in _DIGIT_BITS:
        return low, body[2:], neg
    return "", body, neg


def ternary_value(text: str, width: int) -> tuple[int, int]:
    """(value, mask) of a ternary literal, per the bmv2stf rules above."""
    prefix, digits, neg = split_radix(text)
    full = (1 << width) - 1
    if not prefix:
        if "*" in digits:
            raise ValueError(f"'*' needs a 0x/0b/0o literal: {text}")
        return wrap(-int(digits) if neg else int(digits), width), full
    bits = _DIGIT_BITS[prefix]
    radix = 1 << bits
    value = mask = 0
    for d in digits:
        value <<= bits
        mask <<= bits
        if d != "*":
            value |= int(d, radix)
            mask |= radix - 1
    if value > full or mask > full:
        # Leading zero digits beyond the width are harmless; real bits are not.
        if value & ~full:
            raise ValueError(f"value {text} does not fit in {width} bits")
        mask &= full
    return value, mask


def number(text: str, width: int) -> int:
    """A plain number (no ``*``) that must fit in ``width`` bits; negative wraps (int<W>)."""
    v = parse_int(text)
    if v < 0:
        if -v > 1 << width:
            raise ValueError(f"value {text} does not fit in {width} bits")
        return wrap(v, width)
    if v >> width:
        raise ValueError(f"value {text} does not fit in {width} bits")
    return v


def wrap(v: int, width: int) -> int:
    return v & ((1 << width) - 1)


def lpm_value(kv: KeyValue, width: int) -> tuple[int, int]:
    """(value, prefix_len) of an lpm key."""
    if kv.prefix_len is not None:
        plen = kv.prefix_len
        value = number(kv.value.replace("*", "0"), width)
    else:
        prefix, digits, _ = split_radix(kv.value)
        if not prefix:
            plen = width
        else:
            plen = (len(digits) - digits.count("*")) * _DIGIT_BITS[prefix]
        value = number(kv.value.replace("*", "0"), width)
    if not 0 <= plen <= width:
        raise ValueError(f"prefix length {plen} out of range for a {width}-bit key")
    return value, plen


def match_value(kv: KeyValue, match_kind: str, width: int) -> MatchValue:
    """Convert one ``name:value`` of an ``add`` to the match value of a key of this kind."""
    if kv.hi is not None and match_kind != "range":
        raise ValueError(f"'->' ranges need a range key, {kv.name} is {match_kind}")
    if kv.prefix_len is not None and match_kind not in ("lpm", "ternary"):
        raise ValueError(f"'/len' needs an lpm key, {kv.name} is {match_kind}")
    if kv.mask is not None and match_kind not in ("ternary",):
        raise ValueError(f"'&&&' needs a ternary key, {kv.name} is {match_kind}")
    if match_kind == "exact":
        return ExactMatch(number(kv.value, width))
    if match_kind == "lpm":
        value, plen = lpm_value(kv, width)
        return LpmMatch(value, plen)
    if match_kind == "ternary":
        if kv.mask is not None:
            return TernaryMatch(number(kv.value, width), number(kv.mask, width))
        if kv.prefix_len is not None:
            value, plen = lpm_value(kv, width)
            mask = ((1 << plen) - 1) << (width - plen) if plen else 0
            return TernaryMatch(value, mask)
        value, mask = ternary_value(kv.value, width)
        return TernaryMatch(value & mask, mask)
    if match_kind == "range":
        if kv.hi is None:
            v = number(kv.value, width)
            return RangeMatch(v, v)
        return RangeMatch(number(kv.value, width), number(kv.hi, width))
    if match_kind == "optional":
        return OptionalMatch(number(kv.value, width))
    raise ValueError(f"key {kv.name} has match kind {match_kind}, which STF cannot set")
