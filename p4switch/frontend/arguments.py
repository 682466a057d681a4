"""Call arguments: their list in source order, bound to the parameters by position or name
(``arg_list``, ``bind``), parameters with default values (P4_16 spec 6.8.2:
an omitted trailing or named argument takes the parameter's compile-time default) and the
don't-care argument ``_`` (spec 8.22: for an ``out`` parameter, a fresh variable whose value
is discarded).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING

from lark import Tree

from p4switch import ir
from p4switch.frontend.bindings import Args
from p4switch.frontend.parts import Part
from p4switch.frontend.trees import name_text

if TYPE_CHECKING:  # pragma: no cover
    from p4switch.frontend.bindings import BlockCtx, Scope


def is_dontcare(a: object) -> bool:
    return isinstance(a, Tree) and a.data == "dontcare_arg"


class Arguments(Part):
    """Argument lists bound to parameters, defaults and ``_`` (``parts.args``); evaluates
    and checks the arguments with ``exprs`` and ``stmts`` (l-values)."""

    def arg_list(self, args: Tree | None) -> Args:
        """The argument expressions in source order, with their names if they are named
        (``f(x = 1, y = 2)``); ``bind`` puts them in parameter order."""
        out = Args()
        if args is None:
            return out
        for a in args.children:
            if a.data == "dontcare_arg":  # the calls that accept it check it (arguments.py)
                out.append(a)
                out.names.append(None)
                out.nodes.append(a)
            elif a.data == "named_arg":
                out.append(a.children[1])
                out.names.append(name_text(a.children[0]))
                out.nodes.append(a)
            else:
                out.append(a.children[0])
                out.names.append(None)
                out.nodes.append(a)
        if any(out.names) and not all(out.names):
            bad = next(n for n, nm in zip(out.nodes, out.names, strict=True) if nm is None)
            raise self.err(bad, "arguments must be all named or all positional")
        return out

    def by_name(self, args: Args, params: list[str], what: str) -> dict[str, Tree]:
        """Named arguments by parameter name; an unknown or repeated name is an error."""
        out: dict[str, Tree] = {}
        for name, e, node in zip(args.names, args, args.nodes, strict=True):
            if name not in params:
                raise self.err(node, f"{what} has no parameter named '{name}'")
            if name in out:
                raise self.err(node, f"argument '{name}' of {what} given twice")
            out[name] = e
        return out

    def bind(self, args: Args, params: list[str], what: str) -> list[Tree]:
        """Arguments in the order of ``params`` (named arguments are matched by name)."""
        if not any(args.names):
            return list(args)
        by_name = self.by_name(args, params, what)
        missing = [p for p in params if p not in by_name]
        if missing:
            raise self.err(args.nodes[0], f"{what}: no argument for parameter '{missing[0]}'")
        return [by_name[p] for p in params]

    def param_default(self, default: Tree, t: object, scope: Scope, ctx: BlockCtx,
                      pname: str) -> ir.Const:
        """A parameter's default value: a compile-time constant of the parameter's type."""
        e = self.parts.exprs.expr_as(default, scope, ctx, t, f"default value of '{pname}'")
        if not isinstance(e, ir.Const):
            raise self.err(default, f"the default value of '{pname}' must be a compile-time "
                                    "constant")
        return e

    def with_defaults(self, args: Args, params: list[str], defaults: Mapping[str, ir.Expr],
                      what: str, node: object) -> list[Tree | ir.Expr]:
        """The arguments in parameter order; an omitted one is its parameter's default (an
        ir.Const, already elaborated)."""
        if any(args.names):
            by_name = self.by_name(args, params, what)
            out: list[Tree | ir.Expr] = []
            for p in params:
                if p in by_name:
                    out.append(by_name[p])
                elif p in defaults:
                    out.append(copy.deepcopy(defaults[p]))
                else:
                    raise self.err(node, f"{what}: no argument for parameter '{p}'")
            return out
        if len(args) > len(params) or any(p not in defaults for p in params[len(args):]):
            need = len([p for p in params if p not in defaults])
            counts = f"{need}" if need == len(params) else f"{need} to {len(params)}"
            raise self.err(node, f"{what} expects {counts} arguments, got {len(args)}")
        return [*args, *(copy.deepcopy(defaults[p]) for p in params[len(args):])]

    def arg_value(self, a: Tree | ir.Expr, t: object, direction: str, what: str,
                  scope: Scope, ctx: BlockCtx, action: bool = False) -> ir.Expr:
        """An argument for a parameter of type ``t``: coerced, an l-value for out/inout;
        ``_`` for out is a fresh variable declared before the statement. An action takes
        ``_`` for a parameter of any direction, as p4c does: the value passed in is
        unspecified (a fresh variable's), anything written to it is discarded."""
        if isinstance(a, ir.Expr):
            return a
        if is_dontcare(a):
            if direction != "out" and not action:
                raise self.err(a, f"'_' can only be passed for an out parameter "
                                  f"({what} is '{direction or 'directionless'}')")
            if self.env.hoisted is None or not isinstance(t, ir.Type):  # not a type variable
                raise self.err(a, f"'_' cannot be passed for {what} here")
            tmp = ctx.fresh("dontcare")
            self.env.hoisted.append(ir.VarDecl(tmp, t, loc=self.loc(a)))
            return ir.Var(tmp, type=t, loc=self.loc(a))
        e = self.parts.exprs.expr_as(a, scope, ctx, t, what)
        if direction in ("out", "inout"):
            self.parts.stmts.check_lvalue(e, a, scope)
        return e
