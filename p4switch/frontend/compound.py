"""Compound assignment ``lhs op= rhs`` (P4_16 spec, assignment statement: ``+= -= *= /= %=
<<= >>= &= |= ^= |+|= |-|=``): ``lhs = lhs op rhs`` with ``lhs`` evaluated once.

"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from lark import Tree

from p4switch import ir
from p4switch.frontend.ordering import has_effect
from p4switch.frontend.parts import Part

if TYPE_CHECKING:  # pragma: no cover
    from p4switch.frontend.bindings import BlockCtx, Scope


class CompoundAssign(Part):
    """``lhs op= rhs`` statements (``parts.compound``)."""

    def stmt_compound_assign_stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        lhs_t, op_tok, rhs_t = s.children
        op = str(op_tok)[:-1]
        lhs = self.parts.exprs.expr(lhs_t, scope, ctx)
        self.parts.stmts.check_lvalue(lhs, lhs_t, scope)
        if not isinstance(lhs.type, ir.BitsType):
            raise self.err(op_tok, f"'{op}=' needs a bit<W> or int<W> left side, not {lhs.type}")
        # a run-time stack index on the left is evaluated once; a right side with side
        # effects (a function call) runs first, as p4c/BMv2 order it, then the location is
        # read and written -- unless the left side calls a function itself: then p4c
        # evaluates it (and saves its indexes) before the right side
        pre: list[ir.Stmt] = []
        left_first = has_effect(lhs)
        if left_first:
            lhs = self.parts.subs.pin_lvalue(lhs, pre, ctx)
        effects = self.env.effects
        rhs = self.parts.exprs.expr(rhs_t, scope, ctx)
        if self.env.effects != effects:
            tmp = ctx.fresh("rhs")
            pre.append(ir.VarDecl(tmp, rhs.type, rhs, loc=self.loc(rhs_t)))
            rhs = ir.Var(tmp, type=rhs.type, loc=self.loc(rhs_t))
        if not left_first:
            lhs = self.parts.subs.pin_lvalue(lhs, pre, ctx)
        value = self.parts.exprs.binary(op, copy.deepcopy(lhs), rhs, lhs_t, rhs_t, s)
        value = self.parts.exprs.coerce(value, lhs.type, rhs_t, f"'{op}='")
        assign = ir.Assign(lhs, value, loc=self.loc(s))
        return ir.Block([*pre, assign], loc=self.loc(s)) if pre else assign
