"""ir.Visitor: dispatch on the node's class (nearest in its MRO), generic fallback, subclass
overrides that fall back with super(), and a dispatch cache that is per visitor class."""

from __future__ import annotations

import pytest

from p4switch import ir
from p4switch.frontend import compile_source
from p4switch.frontend.dump import dump_program, expr


class Names(ir.Visitor):
    def visit_Var(self, e: ir.Var) -> str:
        return f"var {e.name}"

    def visit_Expr(self, e: ir.Expr) -> str:  # any other expression, through the MRO
        return f"expr {type(e).__name__}"

    def visit_Binary(self, e: ir.Binary, sep: str = " ") -> str:
        return sep.join([self.visit(e.left), e.op, self.visit(e.right)])


class Shouting(Names):
    def visit_Var(self, e: ir.Var) -> str:
        return super().visit_Var(e).upper()


B8 = ir.BitsType(8)


def _sum() -> ir.Binary:
    return ir.Binary("+", ir.Var("a", type=B8), ir.Const(1, type=B8), type=B8)


def test_dispatch_by_class_then_base_then_generic() -> None:
    v = Names()
    assert v.visit(ir.Var("x", type=B8)) == "var x"
    assert v.visit(ir.Const(3, type=B8)) == "expr Const"  # no visit_Const: visit_Expr
    assert v.visit(_sum(), "|") == "var a|+|expr Const"  # extra arguments are passed on
    with pytest.raises(TypeError, match="Names cannot visit Exit"):
        v.visit(ir.Exit())


def test_subclass_overrides_and_keeps_its_own_cache() -> None:
    assert Names().visit(_sum()) == "var a + expr Const"
    assert Shouting().visit(_sum()) == "VAR A + expr Const"
    assert Names().visit(ir.Var("y", type=B8)) == "var y"  # the subclass did not leak back
    assert Names._dispatch[ir.Var] is Names.visit_Var
    assert Shouting._dispatch[ir.Var] is Shouting.visit_Var


def test_dump_renders_through_the_visitor() -> None:
    assert expr(_sum()) == "(a + 1:bit<8>)"
    prog = compile_source(
        "#include <core.p4>\n#include <v1model.p4>\n"
        "header h_t { bit<8> x; } struct hs { h_t h; } struct m_t { }\n"
        "parser P(packet_in p, out hs hdr, inout m_t m, inout standard_metadata_t sm) {\n"
        "  state start { p.extract(hdr.h); transition accept; } }\n"
        "control V(inout hs hdr, inout m_t m) { apply { } }\n"
        "control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {\n"
        "  apply { if (hdr.h.isValid()) { hdr.h.x = hdr.h.x + 1; } else { exit; } } }\n"
        "control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }\n"
        "control C(inout hs hdr, inout m_t m) { apply { } }\n"
        "control D(packet_out p, in hs hdr) { apply { p.emit(hdr.h); } }\n"
        "V1Switch(P(), V(), I(), E(), C(), D()) main;\n", "v.p4")
    text = dump_program(prog)
    assert "if (hdr.h.isValid())" in text
    assert "hdr.h.x = (hdr.h.x + 1:bit<8>);" in text
    assert "exit;" in text and "extract(hdr.h);" in text and "emit(hdr.h);" in text
