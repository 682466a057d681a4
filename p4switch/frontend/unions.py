"""``header_union`` (P4_16 spec 7.2.5, 8.19), lowered to plain IR so that both pipeline paths
run it unchanged: a union is an ``ir.StructType`` with ``union=True`` whose fields are
headers, and the front end adds the validity rules where a member changes:

* ``u.h.setValid()``, ``extract(u.h)`` and ``u.h = e`` invalidate every other member; so do
  ``u.h.setInvalid()`` and ``u.h = e`` with an invalid ``e``: the whole union becomes invalid,
  as the spec says (BMv2 1.15.5 leaves the other members alone there, cf. p4-spec#995);
* ``u.isValid()`` is ``u.a.isValid() || u.b.isValid() || ...``;
* ``emit(u)`` emits the valid member, as emit of a struct emits its valid headers.

Header stacks of unions (spec 7.2.4, 8.20) are ``ir.StackType`` with a union ``elem``: the
same rules apply to ``us[i].a``, ``us.last.a`` and ``us.next.a``; ``extract(us.next.a)``
advances nextIndex (the pipeline does), so the members it invalidates are those of ``us.last``.
"""

from __future__ import annotations

from lark import Tree

from p4switch import ir
from p4switch.frontend.bindings import TypeB
from p4switch.frontend.errors import unsupported
from p4switch.frontend.parts import Part
from p4switch.frontend.trees import name_text
from p4switch.frontend.types import BOOL


def union_member(e: ir.Expr) -> tuple[ir.Expr, ir.StructType, str] | None:
    """(the union, its type, the member) if ``e`` is a member of a header union."""
    if isinstance(e, ir.Member) and isinstance(e.base.type, ir.StructType) and \
            e.base.type.union:
        return e.base, e.base.type, e.field
    return None


class HeaderUnions(Part):
    """Header unions (``parts.unions``): declarations and validity."""

    def decl_header_union_decl(self, d: Tree) -> None:
        annos, name, targs = d.children[0], d.children[1], d.children[2]
        if targs is not None:
            raise self.err(targs, unsupported("generic header_union"))
        fields = self.parts.decls.fields(d, self.env.globals, False)
        for f, ft in zip(fields, [c for c in d.children if isinstance(c, Tree)
                                  and c.data == "struct_field"], strict=True):
            if not isinstance(f.type, ir.HeaderType):
                raise self.err(ft, f"header_union member '{f.name}' must be a header, not "
                                   f"{f.type}")
        annotations = self.parts.annos.annotations(annos)
        u = ir.StructType(name_text(name), fields, tuple(annotations.items()), union=True)
        self.env.declare(self.env.globals, u.name, TypeB(u), name)
        self.env.types[u.name] = u

    def union_valid(self, u: ir.Expr, loc: ir.SourceLoc | None) -> ir.Expr:
        """``u.isValid()``: whether some member is valid."""
        t = u.type
        assert isinstance(t, ir.StructType)
        out: ir.Expr | None = None
        for f in t.fields:
            term = ir.IsValid(ir.Member(u, f.name, type=f.type, loc=loc), type=BOOL, loc=loc)
            out = term if out is None else ir.Binary("||", out, term, type=BOOL, loc=loc)
        return out if out is not None else ir.Const(False, type=BOOL, loc=loc)

    def union_others_invalid(self, target: ir.Expr, s: ir.Stmt) -> ir.Stmt:
        """``s`` (which set ``target``'s validity or assigned it) followed by setInvalid()
        of the other members when ``target`` is a union member; ``s`` unchanged otherwise."""
        um = union_member(target)
        if um is None:
            return s
        u, t, member = um
        if isinstance(u, ir.StackNext) and isinstance(s, ir.Extract):
            # extract(us.next.a) advanced nextIndex: the union it filled is now us.last
            u = ir.StackLast(u.stack, type=u.type, loc=u.loc)
        rest = [ir.HeaderMethod(ir.Member(u, f.name, type=f.type, loc=s.loc), "setInvalid",
                                loc=s.loc) for f in t.fields if f.name != member]
        return ir.Block([s, *rest], loc=s.loc) if rest else s
