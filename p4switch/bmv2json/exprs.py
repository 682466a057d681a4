"""BMv2 JSON expressions -> typed IR expressions.

BMv2 evaluates expressions on unbounded integers; p4c makes every wrap-around explicit (``& 0xff``
after an 8-bit ``+``, ``two_comp_mod`` for signed values). The IR is typed, so each operator is
given a type wide enough that no bit the JSON keeps is lost (``+``/``-`` one bit more than their
operands, ``*`` their sum, ``<<`` the shift added): the masks p4c wrote then yield BMv2's value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from p4switch import ir
from p4switch.bmv2json.errors import Bmv2JsonError
from p4switch.bmv2json.layout import Layout, elem_type, field_type, fields_of
from p4switch.bmv2json.unions import any_member_valid, is_union

BOOL = ir.BoolType()
_ARITH = {"+", "-", "*", "<<", ">>", "&", "|", "^"}
_COMPARE = {"==", "!=", "<", "<=", ">", ">="}
_MAX_SHIFT_GROWTH = 512


def bits(e: ir.Expr) -> tuple[int, bool] | None:
    """(width, signed) of a bit/int-typed expression; None for untyped literals."""
    t = e.type
    if isinstance(t, ir.BitsType):
        return t.width, t.signed
    if isinstance(t, ir.BoolType):
        return 1, False
    if isinstance(t, ir.EnumType) and t.underlying is not None:
        return t.underlying.width, False
    if isinstance(t, ir.ErrorType):
        return 32, False
    return None


def _literal(e: ir.Expr) -> int:
    """The value of an untyped integer literal (TypeError for anything else: malformed)."""
    if isinstance(e, ir.Const):
        return int(e.value)
    raise TypeError(f"{e!r} is not a literal")


def convert(e: ir.Expr, t: ir.Type) -> ir.Expr:
    """``e`` as a value of ``t`` the way BMv2 stores it: truncated (or extended in ``e``'s own
    signedness) to t's width, then read in t's signedness."""
    if e.type == t:
        return e
    if isinstance(e, ir.Const) and isinstance(t, ir.BitsType) and isinstance(e.value, int):
        v = int(e.value) & ((1 << t.width) - 1)
        if t.signed and t.width and v >> (t.width - 1):
            v -= 1 << t.width
        return ir.Const(v, type=t)
    if isinstance(t, ir.BoolType):
        if isinstance(e.type, ir.BoolType):
            return e
        return ir.Binary("!=", e, convert(ir.Const(0, type=ir.InfIntType()), e.type), type=BOOL)
    if isinstance(e.type, ir.BoolType):
        e = ir.Cast(e, type=ir.BitsType(1))
        if e.type == t:
            return e
    if isinstance(t, ir.BitsType):
        src = bits(e)
        if src is None:
            return ir.Cast(e, type=t)
        w, s = src
        if isinstance(e.type, ir.ErrorType | ir.EnumType):
            e = ir.Cast(e, type=ir.BitsType(w))
        if w != t.width:
            e = ir.Cast(e, type=ir.BitsType(t.width, s))
        if s != t.signed:
            e = ir.Cast(e, type=t)
        return e
    return ir.Cast(e, type=t)


def _as_error(e: ir.Expr, where: str) -> ir.Expr:
    """An error code compared with an error: BMv2 JSON writes the constant as a number."""
    if isinstance(e.type, ir.ErrorType):
        return e
    if isinstance(e, ir.Const):
        return ir.Const(int(e.value), type=ir.ErrorType())
    raise Bmv2JsonError(where, "an error compared with a non-constant number")


def _const(v: int, where: str) -> ir.Const:
    return ir.Const(v, type=ir.InfIntType())


def _hexint(text: object, where: str) -> int:
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    if not isinstance(text, str):
        raise Bmv2JsonError(where, f"expected a hexstr, got {text!r}")
    try:
        neg = text.startswith("-")
        v = int(text[1:] if neg else text, 16)
    except ValueError:
        raise Bmv2JsonError(where, f"{text!r} is not a hexstr") from None
    return -v if neg else v


@dataclass
class Exprs:
    """Converts one block's expressions; ``params`` are the enclosing action's runtime data
    (``runtime_data``/``local`` refer to them by index)."""

    layout: Layout
    where: str
    params: list[ir.Param]
    lookahead: Callable[[int, int], ir.Expr] | None = None

    def err(self, msg: str) -> Bmv2JsonError:
        return Bmv2JsonError(self.where, msg)

    # -- operands ----------------------------------------------------------------------------
    def value(self, node: object) -> ir.Expr:
        if not isinstance(node, dict) or "type" not in node:
            raise self.err(f"expected an expression object, got {node!r}")
        kind = node["type"]
        v: Any = node.get("value")  # its shape depends on kind
        if kind == "field":
            if not (isinstance(v, list) and len(v) == 2):
                raise self.err(f"field reference {v!r} is not [instance, field]")
            if isinstance(v[0], dict):  # [<header expression>, field]: a run-time index
                h = self.expression(v[0])
                if v[1] == "$valid$":
                    return ir.IsValid(h, type=BOOL)
                try:
                    return ir.Member(h, v[1], type=field_type(h.type, v[1]))
                except KeyError:
                    raise self.err(f"{h.type} has no field {v[1]!r}") from None
            return self.layout.field(v[0], v[1], self.where)
        if kind == "hexstr":
            return _const(_hexint(v, self.where), self.where)
        if kind == "bool":
            return ir.Const(bool(v), type=BOOL)
        if kind in ("runtime_data", "local"):
            if not isinstance(v, int) or not 0 <= v < len(self.params):
                raise self.err(f"{kind} {v!r} is not one of the action's parameters")
            p = self.params[v]
            return ir.Var(p.name, type=p.type)
        if kind in ("header", "header_stack", "header_union", "header_union_stack", "regular",
                    "stack"):
            return self.layout.header(v, self.where)
        if kind == "stack_field":
            stack = self.layout.header(v[0], self.where)
            last = ir.StackLast(stack, type=elem_type(stack.type))
            return ir.Member(last, v[1], type=field_type(elem_type(stack.type), v[1]))
        if kind == "string":
            return ir.Const(str(v), type=ir.StringType())
        if kind == "lookahead":
            if self.lookahead is None:
                raise self.err("lookahead outside a parser")
            return self.lookahead(int(v[0]), int(v[1]))
        if kind == "expression":
            return self.expression(v)
        raise self.err(f"operand type {kind!r} is not supported")

    # -- operators ---------------------------------------------------------------------------
    def expression(self, node: object) -> ir.Expr:
        if isinstance(node, dict) and node.get("type") is not None and "op" not in node:
            return self.value(node)
        if not isinstance(node, dict) or "op" not in node:
            raise self.err(f"expected an expression, got {node!r}")
        op = node["op"]
        left, right = node.get("left"), node.get("right")
        if op in _ARITH:
            return self.arith(op, self.value(left), self.value(right))
        if op in _COMPARE:
            a, b = self.value(left), self.value(right)
            if isinstance(a.type, ir.VarbitType) or a.type == b.type == BOOL:
                return ir.Binary(op, a, b, type=BOOL)
            if isinstance(a.type, ir.ErrorType) or isinstance(b.type, ir.ErrorType):
                a, b = (_as_error(e, self.where) for e in (a, b))
                return ir.Binary(op, a, b, type=BOOL)
            t = self.common(a, b, 0)
            return ir.Binary(op, convert(a, t), convert(b, t), type=BOOL)
        if op in ("and", "or"):
            return ir.Binary("&&" if op == "and" else "||", convert(self.value(left), BOOL),
                             convert(self.value(right), BOOL), type=BOOL)
        if op == "not":
            return ir.Unary("!", convert(self.value(right), BOOL), type=BOOL)
        if op == "d2b":
            return convert(self.value(right), BOOL)
        if op == "b2d":
            return convert(self.value(right), ir.BitsType(1))
        if op == "~":
            a = self.value(right)
            t = self.common(a, a, 0)
            return ir.Unary("~", convert(a, t), type=t)
        if op == "-" and left is None:
            a = self.value(right)
            t = self.common(a, a, 1)
            return ir.Unary("-", convert(a, t), type=t)
        if op == "?":
            c = convert(self.value(node.get("cond")), BOOL)
            a, b = self.value(left), self.value(right)
            mt: ir.Type = BOOL if a.type == b.type == BOOL else self.common(a, b, 0)
            return ir.Mux(c, convert(a, mt), convert(b, mt), type=mt)
        if op == "two_comp_mod":
            w = _hexint(right.get("value") if isinstance(right, dict) else right, self.where)
            return convert(convert(self.value(left), ir.BitsType(w)), ir.BitsType(w, True))
        if op in ("usat_cast", "sat_cast"):
            return self.saturate(op == "sat_cast", left, right)
        if op in ("valid", "valid_union"):
            h = self.value(right)
            return any_member_valid(h) if is_union(h) else ir.IsValid(h, type=BOOL)
        if op == "dereference_header_stack" or op == "dereference_union_stack":
            stack = self.value(left)
            idx = convert(self.value(right), ir.BitsType(32))
            return ir.StackElem(stack, idx, type=elem_type(stack.type))
        if op == "access_field":
            h = self.value(left)
            k = _hexint(right.get("value") if isinstance(right, dict) else right, self.where)
            f = fields_of(h.type)[k]
            return ir.Member(h, f.name, type=f.type)
        if op == "last_stack_index":
            return ir.StackProp(self.value(right), "lastIndex", type=ir.BitsType(32))
        if op == "size_stack":
            return ir.StackProp(self.value(right), "size", type=ir.BitsType(32))
        raise self.err(f"expression operator {op!r} is not supported")

    def common(self, a: ir.Expr, b: ir.Expr, grow: int) -> ir.BitsType:
        ka, kb = bits(a), bits(b)
        widths = [k[0] for k in (ka, kb) if k]
        signed = any(k[1] for k in (ka, kb) if k)
        for e in (a, b):
            if isinstance(e, ir.Const) and isinstance(e.value, int) and bits(e) is None:
                widths.append(abs(int(e.value)).bit_length() + (1 if signed or e.value < 0 else 0))
        w = max(widths + [1]) + grow
        return ir.BitsType(w, signed)

    def arith(self, op: str, a: ir.Expr, b: ir.Expr) -> ir.Expr:
        if op in ("<<", ">>"):
            t = self.common(a, a, 0)
            if op == "<<":
                if isinstance(b, ir.Const):
                    t = ir.BitsType(t.width + int(b.value), t.signed)
                else:
                    kb = bits(b)
                    grow = min((1 << kb[0]) - 1, _MAX_SHIFT_GROWTH) if kb else _MAX_SHIFT_GROWTH
                    t = ir.BitsType(t.width + grow, t.signed)
            sb = b if bits(b) else convert(b, ir.BitsType(max(1, _literal(b).bit_length())))
            return ir.Binary(op, convert(a, t), sb, type=t)
        if op == "*":
            ta, tb = self.common(a, a, 0), self.common(b, b, 0)
            t = ir.BitsType(ta.width + tb.width, ta.signed or tb.signed)
        else:
            t = self.common(a, b, 1 if op in ("+", "-") else 0)
        return ir.Binary(op, convert(a, t), convert(b, t), type=t)

    def saturate(self, signed: bool, left: object, right: object) -> ir.Expr:
        """p4c writes ``a |+| b`` as ``usat_cast(a + b, w)`` (``sat_cast`` for int<w>): the IR
        has the saturating operators themselves."""
        w = _hexint(right.get("value") if isinstance(right, dict) else right, self.where)
        inner = left.get("value") if isinstance(left, dict) and left.get("type") == "expression" \
            else None
        if not (isinstance(inner, dict) and inner.get("op") in ("+", "-")):
            raise self.err("a saturating cast of anything but + or - is not supported")
        t = ir.BitsType(w, signed)
        a, b = self.value(inner["left"]), self.value(inner["right"])
        return ir.Binary("|+|" if inner["op"] == "+" else "|-|", convert(a, t), convert(b, t),
                         type=t)
