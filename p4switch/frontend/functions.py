"""Function declarations (P4_16 spec section 10): ``T f(in/out/inout ...) { ... return e; }``.

A call is inlined where it is made, as sub-control applies are: the arguments are evaluated
left to right into fresh variables (copy-in; ``out`` ones start at zero / invalid), the body
runs with ``return e`` lowered to "store e, set a flag, skip the rest", then copy-out runs
left to right. Inside an expression the call becomes an ``ordering.Effect`` (its statements
and the variable holding its result), which ``ordering.EvaluationOrder`` places where the
call is evaluated once the statement around it is built: after the operands to its left,
and only on the taken side of ``&&``, ``||`` and ``?:``.

"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import cast

from lark import Tree

from p4switch import ir
from p4switch.frontend.bindings import Args, BlockCtx, Frame, Scope, VarB
from p4switch.frontend.errors import unsupported
from p4switch.frontend.lowering import lower_returns
from p4switch.frontend.ordering import Effect
from p4switch.frontend.parts import Part
from p4switch.frontend.types import BOOL, FuncSig
from p4switch.ir import has_return


@dataclass
class FunctionB:
    """A declared function: its signature and declaration (re-elaborated at each call)."""

    sig: FuncSig
    tree: Tree


def _value_type(t: object) -> ir.Type:
    """A function's parameter or return type: an IR type (generic functions are refused, so
    no type variable)."""
    return cast(ir.Type, t)


class Functions(Part):
    """Function declarations, their inlined calls and ``return`` (``parts.funcs``)."""

    def decl_function_decl(self, d: Tree) -> None:
        annos = self.parts.annos.annotations(d.children[0])
        proto = d.children[1]
        if proto.children[2] is not None:
            raise self.err(proto.children[2], unsupported("generic functions"))
        sig = self.parts.decls.sig(proto, self.env.globals, {}, annos)
        for p in sig.params:
            if isinstance(p.type, ir.ExternType):
                raise self.err(proto, unsupported(f"{p.type} parameters of functions"))
        b = FunctionB(sig, d)
        self.env.declare(self.env.globals, sig.name, b, proto.children[1])
        # type-check the body once, at the declaration, so errors show without a call
        ctx = BlockCtx("function", "", set())
        scope = Scope(self.env.globals)
        for p in sig.params:
            scope.names[p.name] = VarB(ctx.fresh(p.name), _value_type(p.type), p.direction != "in",
                                       "'in' parameter" if p.direction == "in" else "parameter")
        self.function_body(b, scope, ctx, None)

    def function_body(self, b: FunctionB, scope: Scope, ctx: BlockCtx,
                      result: str | None) -> ir.Block:
        name = b.sig.name
        if any(f.name == name for f in self.env.frames):
            raise self.err(b.tree.children[1], f"function '{name}' calls itself (recursion is "
                                               "not allowed in P4)")
        self.env.frames.append(Frame(name, _value_type(b.sig.ret), result))
        saved, depth, self.env.loop_depth = self.env.hoisted, self.env.loop_depth, 0
        try:
            return self.parts.stmts.block(b.tree.children[-1], scope, ctx)
        finally:
            self.env.hoisted, self.env.loop_depth = saved, depth
            self.env.frames.pop()

    def stmt_return_stmt(self, s: Tree, scope: Scope, ctx: BlockCtx) -> ir.Stmt:
        value_t = s.children[0]
        loc = self.loc(s)
        if not self.env.frames:
            if value_t is not None:
                raise self.err(s, "only a function can return a value")
            if ctx.kind == "parser":
                raise self.err(s, "return is not allowed in a parser")
            return ir.Return(loc=loc)
        f = self.env.frames[-1]
        if isinstance(f.ret, ir.VoidType):
            if value_t is not None:
                raise self.err(value_t, f"function '{f.name}' returns void: 'return' takes no "
                                        "value")
            return ir.Return(loc=loc)
        if value_t is None:
            raise self.err(s, f"function '{f.name}' must return a value of type {f.ret}")
        e = self.parts.exprs.expr_as(value_t, scope, ctx, f.ret, "return value")
        if f.result is None:  # the declaration's check
            return ir.Return(loc=loc)
        return ir.Block([ir.Assign(ir.Var(f.result, type=f.ret, loc=loc), e, loc=loc),
                         ir.Return(loc=loc)], loc=loc)

    def function_call(self, b: FunctionB, arg_trees: Args, c: Tree, scope: Scope,
                      ctx: BlockCtx, as_stmt: bool) -> ir.Expr | ir.Stmt:
        sig = b.sig
        what = f"function '{sig.name}'"
        if self.env.hoisted is None:
            raise self.err(c, f"{what} cannot be called here (only inside statements, "
                              "conditions and select expressions)")
        if not as_stmt and isinstance(sig.ret, ir.VoidType):
            raise self.err(c, f"{what} returns void: it has no value")
        if len(arg_trees) != len(sig.params):
            raise self.err(c, f"{what} expects {len(sig.params)} arguments, got "
                              f"{len(arg_trees)}")
        bound = self.parts.args.bind(arg_trees, [p.name for p in sig.params], what)
        loc = self.loc(c)
        self.env.effects += 1
        stmts: list[ir.Stmt] = []  # copy-in, then the body and copy-out
        fscope = Scope(self.env.globals)
        post: list[ir.Stmt] = []
        for p, a in zip(sig.params, bound, strict=True):
            pt = _value_type(p.type)
            pv = ctx.fresh(f"{sig.name}_{p.name}")
            var = ir.Var(pv, type=pt, loc=loc)
            if p.direction in ("out", "inout"):
                if isinstance(a, Tree) and a.data == "dontcare_arg":
                    if p.direction != "out":
                        raise self.err(a, f"'_' can only be passed for an out parameter "
                                          f"('{p.name}' of {what} is 'inout')")
                    stmts.append(ir.VarDecl(pv, pt, loc=loc))
                else:
                    e = self.parts.exprs.expr_as(a, scope, ctx, pt,
                                                 f"argument '{p.name}' of {what}")
                    self.parts.stmts.check_lvalue(e, a, scope)
                    e = self.parts.subs.pin_lvalue(e, stmts, ctx)
                    stmts.append(ir.VarDecl(pv, pt, e if p.direction == "inout"
                                                   else None, loc=loc))
                    post.append(ir.Assign(copy.deepcopy(e), var, loc=loc))
            else:
                e = self.parts.exprs.expr_as(a, scope, ctx, pt, f"argument '{p.name}' of {what}")
                stmts.append(ir.VarDecl(pv, pt, e, loc=loc))
            fscope.names[p.name] = VarB(pv, pt, p.direction != "in",
                                        "'in' parameter" if p.direction == "in" else "parameter")
        result = None
        ret = _value_type(sig.ret)
        if not isinstance(ret, ir.VoidType):
            result = ctx.fresh(f"{sig.name}_result")
            stmts.append(ir.VarDecl(result, ret, loc=loc))
        body = self.function_body(b, fscope, ctx, result)
        if has_return(body):
            flag = ctx.fresh(f"{sig.name}_returned")
            stmts.append(ir.VarDecl(flag, BOOL, ir.Const(False, type=BOOL), loc=loc))
            body = ir.Block(lower_returns(body.stmts, flag), loc=body.loc)
        stmts.extend([body, *post])
        if as_stmt:
            return ir.Block(stmts, loc=loc)
        assert result is not None  # a void function's call is refused inside expressions
        return Effect(stmts, ir.Var(result, type=ret, loc=loc), type=ret, loc=loc)
