"""``varbit<W>`` header fields and the two-argument ``extract`` (P4_16 spec 7.1.6, 13.8.2).

A varbit is a header field, at most one per header (p4c's rule too), or a struct field, a
typedef, a local variable or a list item holding such a value: its length is known only once
``extract(hdr, bits)`` has read the header, so the pipeline keeps it with the value
(``ir.VarbitType``). Whatever else the program does with a varbit field is
limited to what the spec allows: assignment from a varbit of the same type, ``==``/``!=``, and
comparison of whole headers. ``minSizeInBits()``/``minSizeInBytes()`` (and the ``max`` pair)
of a header are compile-time integers.
"""

from __future__ import annotations

from lark import Tree

from p4switch import ir
from p4switch.frontend.bindings import Args, BlockCtx, Scope
from p4switch.frontend.errors import unsupported
from p4switch.frontend.parts import Part
from p4switch.frontend.types import BIT32

#: extern functions whose data argument may hold varbit fields
VARBIT_INPUTS = {"hash", "verify_checksum", "update_checksum", "verify_checksum_with_payload",
                 "update_checksum_with_payload"}
SIZE_METHODS = ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes")


def has_varbit(t: object) -> bool:
    """Whether a value of type ``t`` holds a varbit field somewhere."""
    if isinstance(t, ir.VarbitType):
        return True
    if isinstance(t, ir.HeaderType | ir.StructType):
        return any(has_varbit(f.type) for f in t.fields)
    if isinstance(t, ir.StackType):
        return has_varbit(t.elem)
    if isinstance(t, ir.TupleType):
        return any(has_varbit(e) for e in t.elems)
    return False


class Varbits(Part):
    """Varbit types and headers, sized extracts and size methods (``parts.varbits``)."""

    def varbit_type(self, t: Tree, scope: Scope) -> ir.VarbitType:
        """``varbit<W>``: header fields (the only ones extract sets), and, as p4c allows,
        struct fields, typedefs, local variables and list items, which hold a copy (the
        length travels with the value). Action data and keys cannot be varbits."""
        w = self.parts.decls.width(t.children[0], scope)
        if w <= 0:
            raise self.err(t, "varbit<W> needs a positive width")
        return ir.VarbitType(w)

    def check_varbit_header(self, h: ir.HeaderType, d: Tree) -> None:
        """At most one varbit field per header."""
        trees = [c for c in d.children if isinstance(c, Tree) and c.data == "struct_field"]
        seen = False
        for f, ft in zip(h.fields, trees, strict=True):
            if isinstance(f.type, ir.VarbitType):
                if seen:
                    raise self.err(ft, f"header {h.name} has more than one varbit field")
                seen = True

    def sized_extract(self, arg_trees: Args, c: Tree, scope: Scope, ctx: BlockCtx,
                      as_stmt: bool) -> ir.Stmt:
        """``extract(hdr, variableFieldSizeInBits)``: the ParserErrors (bits not a multiple
        of 8, more than the varbit's W, past the end of the packet) are run-time ones."""
        hdr, size = self.parts.args.bind(arg_trees, ["hdr", "variableFieldSizeInBits"],
                                         "extract()")
        h = self.parts.exprs.expr(hdr, scope, ctx)
        if not isinstance(h.type, ir.HeaderType):
            raise self.err(hdr, f"extract() needs a header, not {h.type}")
        if h.type.varbit is None:
            raise self.err(c, f"extract(hdr, bits) needs a header with a varbit field; "
                              f"{h.type.name} has none (use extract(hdr))")
        bits = self.parts.exprs.expr_as(size, scope, ctx, BIT32, "extract size")
        self.parts.stmts.check_lvalue(h, hdr, scope)
        if not as_stmt:
            raise self.err(c, "extract() does not return a value")
        return self.parts.unions.union_others_invalid(h, ir.Extract(h, bits, loc=self.loc(c)))

    def no_varbit_argument(self, e: ir.Expr, node: Tree, what: str) -> None:
        """Hash and checksum inputs take a varbit's current bits (IPv4 options in the header
        checksum); other extern arguments (digests, registers, field lists...) are laid out
        as fixed-width values, where a varbit's run-time length has no place."""
        if what not in VARBIT_INPUTS and has_varbit(e.type):
            raise self.err(node, unsupported(f"a varbit field in the arguments of {what}"))

    def size_method(self, h: ir.Expr, m: str, c: Tree) -> ir.Const:
        """``h.minSizeInBits()`` and friends: compile-time integers."""
        t = h.type
        if not isinstance(t, ir.HeaderType):
            raise self.err(c, f"{m}() is only supported on headers, not {t}")
        bits = t.min_width
        if m.startswith("max") and t.varbit is not None:
            vt = t.varbit.type
            assert isinstance(vt, ir.VarbitType)  # the header's varbit field
            bits += vt.max_width
        value = bits if m.endswith("Bits") else (bits + 7) // 8
        return ir.Const(value, type=ir.InfIntType(), loc=self.loc(c))
