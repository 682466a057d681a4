"""Type-level helpers of the front end: literals, value arithmetic with P4 width semantics,
type variables of generic externs, and the declarations (externs, block prototypes, packages)
that exist only at compile time."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeGuard, cast

from p4switch import ir

BOOL = ir.BoolType()
BIT32 = ir.BitsType(32)


@dataclass(frozen=True)
class TypeVar:
    """A type parameter of a generic extern, method, parser/control prototype or package."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class BlockTypeRef:
    """A parser or control type used as a package parameter type (``Parser<H, M> p``)."""

    name: str
    args: tuple = ()

    def __str__(self) -> str:
        return self.name


@dataclass
class SigParam:
    name: str
    direction: str
    type: object  # ir.Type | TypeVar | BlockTypeRef


@dataclass
class FuncSig:
    """An extern function, extern method or constructor signature."""

    name: str
    type_params: list[str]
    params: list[SigParam]
    ret: object  # ir.Type | TypeVar
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class ExternDecl:
    name: str
    type_params: list[str]
    ctors: list[FuncSig]
    methods: dict[str, list[FuncSig]]


@dataclass
class BlockProto:
    """A parser/control type declaration (``control Ingress<H, M>(...);``)."""

    kind: str  # "parser" | "control"
    name: str
    type_params: list[str]
    params: list[SigParam]


@dataclass
class PackageDecl:
    name: str
    type_params: list[str]
    params: list[SigParam]


# --------------------------------------------------------------------------------------------
# literals and arithmetic
# --------------------------------------------------------------------------------------------

_WIDTH_LIT = re.compile(r"(\d+)([ws])(-?)(.+)")


def parse_int_literal(text: str) -> tuple[int, ir.BitsType | None]:
    """``8w255`` -> (255, bit<8>); ``16s-1`` -> (-1, int<16>); ``0x1_0`` -> (16, None)."""
    m = _WIDTH_LIT.fullmatch(text)
    width_type = None
    neg = False
    body = text
    if m:
        width = int(m.group(1))
        width_type = ir.BitsType(width, m.group(2) == "s")
        neg = m.group(3) == "-"
        body = m.group(4)
    body = body.replace("_", "")
    low = body[:2].lower()
    if low in ("0x", "0b", "0o"):
        value = int(body, 0)
    elif low == "0d":
        value = int(body[2:], 10)
    else:
        value = int(body, 10)
    if neg:
        value = -value
    return value, width_type


def wrap(value: int, t: ir.BitsType) -> int:
    """``value`` reduced to ``t`` (bit<W>: 0..2^W-1; int<W>: two's complement, signed)."""
    if t.width <= 0:
        return 0
    m = 1 << t.width
    v = value & (m - 1)
    if t.signed and v >= m >> 1:
        v -= m
    return v


def bits_range(t: ir.BitsType) -> tuple[int, int]:
    if t.signed:
        return -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
    return 0, (1 << t.width) - 1


def to_unsigned(value: int, width: int) -> int:
    return value & ((1 << width) - 1)


def is_bits(t: object) -> TypeGuard[ir.BitsType]:
    return isinstance(t, ir.BitsType)


def is_int_like(t: object) -> bool:
    return isinstance(t, ir.BitsType | ir.InfIntType)


def contains_typevar(t: object) -> bool:
    if isinstance(t, TypeVar):
        return True
    if isinstance(t, ir.ExternType):
        return any(contains_typevar(a) for a in t.type_args)
    if isinstance(t, BlockTypeRef):
        return any(contains_typevar(a) for a in t.args)
    return False


def substitute(t: object, binding: Mapping[str, object]) -> object:
    if isinstance(t, TypeVar):
        return binding.get(t.name, t)
    if isinstance(t, ir.ExternType) and t.type_args:
        # (the front end's extern types may hold type variables: a generic extern's)
        return ir.ExternType(t.name, tuple(cast(ir.Type, substitute(a, binding))
                                           for a in t.type_args))
    if isinstance(t, BlockTypeRef) and t.args:
        return BlockTypeRef(t.name, tuple(substitute(a, binding) for a in t.args))
    return t
