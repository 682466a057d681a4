"""Lowering ``return`` in the bodies the front end inlines (sub-controls, functions): a flag
set where ``return`` was, and the statements after it guarded by the flag (loops break)."""

from __future__ import annotations

from dataclasses import replace

from p4switch import ir
from p4switch.ir import has_return

_BOOL = ir.BoolType()


def lower_returns(stmts: list[ir.Stmt], flag: str, in_loop: bool = False) -> list[ir.Stmt]:
    """The statements of an inlined control body with ``return`` (which must end only the
    sub-control) expressed without it: ``return`` sets the bool ``flag`` and everything after
    a statement that may have returned runs under ``if (!flag)``. Inside a loop ``return``
    also breaks out of it, and the loop's condition tests the flag first (outer loops)."""
    out: list[ir.Stmt] = []
    for i, s in enumerate(stmts):
        if isinstance(s, ir.Return):
            out.append(ir.Assign(ir.Var(flag, type=_BOOL), ir.Const(True, type=_BOOL),
                                 loc=s.loc))
            if in_loop:
                out.append(ir.Break(loc=s.loc))
            return out  # the rest of this list is unreachable
        if not has_return(s):
            out.append(s)
            continue
        out.append(lower_stmt(s, flag, in_loop))
        rest = lower_returns(stmts[i + 1:], flag, in_loop)
        if rest:
            out.append(ir.If(ir.Unary("!", ir.Var(flag, type=_BOOL), type=_BOOL),
                             ir.Block(rest)))
        return out
    return out


def lower_block(b: ir.Block, flag: str, in_loop: bool = False) -> ir.Block:
    return replace(b, stmts=lower_returns(b.stmts, flag, in_loop))


def lower_stmt(s: ir.Stmt, flag: str, in_loop: bool = False) -> ir.Stmt:
    if isinstance(s, ir.Block):
        return lower_block(s, flag, in_loop)
    if isinstance(s, ir.If):
        return ir.If(s.cond, lower_block(s.then, flag, in_loop),
                     lower_block(s.else_, flag, in_loop) if s.else_ is not None else None,
                     loc=s.loc)
    if isinstance(s, ir.SwitchAction):
        return ir.SwitchAction(s.table, [
            ir.ActionCase(c.actions,
                          lower_block(c.body, flag, in_loop) if c.body is not None else None)
            for c in s.cases], loc=s.loc)
    if isinstance(s, ir.SwitchValue):
        return ir.SwitchValue(s.expr, [
            ir.ValueCase(c.values,
                         lower_block(c.body, flag, in_loop) if c.body is not None else None)
            for c in s.cases], loc=s.loc)
    if isinstance(s, ir.For):
        not_returned = ir.Unary("!", ir.Var(flag, type=_BOOL), type=_BOOL)
        return replace(s, cond=ir.Binary("&&", not_returned, s.cond, type=_BOOL),
                       body=lower_block(s.body, flag, True))
    return s  # pragma: no cover - has_return covers exactly the cases above
