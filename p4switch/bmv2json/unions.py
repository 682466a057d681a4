"""Header unions as the P4 front end lowers them (``p4switch.frontend.unions``), so a program
behaves the same from JSON as from source: BMv2 JSON leaves the union rules to the target
(``valid_union``, member validity), the IR spells them out."""

from __future__ import annotations

from p4switch import ir
from p4switch.bmv2json.layout import fields_of

_BOOL = ir.BoolType()


def is_union(e: ir.Expr) -> bool:
    return isinstance(e.type, ir.StructType) and e.type.union


def any_member_valid(u: ir.Expr) -> ir.Expr:
    """A union is valid when one of its members is."""
    terms = [ir.IsValid(ir.Member(u, f.name, type=f.type), type=_BOOL) for f in fields_of(u.type)]
    if not terms:
        return ir.Const(False, type=_BOOL)
    out: ir.Expr = terms[0]
    for t in terms[1:]:
        out = ir.Binary("||", out, t, type=_BOOL)
    return out


def with_siblings_invalid(target: ir.Expr, stmt: ir.Stmt) -> list[ir.Stmt]:
    """``stmt`` (which changed ``target``'s validity), then setInvalid() of the union's other
    members when ``target`` is one."""
    if not (isinstance(target, ir.Member) and is_union(target.base)):
        return [stmt]
    u = target.base
    if isinstance(u, ir.StackNext) and isinstance(stmt, ir.Extract):
        u = ir.StackLast(u.stack, type=u.type)  # extract advanced nextIndex
    return [stmt] + [ir.HeaderMethod(ir.Member(u, f.name, type=f.type), "setInvalid")
                     for f in fields_of(u.type) if f.name != target.field]
