"""The small helpers every code generator of the pipeline shares: the build error, the names
generated code uses for P4 names, masks, constants, header leaves, parser successors.

At the bottom of ``p4switch.pipeline``: ``codegen`` (the general path), ``fused`` (the fused
path), ``varbit`` and ``v1model`` (the externs' generators) import from here, and this module
imports only ``ir``, so none of them needs a function-local import to dodge a cycle.
"""

from __future__ import annotations

import re

from p4switch import ir
from p4switch.errors import P4CompileError

AGG = (ir.HeaderType, ir.StructType, ir.StackType)
"""The aggregate types: values with fields (or elements), not scalars."""

SM_ROOT = "s"
"""The fused path's name prefix of standard_metadata's fields (``s_f_egress_spec``)."""


class BuildError(P4CompileError):
    """The program uses something p4switch cannot execute; raised when the pipeline is built
    (a P4CompileError, so drivers report it like a front-end error)."""

    def __init__(self, message: str, loc: ir.SourceLoc | None = None) -> None:
        super().__init__(loc, message)


def pyname(name: str) -> str:
    """The Python identifier of a P4 name (locals, functions): ``v_`` prefixed, so never a keyword."""
    return "v_" + re.sub(r"\W", "_", name)


def fattr(name: str) -> str:
    """The attribute of a header or struct field: ``f_`` prefixed."""
    return "f_" + re.sub(r"\W", "_", name)


def fpath(name: str) -> str:
    """Attribute path of a header layout field: ``s.a`` (a field of a struct-typed header
    field) is ``f_s.f_a``; a plain field name is ``fattr``'s."""
    return ".".join(fattr(p) for p in name.split("."))


def header_leaves(t: ir.HeaderType) -> tuple[ir.Field, ...]:
    """The header's scalar fields in wire order: a struct-typed field contributes its
    fields (named ``s.a``), recursively; a header without one gives its own fields."""
    if not any(isinstance(f.type, ir.StructType) for f in t.fields):
        return t.fields

    def walk(prefix: str, fields: tuple[ir.Field, ...]) -> list[ir.Field]:
        out: list[ir.Field] = []
        for f in fields:
            if isinstance(f.type, ir.StructType):
                out += walk(f"{prefix}{f.name}.", f.type.fields)
            else:
                out.append(ir.Field(prefix + f.name, f.type, f.annotations))
        return out

    return tuple(walk("", t.fields))


def mask(w: int) -> int:
    """``w`` one bits: what a ``bit<w>`` value is wrapped with."""
    return (1 << w) - 1


def unit_pieces(u: str, pieces: list[int], mask_top: bool) -> list[str]:
    """``struct.pack`` arguments for one layout unit whose value is expression ``u``: the unit
    cut into its pieces, top first. ``mask_top=False`` where ``u`` is known to fit the unit."""
    if len(pieces) == 1:
        return [u]
    out = []
    rest = sum(pieces)
    for j, pw in enumerate(pieces):
        rest -= pw
        if j == 0 and not mask_top:
            out.append(f"(({u}) >> {rest})")
        else:
            out.append(f"((({u}) >> {rest}) & {mask(pw)})" if rest else f"(({u}) & {mask(pw)})")
    return out


def enum_member(c: ir.Expr) -> str:
    """The member name of a Const of an enum type (e.g. HashAlgorithm.crc16 -> "crc16")."""
    if isinstance(c, ir.Const) and isinstance(c.type, ir.EnumType):
        for name, value in c.type.members:
            if value == c.value:
                return name
    if isinstance(c, ir.Const) and isinstance(c.value, str):
        return c.value
    raise BuildError(f"expected an enum constant, got {c!r}")


def const_int(e: ir.Expr) -> int:
    """The value of an integer (or boolean) constant; BuildError for anything else."""
    if isinstance(e, ir.Const) and isinstance(e.value, int | bool):
        return int(e.value)
    raise BuildError(f"expected a constant, got {e!r}")


def stack_size(stack: ir.Expr) -> int:
    """The size of a header stack (the type of ``stack``); BuildError for anything else."""
    if isinstance(stack.type, ir.StackType):
        return stack.type.size
    raise BuildError(f"expected a header stack, got {stack!r}")


def successors(tr: ir.Transition) -> list[str]:
    """The states a parser state's transition may go to, in case order."""
    if tr.select_keys is None:
        return [tr.next_state or "accept"]
    return [c.next_state for c in tr.cases]


_AGG = (ir.HeaderType, ir.StructType, ir.StackType)


def valid_terms(cond: ir.Expr) -> list[ir.Expr]:
    """Headers whose isValid() a condition requires (``a.isValid() && b.isValid() && ...``)."""
    if isinstance(cond, ir.IsValid):
        return [cond.header]
    if isinstance(cond, ir.Binary) and cond.op == "&&":
        return valid_terms(cond.left) + valid_terms(cond.right)
    return []
