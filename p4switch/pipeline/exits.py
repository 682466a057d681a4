"""Which statements may execute ``exit`` (directly, or in an action or table they run).

``exit`` is an exception in the generated code. Copy-out of an action's or an inlined
sub-control's out/inout parameters must still happen when one passes through (P4_16 spec,
exit statement), which needs a ``try`` around the call; this analysis keeps that ``try`` to the
calls that need it, so programs without such exits generate the code they always did.
"""

from __future__ import annotations

from p4switch import ir


class ExitAnalysis:
    """``may_exit`` over one block's statements, with the program's actions and the block's
    tables; results per action are memoised (an action in progress counts as not exiting,
    which is right for the recursion P4 forbids anyway)."""

    def __init__(self, program: ir.Program, tables: dict[str, ir.Table]) -> None:
        self.program = program
        self.tables = tables
        self._actions: dict[str, bool] = {}

    def action(self, key: str) -> bool:
        if key not in self._actions:
            self._actions[key] = False
            act = self.program.actions.get(key)
            self._actions[key] = act is not None and self.stmts(act.body.stmts)
        return self._actions[key]

    def table(self, name: str) -> bool:
        t = self.tables.get(name)
        return t is not None and any(self.action(r.action) for r in t.actions)

    def stmts(self, ss: list[ir.Stmt]) -> bool:
        return any(self.stmt(s) for s in ss)

    def stmt(self, s: ir.Stmt) -> bool:
        if isinstance(s, ir.Exit):
            return True
        if isinstance(s, ir.Block):
            return self.stmts(s.stmts)
        if isinstance(s, ir.If):
            return (self.expr(s.cond) or self.stmts(s.then.stmts)
                    or (s.else_ is not None and self.stmts(s.else_.stmts)))
        if isinstance(s, ir.ActionCall):
            return self.action(s.action)
        if isinstance(s, ir.ApplyTable):
            return self.table(s.table)
        if isinstance(s, ir.SwitchAction):
            return self.table(s.table) or any(
                c.body is not None and self.stmts(c.body.stmts) for c in s.cases)
        if isinstance(s, ir.SwitchValue):
            return self.expr(s.expr) or any(
                c.body is not None and self.stmts(c.body.stmts) for c in s.cases)
        if isinstance(s, ir.Assign):
            return self.expr(s.rhs)
        if isinstance(s, ir.VarDecl):
            return s.init is not None and self.expr(s.init)
        if isinstance(s, ir.For):
            return (self.stmts(s.init) or self.expr(s.cond) or self.stmts(s.update)
                    or self.stmts(s.body.stmts))
        return False

    def expr(self, e: ir.Expr) -> bool:
        """A table applied inside an expression (``t.apply().hit``) runs its actions."""
        if isinstance(e, ir.TableHit):
            return self.table(e.table)
        if isinstance(e, ir.Unary):
            return self.expr(e.operand)
        if isinstance(e, ir.Binary):
            return self.expr(e.left) or self.expr(e.right)
        if isinstance(e, ir.Mux):
            return self.expr(e.cond) or self.expr(e.then) or self.expr(e.else_)
        return False
