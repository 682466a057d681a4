"""Run-time helpers shared by the generated code: packet context, control-flow exceptions,
header-stack objects and small arithmetic helpers.

The generated code (see ``codegen``) refers to these by name from its module globals.
"""

from __future__ import annotations

from typing import Any


class ParserErrorSignal(Exception):
    """Raised inside a generated parser: ends parsing with ``code`` (an index into
    ``Program.errors``)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class ExitSignal(Exception):
    """``exit``: ends the current top-level control (ingress or egress) at once. An action
    with out/inout parameters it passes through sets ``outs`` to their values, which its
    caller copies out before passing it on (the spec's copy-out on exit)."""

    outs: tuple[Any, ...] = ()


class PacketError(Exception):
    """A run-time error that is not a parser error (e.g. header stack index out of bounds in a
    control): the packet is dropped with ``Drop(reason="error")``."""


class ActionReturn(Exception):
    """``return`` inside an action inlined by the fused generator: ends that action."""


class AssertSignal(Exception):
    """``assert``/``assume`` failed: the packet is dropped with ``Drop(reason="assert")``."""


class Ctx:
    """Per-packet-instance side channel between the generated code and the pipeline driver.

    Rarely used attributes default at class level, so creating one per packet stays cheap."""

    checksum_error = 0
    clone: tuple[int, int, int] | None = None  # (type, session, field list)
    resubmit: int | None = None  # field-list index (-1: none)
    recirculate: int | None = None
    truncate: int | None = None
    digests: list[Any] | None = None
    logs: list[str] | None = None
    meter_colour = 0

    def __init__(self, now: int, plen: int) -> None:
        self.now = now
        self.plen = plen
        self.payload = b""


class Stack:
    """A header stack: ``h`` the element headers, ``n`` nextIndex."""

    __slots__ = ("h", "n")

    def __init__(self, h: list[Any], n: int = 0) -> None:
        self.h = h
        self.n = n

    def copy(self) -> Stack:
        return Stack([x.copy() for x in self.h], self.n)


def div(a: int, b: int) -> int:
    """Run-time ``/``: the spec allows only compile-time positive operands; p4switch also
    evaluates run-time values, truncating toward zero, and yields 0 for a zero divisor."""
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def mod(a: int, b: int) -> int:
    """Run-time ``%`` (sign of the dividend, 0 for a zero divisor)."""
    if b == 0:
        return 0
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def make_helpers(stack_oob: int) -> dict[str, Any]:
    """Helpers the generated code calls; ``stack_oob`` is error.StackOutOfBounds's code."""

    def sget(s: Stack, i: int) -> Any:
        # out of range (spec 8.27): an unspecified value; BMv2 reads an invalid, zero header.
        # A fresh one, so that writes through it (hs[i].f = 1, setValid) have no effect.
        if 0 <= i < len(s.h):
            return s.h[i]
        return type(s.h[0])()

    def sset(s: Stack, i: int, v: Any) -> None:
        if 0 <= i < len(s.h):  # out of range: the write has no effect (spec 8.27)
            s.h[i] = v

    def snext_i(s: Stack) -> int:
        if s.n >= len(s.h):
            raise ParserErrorSignal(stack_oob)
        return s.n

    def slast_i(s: Stack) -> int:
        if s.n == 0:
            raise ParserErrorSignal(stack_oob)
        return s.n - 1

    def snext(s: Stack) -> Any:
        return s.h[snext_i(s)]

    def slast(s: Stack) -> Any:
        return s.h[slast_i(s)]

    def spush_front(s: Stack, count: int) -> None:
        # elements move up by count; the first count become invalid; nextIndex grows (capped)
        size = len(s.h)
        cls = type(s.h[0])
        new = [cls() for _ in range(min(count, size))] + s.h[: max(size - count, 0)]
        s.h[:] = new
        s.n = min(s.n + count, size)

    def spop_front(s: Stack, count: int) -> None:
        size = len(s.h)
        cls = type(s.h[0])
        new = s.h[count:] + [cls() for _ in range(min(count, size))]
        s.h[:] = new[:size]
        s.n = max(s.n - count, 0)

    return {
        "_sget": sget,
        "_sset": sset,
        "_snext": snext,
        "_slast": slast,
        "_snext_i": snext_i,
        "_slast_i": slast_i,
        "_spush_front": spush_front,
        "_spop_front": spop_front,
    }


def assign_into(dst: Any, src: Any) -> None:
    """Whole-aggregate assignment to a block's parameter: the caller's object ``dst`` takes
    the contents of ``src`` (a fresh copy nobody else holds), as rebinding the name would not."""
    if dst.__class__ is Stack:
        dst.h[:] = src.h
        dst.n = src.n
    else:
        d = dst.__dict__
        d.clear()
        d.update(src.__dict__)


def shl(a: int, b: int, width: int, signed: int) -> int:
    """Run-time ``<<`` on bit<W>/int<W>: a shift by >= W gives 0."""
    if b >= width:
        return 0
    v = (a << b) & ((1 << width) - 1)
    if signed and v >> (width - 1):
        v -= 1 << width
    return v


def hmod(base: int, h: int, mx: int) -> int:
    """base + (h mod max); a run-time max of 0 gives base + h (BMv2 divides by zero there)."""
    return base + (h % mx if mx else h)


def look(pkt: bytes, pos: int, nbytes: int, too_short: int) -> int:
    if pos + nbytes > len(pkt):
        raise ParserErrorSignal(too_short)
    return int.from_bytes(pkt[pos : pos + nbytes], "big")


def hdr_from_int(cls: type, x: int, spec: tuple[tuple[str, int, int], ...]) -> Any:
    """A valid header of class ``cls`` whose fields are cut from the integer ``x``."""
    h = cls()
    shift = sum(w for _, w, _ in spec)
    for name, w, kind in spec:
        shift -= w
        v = (x >> shift) & ((1 << w) - 1)
        if kind == 1 and v >> (w - 1):
            v -= 1 << w
        elif kind == 2:
            v = v != 0
        target = h
        *outer, last = name.split(".")  # a field of a struct-typed header field: f_s.f_a
        for a in outer:
            target = getattr(target, a)
        setattr(target, last, v)
    h._v = True
    return h


def mkh(cls: Any, vals: tuple[Any, ...]) -> Any:
    """A header from a list expression: valid, fields in order (an aggregate item is copied:
    the new value must not share it with the expression it came from)."""
    h = cls()
    for name, v in zip(cls._fields, vals, strict=True):
        setattr(h, name, v.copy() if hasattr(v, "copy") else v)
    h._v = True
    return h


def mks(cls: Any, vals: tuple[Any, ...]) -> Any:
    """A struct from a list expression (aggregate items copied, as in mkh)."""
    s = cls()
    for name, v in zip(cls._fields, vals, strict=True):
        setattr(s, name, v.copy() if hasattr(v, "copy") else v)
    return s


def eq(a: Any, b: Any) -> bool:
    """``==`` on headers/structs/header stacks: two invalid headers are equal; otherwise all
    fields; stacks element by element (their nextIndex is not part of the value)."""
    if isinstance(a, Stack):
        return all(eq(x, y) for x, y in zip(a.h, b.h, strict=True))
    if hasattr(a, "_v"):
        if a._v != b._v:
            return False
        if not a._v:
            return True
    for name in a._fields:
        x, y = getattr(a, name), getattr(b, name)
        if hasattr(x, "_fields") or isinstance(x, Stack):
            if not eq(x, y):
                return False
        elif x != y:
            return False
    return True


def log(ctx: Ctx, msg: str, vals: tuple[Any, ...]) -> None:
    """``log_msg``: each "{}" is replaced by the next value, in order."""
    parts = msg.split("{}")
    out = [parts[0]]
    for i, p in enumerate(parts[1:]):
        out.append(str(int(vals[i])) if i < len(vals) else "{}")
        out.append(p)
    if ctx.logs is None:
        ctx.logs = []
    ctx.logs.append("".join(out))
