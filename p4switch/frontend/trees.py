"""Helpers on lark parse trees: children by rule, names, and the normalised source text of an
expression (what p4c names table keys after)."""

from __future__ import annotations

from typing import TypeGuard

from lark import Token, Tree


def child_trees(t: Tree, data: str) -> list[Tree]:
    return [c for c in t.children if isinstance(c, Tree) and c.data == data]


def subtrees(t: Tree | None) -> list[Tree]:
    return [] if t is None else [c for c in t.children if isinstance(c, Tree)]


def core_type(t: Tree) -> Tree:
    """A type_ref tree without its wrapper (aliased alternatives are not wrapped)."""
    while isinstance(t, Tree) and t.data == "type_ref":
        t = t.children[0]
    return t


def name_text(t: Tree | Token) -> str:
    if isinstance(t, Token):
        return str(t)
    return str(t.children[0])


def unquote(s: str) -> str:
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        s = s[1:-1]
    return s.replace('\\"', '"').replace("\\\\", "\\")


def expr_text(t: Tree | Token) -> str:
    """Source-like text of an expression, normalised (as p4c names table keys)."""
    if isinstance(t, Token):
        return str(t)
    d = t.data
    c = t.children
    if d in ("name_ref",):
        return str(c[0])
    if d == "dot_name_ref":
        return "." + str(c[0])
    if d in ("int_lit", "str_lit"):
        return str(c[0])
    if d == "true_lit":
        return "true"
    if d == "false_lit":
        return "false"
    if d == "member":
        return f"{expr_text(c[0])}.{c[1].children[0]}"
    if d == "type_member":
        return f"{c[0]}.{c[1].children[0]}"
    if d == "error_member":
        return f"error.{c[0].children[0]}"
    if d == "index":
        return f"{expr_text(c[0])}[{expr_text(c[1])}]"
    if d == "slice":
        return f"{expr_text(c[0])}[{expr_text(c[1])}:{expr_text(c[2])}]"
    if d == "part_select":
        return f"{expr_text(c[0])}[{expr_text(c[1])} +: {expr_text(c[3])}]"
    if d == "call":
        args = ", ".join(expr_text(a.children[0]) for a in c[1].children) if c[1] else ""
        return f"{expr_text(c[0])}({args})"
    if d == "binop":
        return f"{expr_text(c[0])} {c[1]} {expr_text(c[2])}"
    if d in ("neg", "pos"):
        return f"{c[0]}{expr_text(c[1])}"
    if d == "bnot":
        return f"~{expr_text(c[0])}"
    if d == "lnot":
        return f"!{expr_text(c[0])}"
    if d == "cast":
        return f"({type_text(c[0])}){expr_text(c[1])}"
    if d == "mux":
        return f"{expr_text(c[0])} ? {expr_text(c[1])} : {expr_text(c[2])}"
    if d == "list_expr":
        items = c[0].children if c[0] is not None else []
        return "{" + ", ".join(expr_text(i) for i in items if i is not None) + "}"
    return "".join(expr_text(x) for x in c if x is not None)


def type_text(t: Tree) -> str:
    if t.data == "type_ref":
        return type_text(t.children[0])
    names = {"bool_type": "bool", "error_type": "error", "string_type": "string",
             "bit1_type": "bit", "infint_type": "int"}
    if t.data in names:
        return names[t.data]
    if t.data in ("bit_type", "int_type", "varbit_type"):
        w = t.children[0].children[0]
        kw = t.data.split("_")[0]
        return f"{kw}<{expr_text(w) if isinstance(w, Tree) else w}>"
    if t.data == "named_type":
        return str(t.children[0])
    return t.data

def has_ctor_params(ctor: Tree | None) -> TypeGuard[Tree]:
    return ctor is not None and ctor.children[0] is not None
