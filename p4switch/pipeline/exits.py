"""Which statements may execute ``exit`` (directly, or in an action or table they run).

``exit`` is an exception in the generated code. Copy-out of an action's or an inlined
sub-control's out/inout parameters must still happen when one passes through (P4_16 spec,
exit statement), which needs a ``try`` around the call; this analysis keeps that ``try`` to the
calls that need it, so programs without such exits generate the code they always did.
"""

from __future__ import annotations

from p4switch import ir


class ExitAnalysis(ir.Visitor):
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
        return self.visit(s)

    def expr(self, e: ir.Expr) -> bool:
        """A table applied inside an expression (``t.apply().hit``) runs its actions."""
        return self.visit(e)

    def generic(self, node: object, *args: object) -> bool:
        return False  # a statement or expression that neither exits nor runs anything

    def visit_Exit(self, s: ir.Exit) -> bool:
        return True

    def visit_Block(self, s: ir.Block) -> bool:
        return self.stmts(s.stmts)

    def visit_If(self, s: ir.If) -> bool:
        return (self.expr(s.cond) or self.stmts(s.then.stmts)
                or (s.else_ is not None and self.stmts(s.else_.stmts)))

    def visit_ActionCall(self, s: ir.ActionCall) -> bool:
        return self.action(s.action)

    def visit_ApplyTable(self, s: ir.ApplyTable) -> bool:
        return self.table(s.table)

    def visit_SwitchAction(self, s: ir.SwitchAction) -> bool:
        return self.table(s.table) or any(
            c.body is not None and self.stmts(c.body.stmts) for c in s.cases)

    def visit_SwitchValue(self, s: ir.SwitchValue) -> bool:
        return self.expr(s.expr) or any(
            c.body is not None and self.stmts(c.body.stmts) for c in s.cases)

    def visit_Assign(self, s: ir.Assign) -> bool:
        return self.expr(s.rhs)

    def visit_VarDecl(self, s: ir.VarDecl) -> bool:
        return s.init is not None and self.expr(s.init)

    def visit_For(self, s: ir.For) -> bool:
        return (self.stmts(s.init) or self.expr(s.cond) or self.stmts(s.update)
                or self.stmts(s.body.stmts))

    def visit_TableHit(self, e: ir.TableHit) -> bool:
        return self.table(e.table)

    def visit_Unary(self, e: ir.Unary) -> bool:
        return self.expr(e.operand)

    def visit_Binary(self, e: ir.Binary) -> bool:
        return self.expr(e.left) or self.expr(e.right)

    def visit_Mux(self, e: ir.Mux) -> bool:
        return self.expr(e.cond) or self.expr(e.then) or self.expr(e.else_)
