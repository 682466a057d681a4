"""Evaluation order of expressions with side effects (P4_16 spec 8.1 and 6.8, "Calling
convention"): operands, arguments and select keys are evaluated left to right, ``&&``/``||``
and ``?:`` do not evaluate the operand that is not taken, and a call's copy-in happens when
evaluation reaches it.

The front end inlines function calls. Inside an expression a call first becomes an ``Effect``:
the statements of the inlined call (copy-in, body, copy-out) and the variable that then holds
its result. Once the statement around it is built, ``EvaluationOrder`` turns the Effects into
ordinary statements placed where they run:

* the operands evaluated *before* an Effect are saved in fresh temporaries first, so that
  ``x + f(x)`` adds the ``x`` from before ``f`` wrote it (an ``out``/``inout`` argument is a
  location: only its run-time stack indexes are saved);
* ``a && b`` with an Effect in ``b`` becomes ``t = a; if (t) { ...; t = b; }`` (``||`` tests
  ``!t``), and ``c ? x : y`` with an Effect in a branch becomes an ``if`` that runs only the
  branch taken.

The result is plain IR, the same for both code generators, which evaluate the remaining
(side-effect free, or in-place: ``table.apply().hit``, value-returning extern calls)
expressions left to right themselves (Python does, and short-circuits ``and``/``or``/``if``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import overload

from p4switch import ir

_BOOL = ir.BoolType()
_PATHS = (ir.Var, ir.Member, ir.StackElem, ir.StackNext, ir.StackLast, ir.Slice)


@dataclass
class Effect(ir.Expr):
    """Front-end only (never in a finished Program): ``stmts`` run when evaluation reaches
    this point, then the value is ``result``."""

    stmts: list[ir.Stmt]
    result: ir.Expr


def has_effect(node: object) -> bool:
    """Whether an expression or statement (tree) still holds an ``Effect``."""
    if isinstance(node, Effect):
        return True
    if isinstance(node, list):
        return any(has_effect(x) for x in node)
    if is_dataclass(node) and not isinstance(node, type) and not isinstance(
            node, ir.Const | ir.Var | ir.SourceLoc):
        return any(has_effect(getattr(node, f.name)) for f in fields(node)
                   if f.name not in ("type", "loc"))
    return False


def _storable(t: object) -> bool:
    """Types a temporary can hold (not tuples, strings, untyped ints, externs)."""
    return isinstance(t, ir.BitsType | ir.BoolType | ir.EnumType | ir.ErrorType | ir.HeaderType
                      | ir.StructType | ir.StackType | ir.VarbitType)


def _locations(call: ir.ExternCall | ir.ExternCallExpr) -> list[bool]:
    """Which arguments of an extern call are written (out/inout): the front end records the
    directions as ``arg_dirs``; without them every argument counts as a value."""
    dirs = getattr(call, "arg_dirs", ())
    return [i < len(dirs) and dirs[i] in ("out", "inout") for i in range(len(call.args))]


class EvaluationOrder:
    """Lowers the Effects of one statement; ``fresh`` names a temporary of the block,
    ``action_dirs`` gives an action's parameter directions (for its call's arguments)."""

    def __init__(self, fresh: Callable[[str], str],
                 action_dirs: Callable[[str], list[str]]) -> None:
        self.fresh = fresh
        self.action_dirs = action_dirs
        self.temps: set[str] = set()

    # -- statements ------------------------------------------------------------------------
    def stmts(self, stmts: list[ir.Stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    @overload
    def block(self, b: ir.Block) -> ir.Block: ...
    @overload
    def block(self, b: None) -> None: ...
    def block(self, b: ir.Block | None) -> ir.Block | None:
        if b is None or not has_effect(b):
            return b
        if b.copy_out:  # the copy-out tail holds pinned l-values only: keep it as it is
            head, tail = b.stmts[:-b.copy_out], b.stmts[-b.copy_out:]
            return replace(b, stmts=[*self.stmts(head), *tail])
        return replace(b, stmts=self.stmts(b.stmts))

    def stmt(self, s: ir.Stmt) -> list[ir.Stmt]:
        """``s`` as statements without Effects (the statements before it, then itself)."""
        if not has_effect(s):
            return [s]
        if isinstance(s, ir.Block):
            return [self.block(s)]
        pre: list[ir.Stmt] = []
        lowered = self.lower(s, pre)
        return [*pre, lowered]

    def lower(self, s: ir.Stmt, pre: list[ir.Stmt]) -> ir.Stmt:
        """``s`` without Effects; the statements to run before it go to ``pre``."""
        if isinstance(s, ir.Assign):
            if has_effect(s.lhs):
                # a left side that calls a function is evaluated first, to a location whose
                # indexes are saved (p4c does so: in ``a[g(i)] = f(i)`` with f writing i, g
                # reads the old i), then the right side
                lhs = self.location_first(s.lhs, pre)
                return replace(s, lhs=lhs, rhs=self.value(s.rhs, pre))
            # otherwise the right side first, then the location written (p4c/BMv2 do so: in
            # ``a[i] = f(i)`` where f writes i, the element is the one at the new i)
            rhs, lhs = self.operands([s.rhs, s.lhs], [False, True], pre)
            return replace(s, lhs=lhs, rhs=rhs)
        if isinstance(s, ir.VarDecl):
            return replace(s, init=self.value(s.init, pre))
        if isinstance(s, ir.If):
            return replace(s, cond=self.value(s.cond, pre), then=self.block(s.then),
                           else_=self.block(s.else_))
        if isinstance(s, ir.SwitchValue):
            return replace(s, expr=self.value(s.expr, pre),
                           cases=[replace(c, body=self.block(c.body)) for c in s.cases])
        if isinstance(s, ir.SwitchAction):
            return replace(s, cases=[replace(c, body=self.block(c.body)) for c in s.cases])
        if isinstance(s, ir.ActionCall):
            dirs = self.action_dirs(s.action)
            return replace(s, args=self.operands(s.args, [d in ("out", "inout") for d in dirs],
                                                 pre))
        if isinstance(s, ir.ExternCall):
            return replace(s, args=self.operands(s.args, _locations(s), pre))
        if isinstance(s, ir.Extract):
            if s.bits is None:
                return replace(s, header=self.operands([s.header], [True], pre)[0])
            h, bits = self.operands([s.header, s.bits], [True, False], pre)
            return replace(s, header=h, bits=bits)
        if isinstance(s, ir.Advance):
            return replace(s, bits=self.value(s.bits, pre))
        if isinstance(s, ir.Emit | ir.HeaderMethod):
            return replace(s, header=self.operands([s.header], [True], pre)[0])
        if isinstance(s, ir.StackMethod):
            return replace(s, stack=self.operands([s.stack], [True], pre)[0])
        if isinstance(s, ir.For):
            return replace(s, init=self.stmts(s.init), update=self.stmts(s.update),
                           body=self.block(s.body))
        raise TypeError(f"side effects in {type(s).__name__}")  # pragma: no cover

    def select_keys(self, keys: list[ir.Expr], pre: list[ir.Stmt]) -> list[ir.Expr]:
        """A select's keys, left to right (the statements they need go to ``pre``)."""
        return self.operands(keys, [False] * len(keys), pre)

    # -- expressions -----------------------------------------------------------------------
    @overload
    def value(self, e: ir.Expr, pre: list[ir.Stmt]) -> ir.Expr: ...
    @overload
    def value(self, e: ir.Expr | None, pre: list[ir.Stmt]) -> ir.Expr | None: ...
    def value(self, e: ir.Expr | None, pre: list[ir.Stmt]) -> ir.Expr | None:
        if e is None or not has_effect(e):
            return e
        return self.operands([e], [False], pre)[0]

    def operands(self, es: list[ir.Expr], locations: list[bool],
                 pre: list[ir.Stmt]) -> list:
        """Expressions evaluated left to right, without Effects; ``locations[i]``: the i-th is
        an l-value (written by the call), saved as a location, never as a value."""
        out: list = []
        for e in es:
            mine: list[ir.Stmt] = []
            e = self.expr(e, mine) if e is not None else None
            if mine:  # e runs statements: what was evaluated before it must not change
                out = [self.stable(x, loc, pre) for x, loc in zip(out, locations, strict=False)]
                pre.extend(mine)
            out.append(e)
        return out

    def expr(self, e: ir.Expr, pre: list[ir.Stmt]) -> ir.Expr:
        if not has_effect(e):
            return e
        if isinstance(e, Effect):
            pre.extend(self.stmts(e.stmts))
            if isinstance(e.result, ir.Var):  # a call's result variable: written only by it
                self.temps.add(e.result.name)
            return self.expr(e.result, pre)
        if isinstance(e, ir.Binary) and e.op in ("&&", "||"):
            return self.short_circuit(e, pre)
        if isinstance(e, ir.Mux):
            return self.mux(e, pre)
        if isinstance(e, ir.Member | ir.Slice):
            return replace(e, base=self.expr(e.base, pre))
        if isinstance(e, ir.StackNext | ir.StackLast | ir.StackProp):
            return replace(e, stack=self.expr(e.stack, pre))
        if isinstance(e, ir.IsValid):
            return replace(e, header=self.expr(e.header, pre))
        if isinstance(e, ir.Cast):
            return replace(e, expr=self.expr(e.expr, pre))
        if isinstance(e, ir.Unary):
            return replace(e, operand=self.expr(e.operand, pre))
        if isinstance(e, ir.StackElem):
            stack, index = self.operands([e.stack, e.index], [True, False], pre)
            return replace(e, stack=stack, index=index)
        if isinstance(e, ir.Binary | ir.Concat):
            left, right = self.operands([e.left, e.right], [False, False], pre)
            return replace(e, left=left, right=right)
        if isinstance(e, ir.ListExpr):
            return replace(e, items=self.operands(e.items, [False] * len(e.items), pre))
        if isinstance(e, ir.ExternCallExpr):
            return replace(e, args=self.operands(e.args, _locations(e), pre))
        raise TypeError(f"side effects in {type(e).__name__}")  # pragma: no cover

    def short_circuit(self, e: ir.Binary, pre: list[ir.Stmt]) -> ir.Expr:
        left = self.expr(e.left, pre)
        then: list[ir.Stmt] = []
        right = self.expr(e.right, then)
        if not then:
            return replace(e, left=left, right=right)
        t = self.temp("cond", _BOOL, left, pre, e.loc)
        test = t if e.op == "&&" else ir.Unary("!", t, type=_BOOL, loc=e.loc)
        pre.append(ir.If(test, ir.Block([*then, ir.Assign(t, right, loc=e.loc)], loc=e.loc),
                         loc=e.loc))
        return t

    def mux(self, e: ir.Mux, pre: list[ir.Stmt]) -> ir.Expr:
        cond = self.expr(e.cond, pre)
        a: list[ir.Stmt] = []
        b: list[ir.Stmt] = []
        then, else_ = self.expr(e.then, a), self.expr(e.else_, b)
        if not a and not b:
            return replace(e, cond=cond, then=then, else_=else_)
        t = self.temp("mux", e.type, None, pre, e.loc)
        pre.append(ir.If(cond, ir.Block([*a, ir.Assign(t, then, loc=e.loc)], loc=e.loc),
                         ir.Block([*b, ir.Assign(t, else_, loc=e.loc)], loc=e.loc),
                         loc=e.loc))
        return t

    # -- temporaries -----------------------------------------------------------------------
    def temp(self, stem: str, t: ir.Type, init: ir.Expr | None, pre: list[ir.Stmt],
             loc: ir.SourceLoc | None) -> ir.Var:
        name = self.fresh(stem)
        self.temps.add(name)
        pre.append(ir.VarDecl(name, t, init, loc=loc))
        return ir.Var(name, type=t, loc=loc)

    @overload
    def stable(self, e: ir.Expr, location: bool, pre: list[ir.Stmt]) -> ir.Expr: ...
    @overload
    def stable(self, e: ir.Expr | None, location: bool, pre: list[ir.Stmt]) -> ir.Expr | None: ...
    def stable(self, e: ir.Expr | None, location: bool, pre: list[ir.Stmt]) -> ir.Expr | None:
        """``e`` as evaluated now, immune to what later statements write: a value is saved in
        a temporary; a location keeps its path with run-time indexes saved."""
        if e is None or isinstance(e, ir.Const) or (
                isinstance(e, ir.Var) and e.name in self.temps):
            return e
        if location or not _storable(e.type):
            return self.pinned(e, pre)
        return self.temp("value", e.type, e, pre, e.loc)

    def location_first(self, e: ir.Expr, pre: list[ir.Stmt]) -> ir.Expr:
        """The l-value ``e`` with its calls run now: the index of each element access that
        holds a call is saved, the parts without calls are left to be read at the write."""
        if not has_effect(e):
            return e
        if isinstance(e, ir.Member | ir.Slice):
            return replace(e, base=self.location_first(e.base, pre))
        if isinstance(e, ir.StackNext | ir.StackLast):
            return replace(e, stack=self.location_first(e.stack, pre))
        if isinstance(e, ir.StackElem):
            stack = self.location_first(e.stack, pre)
            return replace(e, stack=stack, index=self.stable(self.expr(e.index, pre), False, pre))
        return self.expr(e, pre)  # pragma: no cover - an l-value is one of the above

    def pinned(self, e: ir.Expr, pre: list[ir.Stmt]) -> ir.Expr:
        if isinstance(e, ir.Member | ir.Slice):
            return replace(e, base=self.pinned(e.base, pre))
        if isinstance(e, ir.StackNext | ir.StackLast | ir.StackProp):
            return replace(e, stack=self.pinned(e.stack, pre))
        if isinstance(e, ir.StackElem):
            return replace(e, stack=self.pinned(e.stack, pre),
                           index=self.stable(e.index, False, pre))
        if isinstance(e, ir.ListExpr):
            return replace(e, items=[self.stable(x, False, pre) for x in e.items])
        return e
