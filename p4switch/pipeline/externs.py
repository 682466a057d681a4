"""Run-time state of v1model extern instances: registers, counters, meters, parser value sets.

The generated code touches these objects directly (``values``, ``packets``/``bytes`` cells:
lists, or for big arrays memoryviews over lazily zeroed memory, ``zero_cells``;
``execute``), so their attributes are part of the code generator's contract.
"""

from __future__ import annotations

import mmap

from p4switch import ir

from .api import ExactMatch, MatchValue, MeterConfig, StateCode, StateError, TernaryMatch

GREEN, YELLOW, RED = 0, 1, 2  # v1model MeterColor encoding (BMv2: green 0, yellow 1, red 2)


LAZY_CELLS = 4096
"""Arrays of at least this many cells live in lazily zeroed memory (``zero_cells``)."""


def zero_cells(size: int, signed: bool | None) -> list[int] | memoryview:
    """``size`` integer cells, all 0, indexed like a list. A big array is a memoryview of
    64-bit cells (``signed`` or not) over a private anonymous mapping, whose pages the
    kernel zero-fills on first write: a simulated k=16 fabric's 320 switches hold ~6,400
    arrays of 16,384 cells, nearly all 0 for the whole run — 190 MB as lists, a few MB
    this way. Small arrays, and cells that are not 64-bit integers (``signed`` None), are
    lists. Private, so a forked process (sim.parallel) writes its own copy."""
    if signed is None or size < LAZY_CELLS:
        return [0] * size
    raw = memoryview(mmap.mmap(-1, size * 8, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS))
    return raw.cast("q") if signed else raw.cast("Q")


class RegisterArray:
    """``register<T>(size)``. Out-of-range ``read`` gives 0 and out-of-range ``write`` is
    ignored (docs/architecture.md; BMv2 instead leaves the read destination unchanged and logs an error).
    ``numeric``: T is ``bit<W>``/``int<W>`` (then a big array's cells are lazily zeroed
    64-bit integers where W allows)."""

    def __init__(self, inst: ir.ExternInstance, size: int, width: int,
                 numeric: bool = False) -> None:
        self.inst = inst
        self.size = size
        self.width = width
        self.values = zero_cells(size, True if numeric and width < 64 else None)


class CounterArray:
    """``counter(size, CounterType)``: packets and bytes are both kept; bytes count the packet
    length (standard_metadata.packet_length), as BMv2 does."""

    def __init__(self, inst: ir.ExternInstance, size: int, kind: str) -> None:
        self.inst = inst
        self.size = size
        self.kind = kind
        self.packets = zero_cells(size, False)
        self.bytes = zero_cells(size, False)


class TrTCM:
    """One two-rate three-colour meter (RFC 2698, colour-blind mode), driven by ``now_us``.

    Buckets start full. Tokens accrue at cir/pir units per second up to cburst/pburst; a packet
    of ``b`` units is RED if the peak bucket holds fewer than b tokens, else YELLOW if the
    committed bucket does, else GREEN (RFC 2698 section 3)."""

    __slots__ = ("config", "tc", "tp", "last")

    def __init__(self, config: MeterConfig | None = None) -> None:
        self.set(config)

    def set(self, config: MeterConfig | None) -> None:
        self.config = config
        self.tc: float = config.cburst if config else 0  # tokens (fractional as they accrue)
        self.tp: float = config.pburst if config else 0
        self.last: int | None = None

    def execute(self, now_us: int, units: int) -> int:
        c = self.config
        if c is None:
            return GREEN
        if self.last is not None and now_us > self.last:
            dt = now_us - self.last
            self.tc = min(c.cburst, self.tc + c.cir * dt / 1e6)
            self.tp = min(c.pburst, self.tp + c.pir * dt / 1e6)
        if self.last is None or now_us > self.last:
            self.last = now_us
        if self.tp < units:
            return RED
        if self.tc < units:
            self.tp -= units
            return YELLOW
        self.tp -= units
        self.tc -= units
        return GREEN


class MeterArray:
    """``meter(size, MeterType)``; every index is unconfigured (always GREEN) until set."""

    def __init__(self, inst: ir.ExternInstance, size: int, kind: str) -> None:
        self.inst = inst
        self.size = size
        self.kind = kind  # "packets" or "bytes"
        self.meters = [TrTCM() for _ in range(size)]

    def execute(self, index: int, now_us: int, plen: int) -> int:
        return self.meters[index].execute(now_us, plen if self.kind == "bytes" else 1)


class ValueSet:
    """A parser ``value_set<T>(size)``: members are lists of ExactMatch/TernaryMatch per field
    of T (one element for a bit<W> T)."""

    def __init__(self, vs: ir.ValueSet) -> None:
        self.vs = vs
        if isinstance(vs.type, ir.StructType | ir.HeaderType):
            self.widths = [ir.type_width(f.type) for f in vs.type.fields]
        else:
            self.widths = [ir.type_width(vs.type)]
        self.members: list[list[MatchValue]] = []
        self._compiled: list[tuple[int, int]] = []  # (value, mask) over the concatenation

    def set(self, members: list[list[MatchValue]]) -> None:
        if len(members) > self.vs.size:
            raise StateError(
                StateCode.RESOURCE_EXHAUSTED,
                f"value_set {self.vs.cp_name} holds at most {self.vs.size} members",
            )
        compiled = []
        for m in members:
            if len(m) != len(self.widths):
                raise StateError(
                    StateCode.INVALID_ARGUMENT,
                    f"value_set {self.vs.cp_name}: expected {len(self.widths)} match fields",
                )
            value = mask = 0
            for mv, w in zip(m, self.widths, strict=True):
                full = (1 << w) - 1
                if isinstance(mv, ExactMatch):
                    v, mk = mv.value, full
                elif isinstance(mv, TernaryMatch):
                    v, mk = mv.value, mv.mask
                else:
                    raise StateError(
                        StateCode.INVALID_ARGUMENT, "value_set members are exact or ternary"
                    )
                if v >> w or mk >> w or v & ~mk:
                    raise StateError(
                        StateCode.INVALID_ARGUMENT, f"value {v:#x} does not fit {w} bits/mask"
                    )
                value = (value << w) | v
                mask = (mask << w) | mk
            compiled.append((value, mask))
        self.members = [list(m) for m in members]
        self._compiled = compiled

    def match(self, key: int | tuple[int, ...]) -> bool:
        if isinstance(key, tuple):
            k = 0
            for v, w in zip(key, self.widths, strict=True):
                k = (k << w) | (v & ((1 << w) - 1))
        else:
            k = key
        return any(k & mask == value for value, mask in self._compiled)
