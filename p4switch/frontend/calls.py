"""Calls: functions, actions, extern functions and methods, header/stack/table/packet
methods and sub-block applies, with their arguments bound to the parameters.

"""

from __future__ import annotations

from typing import cast

from lark import Token, Tree

from p4switch import ir
from p4switch.frontend.arguments import is_dontcare
from p4switch.frontend.bindings import (
    ActionB,
    ApplyResult,
    Args,
    BlockB,
    BlockCtx,
    FuncB,
    InstanceB,
    MethodRef,
    Scope,
    SubInstB,
    VarB,
)
from p4switch.frontend.errors import unsupported
from p4switch.frontend.functions import FunctionB
from p4switch.frontend.ordering import EvaluationOrder
from p4switch.frontend.parts import Part
from p4switch.frontend.trees import (
    expr_text,
)
from p4switch.frontend.types import (
    BIT32,
    BOOL,
    FuncSig,
    SigParam,
    TypeVar,
    substitute,
)
from p4switch.frontend.varbit import SIZE_METHODS


class Calls(Part):
    """Every call (``parts.calls``): functions, actions, extern functions and methods,
    header, stack, table and packet methods, sub-block applies; and the evaluation order of a
    statement whose expressions call functions."""

    # ---------------------------------------------------------------- calls
    def call(self, c: Tree, scope: Scope, ctx: BlockCtx, as_stmt: bool):
        """A call; returns an ir.Stmt when as_stmt, else an ir.Expr or ApplyResult."""
        if c.data not in ("call", "generic_call"):
            if as_stmt:
                raise self.err(c, "expression statements must be calls")
        if c.data == "call":
            callee_t, args_t = c.children
            targs_t: list[Tree] = []
        elif c.data == "generic_call":
            callee_t = c.children[0]
            args_t = c.children[-1]
            targs_t = [x for x in c.children[1:-1] if isinstance(x, Tree)]
        else:
            raise self.err(c, "expression statements must be calls")
        targs = tuple(self.parts.decls.resolve_type_arg(a, scope, {}) for a in targs_t)
        arg_trees = self.parts.args.arg_list(args_t)
        loc = self.loc(c)

        if callee_t.data == "name_ref":
            fname = str(callee_t.children[0])
            b = scope.lookup(fname)
            if isinstance(b, FunctionB):
                if targs:
                    raise self.err(c, "functions take no type arguments")
                return self.parts.funcs.function_call(b, arg_trees, c, scope, ctx, as_stmt)
            if isinstance(b, ActionB):
                if self.env.frames:
                    raise self.err(c, "a function cannot call an action")
                if not as_stmt:
                    raise self.err(c, "actions cannot be called inside expressions")
                if ctx.kind == "parser":
                    raise self.err(c, "actions cannot be called from a parser")
                if targs:
                    raise self.err(c, "actions take no type arguments")
                return self.action_call(b.key, fname, arg_trees, c, scope, ctx)
            if isinstance(b, FuncB) and fname == "static_assert" and b is \
                    self.env.globals.lookup(fname):
                return self.static_assert(arg_trees, c, scope, ctx, as_stmt)
            if isinstance(b, FuncB):
                return self.extern_func_call(fname, b.sigs, targs, arg_trees, c, scope, ctx,
                                             as_stmt)
            if b is None:
                raise self.err(callee_t, f"unknown function or action '{fname}'")
            raise self.err(callee_t, f"'{fname}' cannot be called")
        if callee_t.data == "type_member" and str(callee_t.children[1].children[0]) == "apply":
            b = self.env.globals.lookup(str(callee_t.children[0]))
            if isinstance(b, BlockB):
                return self.parts.direct.direct_apply(b, cast(Token, callee_t.children[0]),
                                                      arg_trees, c, scope, ctx, as_stmt)
        ref = self.parts.exprs.expr_or_ref(callee_t, scope, ctx)
        if not isinstance(ref, MethodRef):
            raise self.err(callee_t, f"'{expr_text(callee_t)}' cannot be called")
        m = ref.method
        if ref.kind == "header":
            h = cast(ir.Expr, ref.target)
            if arg_trees:
                raise self.err(c, f"{m}() takes no arguments")
            if m in SIZE_METHODS:  # a compile-time value: no effect as a statement
                return None if as_stmt else self.parts.varbits.size_method(h, m, c)
            if m == "isValid":
                if as_stmt:  # a method call statement whose value is unused: no effect
                    return None
                if isinstance(h.type, ir.StructType):  # a header_union
                    return self.parts.unions.union_valid(h, loc)
                return ir.IsValid(h, type=BOOL, loc=loc)
            if isinstance(h.type, ir.StructType):
                raise self.err(c, f"a header_union has no method {m}() (call it on a member)")
            if m in ("setValid", "setInvalid"):
                if not as_stmt:
                    raise self.err(c, f"{m}() does not return a value")
                self.parts.stmts.check_lvalue(h, callee_t.children[0], scope)
                # a union member: setValid invalidates the others, and setInvalid of any
                # member invalidates the whole union (spec 8.19)
                return self.parts.unions.union_others_invalid(h, ir.HeaderMethod(h, m, loc=loc))
        if ref.kind == "stack":
            if not as_stmt:
                raise self.err(c, f"{m}() does not return a value")
            if len(arg_trees) != 1:
                raise self.err(c, f"{m}() takes one argument")
            (count,) = self.parts.args.bind(arg_trees, ["count"], f"{m}()")
            n = self.parts.decls.const_int(count, scope, f"{m} count")
            if n < 0:
                raise self.err(count, f"{m} count must not be negative")
            stack = cast(ir.Expr, ref.target)
            self.parts.stmts.check_lvalue(stack, callee_t.children[0], scope)
            return ir.StackMethod(stack, m, n, loc=loc)
        if ref.kind == "table":
            table = cast(ir.Table, ref.target)
            if arg_trees:
                raise self.err(c, "apply() takes no arguments")
            if ctx.in_action:
                raise self.err(c, "tables cannot be applied inside actions")
            if as_stmt:
                return ir.ApplyTable(table.name, loc=loc)
            return ApplyResult(table, c)
        if ref.kind == "subblock":
            sub = cast(SubInstB, ref.target)
            if not as_stmt:
                raise self.err(c, f"{sub.name}.apply() does not return a value")
            if ctx.in_action:
                raise self.err(c, f"a {sub.kind} cannot be applied inside an action")
            if targs:
                raise self.err(c, "apply() takes no type arguments")
            return self.parts.subs.sub_apply(sub, arg_trees, c, scope, ctx)
        if ref.kind == "packet_in":
            if ctx.kind != "parser":
                raise self.err(c, f"packet_in.{m} is only available in parsers")
            if m == "extract":
                if len(arg_trees) == 2:
                    return self.parts.varbits.sized_extract(arg_trees, c, scope, ctx, as_stmt)
                if len(arg_trees) != 1:
                    raise self.err(c, "extract() takes one header")
                (hdr,) = self.parts.args.bind(arg_trees, ["hdr"], "extract()")
                if is_dontcare(hdr):
                    # extract<T>(_): the header is read (and the packet checked) into a
                    # variable nothing reads
                    if len(targs) != 1 or not isinstance(targs[0], ir.HeaderType) or \
                            targs[0].varbit is not None:
                        raise self.err(c, "extract(_) needs a fixed-size header type: "
                                          "extract<T>(_)")
                    if not as_stmt:
                        raise self.err(c, "extract() does not return a value")
                    tmp = ir.Var(ctx.fresh("discarded"), type=targs[0], loc=loc)
                    return ir.Block([ir.VarDecl(tmp.name, targs[0], loc=loc),
                                     ir.Extract(tmp, loc=loc)], loc=loc)
                h = self.parts.exprs.expr(hdr, scope, ctx)
                if not isinstance(h.type, ir.HeaderType):
                    raise self.err(hdr, f"extract() needs a header, not {h.type}")
                if h.type.varbit is not None:
                    raise self.err(c, f"header {h.type.name} has a varbit field: extract it "
                                      f"with extract(hdr, bits)")
                self.parts.stmts.check_lvalue(h, hdr, scope)
                if not as_stmt:
                    raise self.err(c, "extract() does not return a value")
                return self.parts.unions.union_others_invalid(h, ir.Extract(h, loc=loc))
            if m == "lookahead":
                if len(targs) != 1 or arg_trees:
                    raise self.err(c, "lookahead takes one type argument and no arguments: "
                                      "lookahead<T>()")
                t = targs[0]
                try:
                    ir.type_width(t)
                except TypeError:
                    raise self.err(c, f"lookahead<{t}> needs a fixed-width type") from None
                if as_stmt:  # the value is unused; a too short packet still fails
                    return ir.VarDecl(ctx.fresh("lookahead"), t, ir.Lookahead(type=t, loc=loc),
                                      loc=loc)
                return ir.Lookahead(type=t, loc=loc)
            if m == "advance":
                if len(arg_trees) != 1:
                    raise self.err(c, "advance() takes one argument")
                (size,) = self.parts.args.bind(arg_trees, ["sizeInBits"], "advance()")
                bits = self.parts.exprs.expr_as(size, scope, ctx, BIT32, "advance")
                return ir.Advance(bits, loc=loc)
            raise self.err(c, unsupported(f"packet_in.{m}()"))
        if ref.kind == "packet_out":
            if m != "emit" or len(arg_trees) != 1:
                raise self.err(c, "packet_out supports emit(header) only")
            (hdr,) = self.parts.args.bind(arg_trees, ["hdr"], "emit()")
            h = self.parts.exprs.expr(hdr, scope, ctx)
            if not self._emittable(h.type):
                raise self.err(hdr, f"emit() needs a header, header stack or struct "
                                             f"of headers, not {h.type}")
            return ir.Emit(h, loc=loc)
        if ref.kind == "instance":
            ib = cast(InstanceB, ref.target)
            sigs = ib.decl.methods.get(m)
            if not sigs:
                raise self.err(callee_t, f"extern {ib.decl.name} has no method '{m}'")
            binding = dict(zip(ib.decl.type_params, ib.type.type_args, strict=False))
            sigs = [FuncSig(s.name, s.type_params,
                            [SigParam(p.name, p.direction, substitute(p.type, binding))
                             for p in s.params], substitute(s.ret, binding)) for s in sigs]
            return self.invoke(ib.inst.name, m, sigs, targs, arg_trees, c, scope, ctx, as_stmt)
        raise self.err(c, f"'{expr_text(callee_t)}' cannot be called")  # pragma: no cover

    def _emittable(self, t: object) -> bool:
        if isinstance(t, ir.HeaderType | ir.StackType):
            return True
        if isinstance(t, ir.StructType):
            return all(self._emittable(f.type) for f in t.fields)
        return False

    def static_assert(self, arg_trees: Args, c: Tree, scope: Scope, ctx: BlockCtx,
                      as_stmt: bool) -> ir.Expr | None:
        """core.p4's ``static_assert(check[, message])``: checked here, at compile time (an
        error when ``check`` is false); its value is ``true``."""
        names = ["check", "message"][:len(arg_trees)]
        if not 1 <= len(arg_trees) <= 2:
            raise self.err(c, f"static_assert expects 1 or 2 arguments, got {len(arg_trees)}")
        bound = self.parts.args.bind(arg_trees, names, "static_assert")
        check = self.parts.exprs.expr_as(bound[0], scope, ctx, ir.BoolType(), "static_assert")
        if not isinstance(check, ir.Const):
            raise self.err(bound[0], "static_assert needs a compile-time known condition")
        message = ""
        if len(bound) == 2:
            m = self.parts.exprs.expr(bound[1], scope, ctx)
            if not (isinstance(m, ir.Const) and isinstance(m.type, ir.StringType)):
                raise self.err(bound[1], "the message of static_assert must be a string")
            message = f": {m.value}"
        if not check.value:
            raise self.err(c, f"static assertion failed{message}")
        return None if as_stmt else ir.Const(True, type=ir.BoolType(), loc=self.loc(c))

    def action_call(self, key: str, name: str, arg_trees: Args, c: Tree, scope: Scope,
                    ctx: BlockCtx) -> ir.ActionCall:
        action = self.env.actions[key]
        trees = self.parts.args.with_defaults(arg_trees, [p.name for p in action.params],
                                              self.env.action_defaults.get(key, {}),
                                              f"action '{name}'", c)
        args = [self.parts.args.arg_value(a, p.type, p.direction,
                                          f"argument '{p.name}' of '{name}'", scope, ctx,
                                          action=True)
                for p, a in zip(action.params, trees, strict=True)]
        return ir.ActionCall(key, args, loc=self.loc(c))

    def extern_func_call(self, fname: str, sigs: list[FuncSig], targs: tuple, arg_trees,
                         c: Tree, scope: Scope, ctx: BlockCtx, as_stmt: bool):
        if fname == "verify" and ctx.kind != "parser":
            raise self.err(c, "verify() is only available in parsers")
        r = self.invoke(None, fname, sigs, targs, arg_trees, c, scope, ctx, as_stmt)
        if fname == "digest" and isinstance(r, ir.ExternCall):
            t = r.type_args[0] if r.type_args else r.args[1].type
            if not isinstance(t, ir.StructType):
                raise self.err(c, f"digest data must be a struct type, not {t}")
            if t not in self.env.digests:
                self.env.digests.append(t)
        return r

    def _standard_metadata_name(self, scope: Scope) -> str:
        """The name under which the current block sees its standard_metadata_t parameter."""
        s: Scope | None = scope
        while s is not None:
            for n, b in s.names.items():
                if isinstance(b, VarB) and isinstance(b.type, ir.StructType) and \
                        b.type.name == "standard_metadata_t":
                    return n
            s = s.parent
        return "standard_metadata"

    def invoke(self, instance: str | None, method: str, sigs: list[FuncSig], targs: tuple,
               arg_trees: Args, c: Tree, scope: Scope, ctx: BlockCtx, as_stmt: bool):
        cands = [s for s in sigs if arg_trees.fits([p.name for p in s.params])]
        what = f"{method}" if instance is None else f"{instance}.{method}"
        if not cands and any(arg_trees.names):
            same = [s for s in sigs if len(s.params) == len(arg_trees)]
            if same:  # reports the first name that matches no parameter
                self.parts.args.bind(arg_trees, [p.name for p in same[0].params], what)
        if not cands:
            counts = sorted({len(s.params) for s in sigs})
            msg = (f"{what} expects {' or '.join(map(str, counts))} arguments, got "
                   f"{len(arg_trees)}")
            if instance is None and method == "mark_to_drop" and not arg_trees:
                sm = self._standard_metadata_name(scope)
                msg += (f": pass the standard metadata, mark_to_drop({sm}) (the argument-less "
                        "mark_to_drop() of old v1model versions is rejected by current p4c too)")
            raise self.err(c, msg)
        sig = cands[0]
        bound = self.parts.args.bind(arg_trees, [p.name for p in sig.params], what)
        if targs and len(targs) != len(sig.type_params):
            raise self.err(c, f"{what} expects {len(sig.type_params)} type arguments, got "
                              f"{len(targs)}")
        binding: dict[str, object] = dict(zip(sig.type_params, targs, strict=False))
        raw = [None if is_dontcare(a) else self.parts.exprs.expr(a, scope, ctx) for a in bound]
        # infer type parameters from arguments that have a definite type
        for p, e in zip(sig.params, raw, strict=True):
            if isinstance(p.type, TypeVar) and p.type.name not in binding and e is not None \
                    and not isinstance(e.type, ir.InfIntType):
                binding[p.type.name] = e.type
        for p, e in zip(sig.params, raw, strict=True):
            if isinstance(p.type, TypeVar) and p.type.name not in binding and e is not None:
                binding[p.type.name] = e.type
        args: list[ir.Expr] = []
        for p, e, a in zip(sig.params, raw, bound, strict=True):
            pt = substitute(p.type, binding)
            if e is None:  # `_`: a discarded variable of the parameter's type
                args.append(self.parts.args.arg_value(a, pt, p.direction,
                                                      f"argument '{p.name}' of {what}", scope, ctx))
                continue
            e = self.parts.exprs.coerce(e, pt, a, f"argument '{p.name}' of {what}")
            self.parts.varbits.no_varbit_argument(e, a, what)
            if p.direction in ("out", "inout"):
                self.parts.stmts.check_lvalue(e, a, scope)
            if p.direction == "" and not isinstance(e, ir.Const):
                raise self.err(a, f"argument '{p.name}' of {what} must be a compile-time "
                                  "constant")
            args.append(e)
        # every type parameter is bound now: to types
        type_args = tuple(cast(ir.Type, binding[tp]) for tp in sig.type_params)
        ret = cast(ir.Type, substitute(sig.ret, binding))
        call: ir.ExternCall | ir.ExternCallExpr
        if as_stmt:
            call = ir.ExternCall(instance, method, args, type_args, loc=self.loc(c))
        elif isinstance(ret, ir.VoidType):
            raise self.err(c, f"{what} does not return a value")
        else:
            call = ir.ExternCallExpr(instance, method, args, type_args, type=ret,
                                     loc=self.loc(c))
        # for ordering.EvaluationOrder; not an IR field (the IR's repr, equality unchanged)
        call.arg_dirs = tuple(  # type: ignore[union-attr]
            p.direction for p in sig.params)
        return call

    def evaluation_order(self, ctx: BlockCtx) -> EvaluationOrder:
        actions = self.env.actions
        return EvaluationOrder(ctx.fresh, lambda a: [p.direction for p in actions[a].params])
