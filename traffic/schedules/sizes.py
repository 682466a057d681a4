"""Byte-size parsing and even splitting of buffers into chunks."""

from __future__ import annotations

import re

_UNITS = {
    "": 1, "B": 1,
    "K": 1 << 10, "KIB": 1 << 10, "KB": 10**3,
    "M": 1 << 20, "MIB": 1 << 20, "MB": 10**6,
    "G": 1 << 30, "GIB": 1 << 30, "GB": 10**9,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(text: str | int) -> int:
    """'1MB' -> 1000000, '1MiB'/'1M' -> 1048576 (bare letters are binary, as in nccl-tests)."""
    if isinstance(text, int):
        return text
    m = _SIZE.match(text)
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"bad size {text!r} (use e.g. 4096, 64KiB, 1MB, 1M)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def split(total: int, n: int) -> list[int]:
    """Split `total` bytes into n chunks that differ by at most one byte and sum to `total`."""
    q, r = divmod(total, n)
    return [q + (1 if i < r else 0) for i in range(n)]
