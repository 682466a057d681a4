"""Direct type invocation (P4_16 spec 15.1): ``C.apply(args)`` of a control or parser type
without constructor parameters stands for an anonymous instance of ``C`` declared in the
enclosing block and applied there. Each invocation gets its own instance, named after the
type (``C``, then ``C_1``...), as its tables' and externs' control-plane names show.

"""

from __future__ import annotations

from lark import Token, Tree

from p4switch import ir
from p4switch.frontend.bindings import Args, BlockB, BlockCtx, ParserCall, Scope, SubInstB
from p4switch.frontend.parts import Part
from p4switch.frontend.trees import has_ctor_params
from p4switch.frontend.types import BlockTypeRef


class DirectApply(Part):
    """``Type.apply(...)`` of a parser or control type without an instance
    (``parts.direct``): an anonymous sub-block instance, applied."""

    def direct_apply(self, b: BlockB, type_tok: Token, arg_trees: Args, c: Tree, scope: Scope,
                     ctx: BlockCtx, as_stmt: bool) -> ir.Stmt | ParserCall:
        tname = str(type_tok)
        if not as_stmt:
            raise self.err(c, f"{tname}.apply() does not return a value")
        if ctx.in_action:
            raise self.err(c, f"a {b.kind} cannot be applied inside an action")
        if b.tree is None:
            raise self.err(type_tok, f"'{tname}' cannot be applied directly")
        if has_ctor_params(b.tree.children[1]):
            raise self.err(type_tok, f"{b.kind} '{tname}' has constructor parameters: "
                                     f"instantiate it ({tname}(...) name;) and apply that")
        inst = ctx.fresh(tname)
        name_tok = Token.new_borrow_pos("IDENTIFIER", inst, type_tok)
        iscope = Scope(scope)  # the instance has no name the program could use
        # control-plane names use the type's name, as p4c's (so a second invocation of a
        # type with tables clashes there as it does in p4c)
        self.parts.subs.sub_instance(c, b, BlockTypeRef(tname), None, name_tok, iscope, ctx,
                                     {"name": tname})
        ib = iscope.names[inst]
        assert isinstance(ib, SubInstB)
        return self.parts.subs.sub_apply(ib, arg_trees, c, iscope, ctx)
