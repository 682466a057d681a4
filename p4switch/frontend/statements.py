"""Statements: blocks (each statement preceded by what its expressions hoisted and with its
side effects in evaluation order), assignment, if, switch, exit, variables; l-value checks.

"""

from __future__ import annotations

from lark import Tree

from p4switch import ir
from p4switch.frontend.bindings import (
    ActionB,
    ApplyResult,
    BlockCtx,
    ParserCall,
    Scope,
    VarB,
)
from p4switch.frontend.parts import Part
from p4switch.frontend.trees import (
    expr_text,
)


class StmtElaborator(Part):
    """Statements and blocks (``parts.stmts``): each statement with what its
    expressions hoisted, assignment, if, switch, exit; the rules without a part of their own
    dispatch through ``Parts.statement_handlers``; l-value checks."""

    # ---------------------------------------------------------------- statements
    def block(self, b: Tree, scope: Scope, ctx: BlockCtx) -> ir.Block:
        out = ir.Block([], loc=self.loc(b))
        inner = Scope(scope)
        for s in b.children[1:]:
            r = self.stmt(s, inner, ctx)
            if isinstance(r, ParserCall):
                raise self.err(s, "a sub-parser can only be applied by a statement of a parser "
                                  "state itself (not inside a block)")
            if r is not None:
                out.stmts.append(r)
        return out

    def stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt | ParserCall | None:
        """One statement, preceded by the statements its expressions hoisted."""
        r, hoisted, effects = self.env.in_statement(lambda: self.core_stmt(s, scope, ctx))
        if effects and r is not None:
            if isinstance(r, ParserCall):
                raise self.err(s, "a sub-parser's arguments cannot call functions")
            lowered = self.parts.calls.evaluation_order(ctx).stmt(r)
            r = lowered[0] if len(lowered) == 1 else ir.Block(lowered, loc=self.loc(s))
        if not hoisted:
            return r
        if isinstance(r, ParserCall):
            raise self.err(s, "a sub-parser's arguments cannot call functions")
        return ir.Block([*hoisted, *([r] if r is not None else [])], loc=self.loc(s))

    def core_stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt | ParserCall | None:
        d = s.data
        handler = self.parts.statement_handlers.get(d)
        if handler is not None:
            return handler(s, scope, ctx)
        loc = self.loc(s)
        if d == "empty_stmt":
            return None
        if d == "block":
            return self.block(s, scope, ctx)
        if d == "assign_stmt":
            lhs_t, rhs_t = s.children
            lhs = self.parts.exprs.expr(lhs_t, scope, ctx)
            self.check_lvalue(lhs, lhs_t, scope)
            rhs = self.parts.exprs.expr_as(rhs_t, scope, ctx, lhs.type, "assignment")
            return self.parts.unions.union_others_invalid(lhs, ir.Assign(lhs, rhs, loc=loc))
        if d == "call_stmt":
            return self.parts.calls.call(s.children[0], scope, ctx, as_stmt=True)
        if d == "if_stmt":
            cond_t, then_t = s.children[0], s.children[1]
            else_t = s.children[2] if len(s.children) > 2 else None
            cond = self.parts.exprs.expr(cond_t, scope, ctx)
            if not isinstance(cond.type, ir.BoolType):
                raise self.err(cond_t, f"condition must be bool, not {cond.type}")
            then = self.as_block(then_t, scope, ctx)
            els = self.as_block(else_t, scope, ctx) if else_t is not None else None
            return ir.If(cond, then, els, loc=loc)
        if d == "exit_stmt":
            if self.env.frames:
                raise self.err(s, "exit is not allowed in a function")
            if ctx.kind == "parser":
                raise self.err(s, "exit is not allowed in a parser")
            return ir.Exit(loc=loc)
        if d == "switch_stmt":
            return self.switch(s, scope, ctx)
        if d == "var_decl":
            return self.parts.blocks.var_decl(s, scope, ctx)
        if d == "const_decl":
            self.parts.decls.decl_const_decl(s, scope, ctx)
            return None
        if d == "instantiation":
            raise self.err(s, "extern instances must be declared at block level, not inside "
                              "statements")
        raise self.err(s, f"unexpected statement {d}")  # pragma: no cover

    def as_block(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Block:
        if s.data == "block":
            return self.block(s, scope, ctx)
        r = self.stmt(s, Scope(scope), ctx)
        if isinstance(r, ParserCall):
            raise self.err(s, "a sub-parser can only be applied by a statement of a parser "
                              "state itself (not under a condition)")
        return ir.Block([r] if r is not None else [], loc=self.loc(s))

    def switch(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        expr_t = s.children[0]
        cases_t = s.children[1:]
        # switch (t.apply().action_run)
        if (expr_t.data == "member" and str(expr_t.children[1].children[0]) == "action_run"):
            target = self.parts.exprs.expr_or_ref(expr_t.children[0], scope, ctx)
            if not isinstance(target, ApplyResult):
                raise self.err(expr_t, "action_run is only available on table.apply()")
            table = target.table
            cases: list[ir.ActionCase] = []
            seen: set[str] = set()
            for c in cases_t:
                label, body_t = c.children
                if label.data == "sw_default":
                    acts = None
                else:
                    lt = label.children[0]
                    if not (isinstance(lt, Tree) and lt.data == "name_ref"):
                        raise self.err(lt, "switch labels on action_run must be action names")
                    b = scope.lookup(str(lt.children[0]))
                    if not isinstance(b, ActionB) or not any(
                        r.action == b.key for r in table.actions
                    ):
                        raise self.err(lt, f"'{lt.children[0]}' is not an action of table "
                                           f"'{table.name}'")
                    if b.key in seen:
                        raise self.err(lt, f"duplicate switch label '{lt.children[0]}'")
                    seen.add(b.key)
                    acts = [b.key]
                body = self.block(body_t, scope, ctx) if body_t is not None else None
                cases.append(ir.ActionCase(acts, body))
            return ir.SwitchAction(table.name, cases, loc=self.loc(s))
        e = self.parts.exprs.expr(expr_t, scope, ctx)
        if not isinstance(e.type, ir.BitsType | ir.EnumType | ir.ErrorType):
            raise self.err(expr_t, f"cannot switch on a value of type {e.type}")
        vcases: list[ir.ValueCase] = []
        for c in cases_t:
            label, body_t = c.children
            if label.data == "sw_default":
                vals = None
            else:
                lt = label.children[0]
                v = self.parts.exprs.expr_as(lt, scope, ctx, e.type, "switch label")
                if not isinstance(v, ir.Const):
                    raise self.err(lt, "switch labels must be compile-time constants")
                vals = [v]
            body = self.block(body_t, scope, ctx) if body_t is not None else None
            vcases.append(ir.ValueCase(vals, body))
        return ir.SwitchValue(e, vcases, loc=self.loc(s))

    def check_lvalue(self, e: ir.Expr, node: Tree, scope: Scope) -> None:
        root = e
        while True:
            if isinstance(root, ir.Member):
                root = root.base
            elif isinstance(root, ir.StackElem | ir.StackNext | ir.StackLast):
                root = root.stack
            elif isinstance(root, ir.Slice):
                root = root.base
            else:
                break
        if isinstance(root, ir.Var):
            b = self._var_binding(scope, root.name)
            if b is not None and not b.writable:
                raise self.err(node, f"cannot write to {b.what} '{expr_text(node).split('.')[0]}'")
            return
        if isinstance(root, ir.Lookahead):
            raise self.err(node, "cannot write to the result of lookahead")
        raise self.err(node, f"'{expr_text(node)}' cannot be written to")

    def _var_binding(self, scope: Scope, ir_name: str) -> VarB | None:
        s: Scope | None = scope
        while s is not None:
            for b in s.names.values():
                if isinstance(b, VarB) and b.ir_name == ir_name:
                    return b
            s = s.parent
        return None
