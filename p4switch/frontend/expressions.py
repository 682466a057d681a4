"""Expressions and their typing rules: names and members, indexes, slices and part-selects,
literals, casts, unary/binary operators (constant-folded), ?: and implicit conversions.

"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import cast

from lark import Token, Tree

from p4switch import ir
from p4switch.frontend.bindings import (
    ActionB,
    ApplyResult,
    BlockCtx,
    ConstB,
    FuncB,
    InstanceB,
    MethodRef,
    Named,
    Scope,
    SubInstB,
    TableB,
    TypeB,
    ValueSetB,
    VarB,
)
from p4switch.frontend.errors import unsupported
from p4switch.frontend.parts import Part
from p4switch.frontend.trees import (
    name_text,
    unquote,
)
from p4switch.frontend.types import (
    BIT32,
    BOOL,
    TypeVar,
    bits_range,
    is_bits,
    is_int_like,
    parse_int_literal,
    to_unsigned,
    wrap,
)
from p4switch.frontend.varbit import SIZE_METHODS

_INFINT = ir.InfIntType()
_CMP_OPS = {"==", "!=", "<", "<=", ">", ">="}


def _fold(op: str, a: int, b: int, t: object) -> int:
    if op == "+":
        v = a + b
    elif op == "-":
        v = a - b
    elif op == "*":
        v = a * b
    elif op == "/":
        v = a // b
    elif op == "%":
        v = a % b
    elif op == "&":
        v = a & b
    elif op == "|":
        v = a | b
    elif op == "^":
        v = a ^ b
    elif op in ("|+|", "|-|"):
        assert isinstance(t, ir.BitsType)
        lo, hi = bits_range(t)
        v = a + b if op == "|+|" else a - b
        return max(lo, min(hi, v))
    else:  # pragma: no cover
        raise ValueError(op)
    return wrap(v, t) if isinstance(t, ir.BitsType) else v


@dataclass
class NamedList(ir.ListExpr):
    """Front end only: ``{f = e, ...}`` before a struct or header type gives it its field
    order (``coerce``); used where no such type is expected, it is a tuple in source order."""

    names: list[str] = field(default_factory=list)


class ExprElaborator(Part):
    """Expressions and their typing rules (``parts.exprs``): names, members, slices,
    operators, casts, ``?:``, and ``coerce``, which every part uses to check a value's type."""

    # ---------------------------------------------------------------- expressions
    def expr(self, t: Tree | Token, scope: Scope, ctx: BlockCtx) -> ir.Expr:
        r = self.expr_or_ref(t, scope, ctx)
        if isinstance(r, ApplyResult):
            raise self.err(t, "table.apply() must be used as a statement, or through .hit, "
                              ".miss or .action_run")
        if isinstance(r, MethodRef):
            raise self.err(t, f"method '{r.method}' must be called")
        if isinstance(r, Named):
            raise self.err(t, f"'{r.name}' is not a value")
        return r

    def expr_or_ref(self, t: Tree | Token, scope: Scope, ctx: BlockCtx):
        if isinstance(t, Token):  # pragma: no cover - all expressions are trees
            raise self.err(t, "unexpected token")
        d = t.data
        loc = self.loc(t)
        if d == "dontcare_arg":
            raise self.err(t, "'_' can only be passed for an out parameter")
        if d == "int_lit":
            value, wt = parse_int_literal(str(t.children[0]))
            if wt is None:
                return ir.Const(value, type=_INFINT, loc=loc)
            if wt.width <= 0:
                raise self.err(t, "width of a literal must be positive")
            return ir.Const(wrap(value, wt), type=wt, loc=loc)
        if d == "str_lit":
            return ir.Const(unquote(str(t.children[0])), type=ir.StringType(), loc=loc)
        if d in ("true_lit", "false_lit"):
            return ir.Const(d == "true_lit", type=BOOL, loc=loc)
        if d in ("name_ref", "dot_name_ref"):
            name = str(t.children[0])
            b = (self.env.globals if d == "dot_name_ref" else scope).lookup(name)
            if isinstance(b, VarB):
                return ir.Var(b.ir_name, type=b.type, loc=loc)
            if isinstance(b, ConstB):
                return replace(copy.deepcopy(b.value), loc=loc)
            if isinstance(b, InstanceB | TableB | ActionB | ValueSetB | FuncB | SubInstB):
                return Named(b, name, t)
            if b is None:
                raise self.err(t, f"unknown name '{name}'")
            raise self.err(t, f"'{name}' is not a value")
        if d == "type_member":
            tname = str(t.children[0])
            member = str(t.children[1].children[0])
            b = scope.lookup(tname)
            if isinstance(b, TypeB) and isinstance(b.type, ir.EnumType):
                et = b.type
                try:
                    return ir.Const(et.value_of(member), type=et, loc=loc)
                except KeyError:
                    raise self.err(t.children[1], f"enum {tname} has no member '{member}'") \
                        from None
            raise self.err(t, f"'{tname}.{member}' is not a value")
        if d == "error_member":
            member = str(t.children[0].children[0])
            if member not in self.env.errors:
                raise self.err(t.children[0], f"unknown error '{member}'")
            return ir.Const(self.env.errors.index(member), type=ir.ErrorType(), loc=loc)
        if d == "member":
            return self.member(t, scope, ctx)
        if d == "index":
            base = self.expr(t.children[0], scope, ctx)
            if not isinstance(base.type, ir.StackType):
                raise self.err(t, f"cannot index a value of type {base.type} (use [hi:lo] for "
                                  "bit slices)")
            idx = self.expr(t.children[1], scope, ctx)
            if isinstance(idx.type, ir.EnumType) and idx.type.underlying is not None:
                # a serializable enum indexes by its value (spec 8.20)
                idx = (ir.Const(int(idx.value), type=idx.type.underlying, loc=idx.loc)
                       if isinstance(idx, ir.Const)
                       else ir.Cast(idx, type=idx.type.underlying, loc=idx.loc))
            if isinstance(idx, ir.Const) and isinstance(idx.type, ir.InfIntType | ir.BitsType):
                if not 0 <= int(idx.value) < base.type.size:
                    raise self.err(t.children[1], f"index {idx.value} is out of range for "
                                                  f"{base.type}")
                idx = ir.Const(int(idx.value), type=BIT32, loc=idx.loc)
            elif not isinstance(idx.type, ir.BitsType):  # int<W> too: negative is out of range
                raise self.err(t.children[1], f"stack index must be bit<W>, int<W> or a "
                                              f"serializable enum, not {idx.type}")
            return ir.StackElem(base, idx, type=base.type.elem, loc=loc)
        if d == "slice":
            base = self.expr(t.children[0], scope, ctx)
            if isinstance(base.type, ir.InfIntType):
                raise self.err(t, "cannot slice an integer without a width")
            if not isinstance(base.type, ir.BitsType):
                raise self.err(t, f"cannot slice a value of type {base.type}")
            hi = self.parts.decls.const_int(t.children[1], scope, "slice bound")
            lo = self.parts.decls.const_int(t.children[2], scope, "slice bound")
            if not 0 <= lo <= hi < base.type.width:
                raise self.err(t, f"slice [{hi}:{lo}] is out of range for {base.type}")
            rt = ir.BitsType(hi - lo + 1)
            if isinstance(base, ir.Const):
                return ir.Const((to_unsigned(int(base.value), base.type.width) >> lo)
                                & ((1 << (hi - lo + 1)) - 1), type=rt, loc=loc)
            return ir.Slice(base, hi, lo, type=rt, loc=loc)
        if d == "part_select":
            return self.part_select(t, scope, ctx)
        if d in ("call", "generic_call"):
            return self.parts.calls.call(t, scope, ctx, as_stmt=False)
        if d == "list_expr":
            items_t = t.children[0].children if t.children[0] is not None else []
            items = [self.expr(i, scope, ctx) for i in items_t if i is not None]
            return ir.ListExpr(items, type=ir.TupleType(tuple(i.type for i in items)), loc=loc)
        if d == "struct_expr":
            # `{f = e, ...}` (spec 8.13): a struct or header value once its type is known
            kvs = [kv for kv in t.children if kv is not None]
            names = [name_text(kv.children[0]) for kv in kvs]
            dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
            if dup is not None:
                raise self.err(t, f"field '{dup}' given twice")
            items = [self.expr(kv.children[1], scope, ctx) for kv in kvs]
            return NamedList(items, names=names,
                             type=ir.TupleType(tuple(i.type for i in items)), loc=loc)
        if d == "cast":
            target = self.parts.decls.resolve_type(t.children[0], scope)
            return self.cast(self.expr(t.children[1], scope, ctx), target, t)
        if d in ("neg", "pos", "bnot", "lnot"):
            return self.unary(d, self.expr(t.children[-1], scope, ctx), t)
        if d == "binop":
            return self.binop(t, scope, ctx)
        if d == "mux":
            return self.mux(t, scope, ctx)
        if d == "construct":
            raise self.err(t, "an instantiation is not allowed here")
        raise self.err(t, f"unsupported expression {d}")  # pragma: no cover

    def part_select(self, t: Tree, scope: Scope, ctx: BlockCtx) -> ir.Expr:
        """``e[lo +: w]`` (P4_16 1.2.4): the w bits of e from bit lo up, bit<w>. The width is
        a compile-time constant; with a constant lo it is the slice e[lo+w-1:lo] (an l-value
        too), with a run-time lo the value (bit<w>)(e >> lo) -- bits past e's width are 0."""
        base_t, lo_t, _op, w_t = t.children
        loc = self.loc(t)
        base = self.expr(base_t, scope, ctx)
        if isinstance(base.type, ir.InfIntType):
            raise self.err(t, "cannot slice an integer without a width")
        if not isinstance(base.type, ir.BitsType):
            raise self.err(t, f"cannot slice a value of type {base.type}")
        w = self.parts.decls.const_int(w_t, scope, "part-select width")
        if not 0 < w <= base.type.width:
            raise self.err(w_t, f"part-select width {w} is out of range for {base.type}")
        lo_e = self.expr(lo_t, scope, ctx)
        if isinstance(lo_e, ir.Const):
            lo = int(lo_e.value)
            if not 0 <= lo <= base.type.width - w:
                raise self.err(lo_t, f"part-select [{lo} +: {w}] is out of range for "
                                     f"{base.type}")
            rt = ir.BitsType(w)
            if isinstance(base, ir.Const):
                return ir.Const((to_unsigned(int(base.value), base.type.width) >> lo)
                                & ((1 << w) - 1), type=rt, loc=loc)
            return ir.Slice(base, lo + w - 1, lo, type=rt, loc=loc)
        if not isinstance(lo_e.type, ir.BitsType) or lo_e.type.signed:
            raise self.err(lo_t, f"the start of a part-select must be bit<W>, not {lo_e.type}")
        unsigned = ir.BitsType(base.type.width)
        if base.type.signed:
            base = ir.Cast(base, type=unsigned, loc=loc)
        shifted = ir.Binary(">>", base, lo_e, type=unsigned, loc=loc)
        return ir.Cast(shifted, type=ir.BitsType(w), loc=loc)

    def member(self, t: Tree, scope: Scope, ctx: BlockCtx):
        base_t, mname_t = t.children
        m = str(mname_t.children[0])
        loc = self.loc(t)
        base = self.expr_or_ref(base_t, scope, ctx)
        if isinstance(base, ApplyResult):
            if m in ("hit", "miss"):
                return ir.TableHit(base.table.name, m == "miss", type=BOOL, loc=loc)
            if m == "action_run":
                raise self.err(t, "action_run can only be used in a switch statement")
            raise self.err(mname_t, f"table.apply() has no member '{m}'")
        if isinstance(base, Named):
            b = base.binding
            if isinstance(b, TableB):
                if m == "apply":
                    return MethodRef("table", b.table, m, t)
                raise self.err(mname_t, f"table '{base.name}' has no member '{m}'")
            if isinstance(b, InstanceB):
                return MethodRef("instance", b, m, t)
            if isinstance(b, SubInstB):
                if m == "apply":
                    return MethodRef("subblock", b, m, t)
                raise self.err(mname_t, f"{b.kind} instance '{base.name}' has no member '{m}'")
            raise self.err(base_t, f"'{base.name}' has no members")
        if isinstance(base, MethodRef):
            raise self.err(t, f"method '{base.method}' must be called")
        bt = base.type
        if isinstance(bt, ir.ExternType):
            if bt.name in ("packet_in", "packet_out"):
                return MethodRef(bt.name, base, m, t)
            raise self.err(t, unsupported(f"methods of extern-typed parameters ({bt.name})"))
        if isinstance(bt, ir.HeaderType) or (isinstance(bt, ir.StructType) and bt.union
                                              and m in ("isValid", "setValid", "setInvalid")):
            if m in ("isValid", "setValid", "setInvalid"):
                return MethodRef("header", base, m, t)
            if m in SIZE_METHODS and isinstance(bt, ir.HeaderType):
                return MethodRef("header", base, m, t)
            try:
                ft = bt.field_type(m)
            except KeyError:
                raise self.err(mname_t, f"header {bt.name} has no field '{m}'") from None
            return ir.Member(base, m, type=ft, loc=loc)
        if isinstance(bt, ir.StructType):
            try:
                ft = bt.field_type(m)
            except KeyError:
                raise self.err(mname_t, f"struct {bt.name} has no field '{m}'") from None
            return ir.Member(base, m, type=ft, loc=loc)
        if isinstance(bt, ir.StackType):
            if m == "next":
                if ctx.kind != "parser":
                    raise self.err(mname_t, "stack.next is only allowed in parsers")
                return ir.StackNext(base, type=bt.elem, loc=loc)
            if m == "last":
                return ir.StackLast(base, type=bt.elem, loc=loc)
            if m in ("size", "lastIndex", "nextIndex"):
                if m == "size":
                    return ir.Const(bt.size, type=BIT32, loc=loc)
                if m == "nextIndex" and ctx.kind != "parser":
                    raise self.err(mname_t, "stack.nextIndex is only allowed in parsers")
                if isinstance(bt.elem, ir.StructType):  # as p4c: only header stacks have them
                    raise self.err(mname_t, f"a stack of header unions has no {m}")
                return ir.StackProp(base, m, type=BIT32, loc=loc)
            if m in ("push_front", "pop_front"):
                return MethodRef("stack", base, m, t)
            raise self.err(mname_t, f"header stack has no member '{m}'")
        raise self.err(mname_t, f"a value of type {bt} has no member '{m}'")

    def expr_as(self, t: Tree | Token, scope: Scope, ctx: BlockCtx, type_: object,
                what: str) -> ir.Expr:
        """The expression ``t`` as a value of ``type_`` (``coerce``: ``what`` names it in the
        error if it is not one)."""
        return self.coerce(self.expr(t, scope, ctx), type_, t, what)

    # ---------------------------------------------------------------- typing rules
    def coerce(self, e: ir.Expr, t: object, node: object, what: str) -> ir.Expr:
        """Implicit conversion of ``e`` to ``t`` where the spec allows one (integer literals,
        list expressions initialising structs/headers/tuples), else a type error."""
        if isinstance(e, Named):
            raise self.err(node, f"'{e.name}' is not a value")
        if isinstance(t, TypeVar) or e.type == t:
            return e
        if isinstance(e.type, ir.InfIntType) and isinstance(t, ir.BitsType):
            if isinstance(e, ir.Const):
                # a value that does not fit is truncated to the width (spec 8.12.2: p4c
                # warns, then wraps it as an explicit cast would)
                return ir.Const(wrap(int(e.value), t), type=t, loc=e.loc)
            return ir.Cast(e, type=t, loc=e.loc)
        if isinstance(e, NamedList) and isinstance(t, ir.StructType | ir.HeaderType):
            fields = [f.name for f in t.fields]
            if sorted(e.names) != sorted(fields):
                missing = [f for f in fields if f not in e.names]
                extra = [n for n in e.names if n not in fields]
                raise self.err(node, f"{what}: {t} has fields {', '.join(fields)}"
                                     + (f"; missing {', '.join(missing)}" if missing else "")
                                     + (f"; no field {', '.join(extra)}" if extra else ""))
            by_name = dict(zip(e.names, e.items, strict=True))
            e = ir.ListExpr([by_name[f] for f in fields], type=e.type, loc=e.loc)
        elif isinstance(e, NamedList):
            raise self.err(node, f"{what}: expected {t}, got a structure with fields "
                                 f"{', '.join(e.names)}")
        if isinstance(e, ir.ListExpr) and isinstance(t, ir.StructType | ir.HeaderType):
            if len(e.items) != len(t.fields):
                raise self.err(node, f"{what}: {t} has {len(t.fields)} fields, the list has "
                                     f"{len(e.items)}")
            items = [self.coerce(i, f.type, node, what) for i, f in zip(e.items, t.fields,
                                                                         strict=True)]
            return ir.ListExpr(items, type=t, loc=e.loc)
        if isinstance(e, ir.ListExpr) and isinstance(t, ir.TupleType):
            if len(e.items) != len(t.elems):
                raise self.err(node, f"{what}: expected {len(t.elems)} elements, got "
                                     f"{len(e.items)}")
            items = [self.coerce(i, et, node, what) for i, et in zip(e.items, t.elems,
                                                                      strict=True)]
            return ir.ListExpr(items, type=t, loc=e.loc)
        if (isinstance(e.type, ir.EnumType) and e.type.underlying is not None
                and e.type.underlying == t and isinstance(node, Tree)):
            # a serializable enum converts to its underlying type implicitly (spec 8.3)
            return self.cast(e, t, node)
        if isinstance(t, ir.ExternType) and isinstance(e.type, ir.ExternType) and (
            e.type.name == t.name
        ):
            return e
        hint = f" (convert with a cast: ({t})...)" if isinstance(t, ir.BitsType) and isinstance(
            e.type, ir.BitsType) else ""
        raise self.err(node, f"{what}: expected {t}, got {e.type}{hint}")

    def cast(self, e: ir.Expr, t: ir.Type, node: Tree) -> ir.Expr:
        src = e.type
        loc = self.loc(node)
        if src == t:
            return e
        ok = False
        if isinstance(t, ir.BitsType):
            ok = isinstance(src, ir.BitsType | ir.InfIntType | ir.BoolType) or (
                isinstance(src, ir.EnumType) and src.underlying is not None
            )
            if isinstance(src, ir.BoolType) and t.width != 1:
                ok = False
        elif isinstance(t, ir.BoolType):
            ok = (isinstance(src, ir.BitsType) and src.width == 1 and not src.signed) or (
                isinstance(e, ir.Const) and isinstance(src, ir.InfIntType)
                and e.value in (0, 1))
        elif isinstance(t, ir.EnumType) and t.underlying is not None:
            ok = isinstance(src, ir.BitsType | ir.InfIntType)
        elif isinstance(t, ir.StructType | ir.HeaderType) and isinstance(e, ir.ListExpr):
            return self.coerce(e, t, node, "cast")
        if not ok:
            raise self.err(node, f"cannot cast {src} to {t}")
        if isinstance(e, ir.Const):
            v = e.value
            if isinstance(t, ir.BitsType):
                v = int(v)
                if isinstance(src, ir.BitsType) and src.signed and not t.signed:
                    v = to_unsigned(v, src.width)
                return ir.Const(wrap(v, t), type=t, loc=loc)
            if isinstance(t, ir.BoolType):
                return ir.Const(bool(v), type=t, loc=loc)
            if isinstance(t, ir.EnumType) and t.underlying is not None:  # checked above
                return ir.Const(wrap(int(v), t.underlying), type=t, loc=loc)
        return ir.Cast(e, type=t, loc=loc)

    def unary(self, d: str, e: ir.Expr, node: Tree) -> ir.Expr:
        loc = self.loc(node)
        t = e.type
        if d == "pos":
            if not is_int_like(t):
                raise self.err(node, f"unary + needs a number, not {t}")
            return e
        if d == "lnot":
            if not isinstance(t, ir.BoolType):
                raise self.err(node, f"'!' needs a bool, not {t}")
            if isinstance(e, ir.Const):
                return ir.Const(not e.value, type=t, loc=loc)
            return ir.Unary("!", e, type=t, loc=loc)
        if d == "neg":
            if not is_int_like(t):
                raise self.err(node, f"unary - needs bit<W>, int<W> or an integer, not {t}")
            if isinstance(e, ir.Const):
                v = -int(e.value)
                return ir.Const(wrap(v, t) if isinstance(t, ir.BitsType) else v, type=t, loc=loc)
            return ir.Unary("-", e, type=t, loc=loc)
        # bnot
        if not is_bits(t):
            raise self.err(node, f"'~' needs bit<W> or int<W>, not {t}"
                           + (" (give the literal a width)" if isinstance(t, ir.InfIntType)
                              else ""))
        if isinstance(e, ir.Const):
            return ir.Const(wrap(~int(e.value), t), type=t, loc=loc)
        return ir.Unary("~", e, type=t, loc=loc)

    def binop(self, t: Tree, scope: Scope, ctx: BlockCtx) -> ir.Expr:
        lt, op_tok, rt = t.children
        return self.binary(str(op_tok), self.expr(lt, scope, ctx), self.expr(rt, scope, ctx),
                           lt, rt, t)

    def binary(self, op: str, left: ir.Expr, right: ir.Expr, lt: Tree, rt: Tree,
               t: Tree) -> ir.Expr:
        """``left op right`` type-checked (and folded) as the spec's binary operators; the
        trees locate errors."""
        loc = self.loc(t)
        if op in ("&&", "||"):
            for side, node in ((left, lt), (right, rt)):
                if not isinstance(side.type, ir.BoolType):
                    raise self.err(node, f"'{op}' needs bool operands, not {side.type}")
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                v = (left.value and right.value) if op == "&&" else (left.value or right.value)
                return ir.Const(bool(v), type=BOOL, loc=loc)
            return ir.Binary(op, left, right, type=BOOL, loc=loc)
        if op in ("<<", ">>"):
            if not is_int_like(left.type):
                raise self.err(lt, f"'{op}' needs a number on the left, not {left.type}")
            if not is_int_like(right.type) or (
                isinstance(right.type, ir.BitsType) and right.type.signed
            ):
                raise self.err(rt, f"shift amount must be an unsigned number, not {right.type}")
            if isinstance(right, ir.Const) and int(right.value) < 0:
                raise self.err(rt, "shift amount must not be negative")
            if isinstance(left.type, ir.InfIntType) and not isinstance(right, ir.Const):
                raise self.err(lt, "shifting an integer literal by a run-time amount needs a "
                                   "width on the literal")
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                v = int(left.value) << int(right.value) if op == "<<" else \
                    int(left.value) >> int(right.value)
                tt = left.type
                return ir.Const(wrap(v, tt) if isinstance(tt, ir.BitsType) else v, type=tt,
                                loc=loc)
            if isinstance(right.type, ir.InfIntType):
                # an integer is compile-time known: a constant
                right = ir.Const(int(cast(ir.Const, right).value), type=ir.BitsType(32),
                                 loc=right.loc)
            return ir.Binary(op, left, right, type=left.type, loc=loc)
        if op == "++":
            for side, node in ((left, lt), (right, rt)):
                if not isinstance(side.type, ir.BitsType):
                    raise self.err(node, f"'++' needs bit<W> or int<W> operands, not "
                                         f"{side.type}")
            lt_, rt_ = left.type, right.type
            assert isinstance(lt_, ir.BitsType) and isinstance(rt_, ir.BitsType)  # just checked
            rtype = ir.BitsType(lt_.width + rt_.width, lt_.signed)
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                v = (to_unsigned(int(left.value), lt_.width) << rt_.width) | \
                    to_unsigned(int(right.value), rt_.width)
                return ir.Const(wrap(v, rtype), type=rtype, loc=loc)
            return ir.Concat(left, right, type=rtype, loc=loc)
        # arithmetic, bitwise and comparisons: unify operand types
        left, right = self.unify(left, right, lt, rt, op, t)
        ot = left.type
        if op in ("==", "!="):
            if not isinstance(ot, ir.BitsType | ir.InfIntType | ir.BoolType | ir.EnumType
                              | ir.ErrorType | ir.HeaderType | ir.StructType
                              | ir.StackType | ir.VarbitType):
                raise self.err(t, f"cannot compare values of type {ot}")
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                eq = left.value == right.value
                return ir.Const(eq if op == "==" else not eq, type=BOOL, loc=loc)
            return ir.Binary(op, left, right, type=BOOL, loc=loc)
        if not is_int_like(ot):
            raise self.err(t, f"'{op}' needs bit<W>, int<W> or integer operands, not {ot}")
        if op in _CMP_OPS:
            if isinstance(left, ir.Const) and isinstance(right, ir.Const):
                a, b = int(left.value), int(right.value)
                v = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
                return ir.Const(v, type=BOOL, loc=loc)
            return ir.Binary(op, left, right, type=BOOL, loc=loc)
        if op in ("/", "%"):
            if isinstance(ot, ir.BitsType) and ot.signed:
                raise self.err(t, f"'{op}' is not defined for signed int<W>")
            if isinstance(right, ir.Const) and int(right.value) == 0:
                raise self.err(rt, "division by zero")
            if isinstance(ot, ir.InfIntType) and (
                (isinstance(left, ir.Const) and int(left.value) < 0)
                or (isinstance(right, ir.Const) and int(right.value) < 0)
            ):
                raise self.err(t, f"'{op}' of negative integers is not defined")
        if op in ("|+|", "|-|") and isinstance(ot, ir.InfIntType):
            raise self.err(t, f"'{op}' needs operands with a width")
        if isinstance(left, ir.Const) and isinstance(right, ir.Const):
            return ir.Const(_fold(op, int(left.value), int(right.value), ot), type=ot, loc=loc)
        return ir.Binary(op, left, right, type=ot, loc=loc)

    def unify(self, left: ir.Expr, right: ir.Expr, lt: Tree, rt: Tree,
              op: str, node: Tree) -> tuple[ir.Expr, ir.Expr]:
        a, b = left.type, right.type
        if a == b:
            return left, right
        if isinstance(a, ir.InfIntType) and isinstance(b, ir.BitsType):
            return self.coerce(left, b, lt, f"'{op}'"), right
        if isinstance(b, ir.InfIntType) and isinstance(a, ir.BitsType):
            return left, self.coerce(right, a, rt, f"'{op}'")
        if isinstance(left, ir.ListExpr) and isinstance(b, ir.StructType | ir.HeaderType):
            return self.coerce(left, b, lt, f"'{op}'"), right
        if isinstance(right, ir.ListExpr) and isinstance(a, ir.StructType | ir.HeaderType):
            return left, self.coerce(right, a, rt, f"'{op}'")
        # a serializable enum meets a number: it converts to its underlying type (spec 8.3)
        if (isinstance(a, ir.EnumType) and a.underlying is not None
                and isinstance(b, ir.BitsType | ir.InfIntType)):
            return self.unify(self.cast(left, a.underlying, lt), right, lt, rt, op, node)
        if (isinstance(b, ir.EnumType) and b.underlying is not None
                and isinstance(a, ir.BitsType | ir.InfIntType)):
            return self.unify(left, self.cast(right, b.underlying, rt), lt, rt, op, node)
        raise self.err(node, f"'{op}' needs operands of the same type, got {a} and {b} "
                             "(add a cast)")

    def mux(self, t: Tree, scope: Scope, ctx: BlockCtx) -> ir.Expr:
        ct, tt, et = t.children
        cond = self.expr(ct, scope, ctx)
        if not isinstance(cond.type, ir.BoolType):
            raise self.err(ct, f"condition of ?: must be bool, not {cond.type}")
        a = self.expr(tt, scope, ctx)
        b = self.expr(et, scope, ctx)
        a, b = self.unify(a, b, tt, et, "?:", t)
        if isinstance(cond, ir.Const):
            return a if cond.value else b
        if isinstance(a.type, ir.InfIntType):
            raise self.err(t, "the branches of ?: need a width (cast one of them)")
        return ir.Mux(cond, a, b, type=a.type, loc=self.loc(t))
