"""``for`` statements, ``break`` and ``continue`` (P4_16 spec 1.2.5, for statement).

The three-clause form ``for (init; cond; update) body`` becomes ``ir.For`` directly (its
declarations are visible in the condition, the update and the body only). The range form
``for (T x in lo .. hi) body`` is lowered to one that evaluates ``lo`` and ``hi`` once and
cannot wrap around (``hi`` may be T's largest value): a flag holds "another iteration", and
the update compares with ``hi`` before incrementing. The collection forms ``for (T x in hs)``
(a header stack, of headers or header unions) and ``for (T x in (list<T>){a, b})`` become an
index loop whose body starts by copying the current element into ``x``
(``_for_in_collection``). Loops run in controls, actions and
functions; ``break``/``continue`` need an enclosing loop of the same body (``loop_depth``,
reset for each inlined function or sub-control body).

"""

from __future__ import annotations

from lark import Tree

from p4switch import ir
from p4switch.frontend.bindings import BlockCtx, ParserCall, Scope, VarB
from p4switch.frontend.errors import unsupported
from p4switch.frontend.ordering import has_effect
from p4switch.frontend.parts import Part
from p4switch.frontend.types import BIT32, BOOL


class Loops(Part):
    """``for`` statements, ``break`` and ``continue`` (``parts.loops``)."""

    def _loop_allowed(self, s: Tree, ctx: BlockCtx) -> None:
        if ctx.kind == "parser" and not self.env.frames:
            raise self.err(s, unsupported("for statements in parsers"))

    def _loop_body(self, body_t: Tree, scope: Scope, ctx: BlockCtx) -> ir.Block:
        self.env.loop_depth += 1
        try:
            return self.parts.stmts.as_block(body_t, scope, ctx)
        finally:
            self.env.loop_depth -= 1

    def _simple_list(self, t: Tree | None, scope: Scope, ctx: BlockCtx) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for item in t.children if t is not None else []:
            if item.data == "for_var_decl":
                item = Tree("var_decl", item.children, item.meta)
            r = self.parts.stmts.stmt(item, scope, ctx)
            if isinstance(r, ParserCall):  # pragma: no cover - loops are refused in parsers
                raise self.err(item, "a sub-parser can only be applied by a statement of a "
                                     "parser state itself")
            if r is not None:
                out.append(r)
        return out

    def stmt_for_stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        self._loop_allowed(s, ctx)
        _annos, init_t, cond_t, update_t, body_t = s.children
        lscope = Scope(scope)
        init = self._simple_list(init_t, lscope, ctx)
        if cond_t is None:
            cond: ir.Expr = ir.Const(True, type=BOOL)
        else:
            cond = self.parts.exprs.expr(cond_t, lscope, ctx)
            if not isinstance(cond.type, ir.BoolType):
                raise self.err(cond_t, f"the condition of a for statement must be bool, not "
                                       f"{cond.type}")
            if has_effect(cond):  # it would have to run again at each test
                raise self.err(cond_t, unsupported("function calls in the condition of a for "
                                                   "statement"))
        update = self._simple_list(update_t, lscope, ctx)
        body = self._loop_body(body_t, lscope, ctx)
        return ir.For(init, cond, update, body, loc=self.loc(s))

    def stmt_for_in_stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        self._loop_allowed(s, ctx)
        _annos, _vannos, tref, name_t, _in, lo_t, _range, hi_t, body_t = s.children
        if hi_t is None:
            return self._for_in_collection(s, scope, ctx)
        t = self.parts.decls.resolve_type(tref, scope)
        if not isinstance(t, ir.BitsType):
            raise self.err(tref, f"the variable of a range for statement must be bit<W> or "
                                 f"int<W>, not {t}")
        loc = self.loc(s)
        lo = self.parts.exprs.expr_as(lo_t, scope, ctx, t, "range start")
        hi = self.parts.exprs.expr_as(hi_t, scope, ctx, t, "range end")
        lscope = Scope(scope)
        x = ctx.fresh(str(name_t.children[0]))
        hv, more = ctx.fresh(f"{x}_last"), ctx.fresh(f"{x}_more")
        lscope.names[str(name_t.children[0])] = VarB(x, t, True, "variable")
        var, last = ir.Var(x, type=t, loc=loc), ir.Var(hv, type=t, loc=loc)
        flag = ir.Var(more, type=BOOL, loc=loc)
        init: list[ir.Stmt] = [
            ir.VarDecl(x, t, lo, loc=loc), ir.VarDecl(hv, t, hi, loc=loc),
            ir.VarDecl(more, BOOL, ir.Binary("<=", var, last, type=BOOL, loc=loc), loc=loc)]
        update: list[ir.Stmt] = [
            ir.Assign(flag, ir.Binary("!=", var, last, type=BOOL, loc=loc), loc=loc),
            ir.Assign(var, ir.Binary("+", var, ir.Const(1, type=t), type=t, loc=loc), loc=loc)]
        body = self._loop_body(body_t, lscope, ctx)
        return ir.For(init, flag, update, body, loc=loc)

    def stmt_break_stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        if not self.env.loop_depth:
            raise self.err(s, "break outside a for statement")
        return ir.Break(loc=self.loc(s))

    def stmt_continue_stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        if not self.env.loop_depth:
            raise self.err(s, "continue outside a for statement")
        return ir.Continue(loc=self.loc(s))

    def _for_in_collection(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        """``for (T x in hs)`` over a header stack (of headers or header unions) and
        ``for (T x in (list<T>){a, b})``: an index runs over the elements; ``x`` is a copy
        of the current one (writes to ``x`` do not reach the collection). A stack's element
        is read when its iteration starts (all ``size`` elements, valid or not); a list's
        items are evaluated once, before the first iteration."""
        _annos, _vannos, tref, name_t, _in, coll_t, _range, _hi, body_t = s.children
        t = self.parts.decls.resolve_type(tref, scope)
        loc = self.loc(s)
        items = self._list_items(coll_t, scope, ctx)
        coll: ir.Expr | None = None
        if items is None:
            coll = self.parts.exprs.expr(coll_t, scope, ctx)
            if not isinstance(coll.type, ir.StackType):
                raise self.err(coll_t, f"a for statement iterates over a header stack, a "
                                       f"list (list<T>){{...}} or a range lo .. hi, not "
                                       f"{coll.type}")
            if coll.type.elem != t:
                raise self.err(tref, f"the variable of a for statement over {coll.type} must "
                                     f"have type {coll.type.elem}, not {t}")
            count = coll.type.size
        else:
            elem_t, item_trees = items
            if elem_t != t:
                raise self.err(tref, f"the variable of a for statement over list<{elem_t}> "
                                     f"must have type {elem_t}, not {t}")
            count = len(item_trees)
        name = str(name_t.children[0])
        x, i = ctx.fresh(name), ctx.fresh(f"{name}_index")
        idx = ir.Var(i, type=BIT32, loc=loc)
        init: list[ir.Stmt] = [ir.VarDecl(i, BIT32, ir.Const(0, type=BIT32), loc=loc)]
        if coll is not None:
            current: ir.Stmt = ir.VarDecl(
                x, t, ir.StackElem(coll, idx, type=t, loc=loc), loc=loc)
        else:
            # the items, once, into locals; the iteration picks the index-th one
            names = []
            for k, it in enumerate(item_trees):
                e = self.parts.exprs.expr_as(it, scope, ctx, t, "list element")
                names.append(ctx.fresh(f"{name}_item{k}"))
                init.append(ir.VarDecl(names[-1], t, e, loc=loc))
            current = ir.VarDecl(x, t, None, loc=loc)
            pick: ir.Stmt | None = None
            for k in reversed(range(count)):
                set_x = ir.Block([ir.Assign(ir.Var(x, type=t, loc=loc),
                                            ir.Var(names[k], type=t, loc=loc), loc=loc)], loc=loc)
                if pick is None:
                    pick = set_x
                else:
                    test = ir.Binary("==", idx, ir.Const(k, type=BIT32), type=BOOL, loc=loc)
                    pick = ir.If(test, set_x, ir.Block([pick], loc=loc), loc=loc)
            current = ir.Block([current, *([pick] if pick is not None else [])], loc=loc)
        lscope = Scope(scope)
        lscope.names[name] = VarB(x, t, True, "variable")
        body = self._loop_body(body_t, lscope, ctx)
        cond = ir.Binary("<", idx, ir.Const(count, type=BIT32), type=BOOL, loc=loc)
        update: list[ir.Stmt] = [ir.Assign(idx, ir.Binary("+", idx, ir.Const(1, type=BIT32),
                                                          type=BIT32, loc=loc), loc=loc)]
        return ir.For(init, cond, update, ir.Block([current, *body.stmts], loc=loc), loc=loc)

    def _list_items(self, t: Tree, scope: Scope, ctx: BlockCtx
                    ) -> tuple[ir.Type, list[Tree]] | None:
        """(T, the item trees) if ``t`` is ``(list<T>){...}``, else None."""
        if not (isinstance(t, Tree) and t.data == "cast"):
            return None
        tref, operand = t.children
        lt = tref.children[0] if tref.data == "type_ref" and tref.children else tref
        if not (isinstance(lt, Tree) and lt.data == "list_type"):
            return None
        args = [a for a in lt.children[0].children if isinstance(a, Tree)]
        if len(args) != 1:
            raise self.err(lt, "list<T> takes one type argument")
        elem_t = self.parts.decls.resolve_type_arg(args[0], scope, {})
        if not (isinstance(operand, Tree) and operand.data == "list_expr"):
            raise self.err(operand, unsupported("list<T> values other than a list "
                                                "expression {...}"))
        exprs = operand.children[0]
        return elem_t, [c for c in (exprs.children if exprs is not None else [])
                        if isinstance(c, Tree)]

