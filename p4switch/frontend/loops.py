"""``for`` statements, ``break`` and ``continue`` (P4_16 spec 1.2.5, for statement).

The three-clause form ``for (init; cond; update) body`` becomes ``ir.For`` directly (its
declarations are visible in the condition, the update and the body only). The range form
``for (T x in lo .. hi) body`` is lowered to one that evaluates ``lo`` and ``hi`` once and
cannot wrap around (``hi`` may be T's largest value): a flag holds "another iteration", and
the update compares with ``hi`` before incrementing. Loops run in controls, actions and
functions; ``break``/``continue`` need an enclosing loop of the same body (``loop_depth``,
reset for each inlined function or sub-control body).

A mixin of ``Elaborator``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lark import Tree

from p4switch import ir
from p4switch.frontend.bindings import BlockCtx, Scope, VarB
from p4switch.frontend.errors import unsupported

if TYPE_CHECKING:  # pragma: no cover
    from p4switch.frontend.elaborate import Elaborator

    _Base = Elaborator
else:
    _Base = object

_BOOL = ir.BoolType()


class Loops(_Base):
    loop_depth = 0

    def _loop_allowed(self, s: Tree, ctx: BlockCtx) -> None:
        if ctx.kind == "parser" and not self.frames:
            raise self.err(s, unsupported("for statements in parsers"))

    def _loop_body(self, body_t: Tree, scope: Scope, ctx: BlockCtx) -> ir.Block:
        self.loop_depth += 1
        try:
            return self.as_block(body_t, scope, ctx)
        finally:
            self.loop_depth -= 1

    def _simple_list(self, t: Tree | None, scope: Scope, ctx: BlockCtx) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for item in t.children if t is not None else []:
            if item.data == "for_var_decl":
                item = Tree("var_decl", item.children, item.meta)
            r = self.stmt(item, scope, ctx)
            if r is not None:
                out.append(r)
        return out

    def stmt_for_stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        self._loop_allowed(s, ctx)
        _annos, init_t, cond_t, update_t, body_t = s.children
        lscope = Scope(scope)
        init = self._simple_list(init_t, lscope, ctx)
        if cond_t is None:
            cond: ir.Expr = ir.Const(True, type=_BOOL)
        else:
            cond = self.expr(cond_t, lscope, ctx)
            if not isinstance(cond.type, ir.BoolType):
                raise self.err(cond_t, f"the condition of a for statement must be bool, not "
                                       f"{cond.type}")
            self._no_hoisting(cond_t, "the condition of a for statement")
        update = self._simple_list(update_t, lscope, ctx)
        body = self._loop_body(body_t, lscope, ctx)
        return ir.For(init, cond, update, body, loc=self.loc(s))

    def _no_hoisting(self, t: Tree, what: str) -> None:
        """A function call in a loop condition would have to run again at each test."""
        if self.hoisted:
            raise self.err(t, unsupported(f"function calls in {what}"))

    def stmt_for_in_stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        self._loop_allowed(s, ctx)
        _annos, _vannos, tref, name_t, _in, lo_t, _range, hi_t, body_t = s.children
        t = self.resolve_type(tref, scope)
        if not isinstance(t, ir.BitsType):
            raise self.err(tref, f"the variable of a range for statement must be bit<W> or "
                                 f"int<W>, not {t}")
        loc = self.loc(s)
        lo = self.coerce(self.expr(lo_t, scope, ctx), t, lo_t, "range start")
        hi = self.coerce(self.expr(hi_t, scope, ctx), t, hi_t, "range end")
        lscope = Scope(scope)
        x = ctx.fresh(str(name_t.children[0]))
        hv, more = ctx.fresh(f"{x}_last"), ctx.fresh(f"{x}_more")
        lscope.names[str(name_t.children[0])] = VarB(x, t, True, "variable")
        var, last = ir.Var(x, type=t, loc=loc), ir.Var(hv, type=t, loc=loc)
        flag = ir.Var(more, type=_BOOL, loc=loc)
        init: list[ir.Stmt] = [
            ir.VarDecl(x, t, lo, loc=loc), ir.VarDecl(hv, t, hi, loc=loc),
            ir.VarDecl(more, _BOOL, ir.Binary("<=", var, last, type=_BOOL, loc=loc), loc=loc)]
        update: list[ir.Stmt] = [
            ir.Assign(flag, ir.Binary("!=", var, last, type=_BOOL, loc=loc), loc=loc),
            ir.Assign(var, ir.Binary("+", var, ir.Const(1, type=t), type=t, loc=loc), loc=loc)]
        body = self._loop_body(body_t, lscope, ctx)
        return ir.For(init, flag, update, body, loc=loc)

    def stmt_break_stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        if not self.loop_depth:
            raise self.err(s, "break outside a for statement")
        return ir.Break(loc=self.loc(s))

    def stmt_continue_stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        if not self.loop_depth:
            raise self.err(s, "continue outside a for statement")
        return ir.Continue(loc=self.loc(s))
