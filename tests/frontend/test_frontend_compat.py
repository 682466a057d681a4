"""Compatibility with real-world v1model programs (tutorial and p4c-testdata idioms), each
construct checked on a small program of our own: the IR it compiles to, or the error it gets."""

from __future__ import annotations

from fe_helpers import compile_ingress

from p4switch import ir
from p4switch.frontend import compile_source

B8 = ir.BitsType(8)


# ------------------------------------------------------------------ type parameters are scoped


def test_type_parameter_names_are_ordinary_names_outside_their_declaration() -> None:
    # v1model's V1Switch<H, M>, register<T> and hash<O, T, D, M> must not make H, M, T, O, D
    # type names everywhere: programs use them for fields, variables and action parameters
    prog = compile_source(
        "#include <core.p4>\n#include <v1model.p4>\n"
        "header h_t { bit<8> T; bit<8> H; }\n"
        "struct headers { h_t h; }\n"
        "struct meta_t { bit<8> O; }\n"
        "parser P(packet_in b, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {\n"
        "    state start { b.extract(hdr.h); transition accept; }\n"
        "}\n"
        "control V(inout headers hdr, inout meta_t m) { apply { } }\n"
        "control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {\n"
        "    bit<8> D;\n"
        "    register<bit<8>>(4) M;\n"
        "    action a(bit<8> T) { hdr.h.H = T; D = hdr.h.T; m.O = D; M.write(0, T); }\n"
        "    table t { key = { hdr.h.T : exact; } actions = { a; } }\n"
        "    apply { t.apply(); }\n"
        "}\n"
        "control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }\n"
        "control C(inout headers hdr, inout meta_t m) { apply { } }\n"
        "control Dp(packet_out b, in headers hdr) { apply { b.emit(hdr.h); } }\n"
        "V1Switch(P(), V(), I(), E(), C(), Dp()) main;\n", "tp.p4")
    ctl = prog.controls["I"]
    a = prog.actions["I.a"]
    assert [(p.name, p.type) for p in a.params] == [("T", B8)]
    first = a.body.stmts[0]
    assert isinstance(first, ir.Assign) and first.rhs == ir.Var("T", type=B8)
    assert first.lhs == ir.Member(ir.Member(ir.Var("hdr", type=prog.types["headers"]), "h",
                                            type=prog.types["h_t"]), "H", type=B8)
    assert [v.name for v in ctl.locals] == ["D"]
    assert ctl.instances["M"].type_name == "register"
    assert ctl.tables["t"].keys[0].name == "hdr.h.T"


def test_a_header_named_like_a_type_parameter() -> None:
    prog = compile_source(
        "#include <core.p4>\n#include <v1model.p4>\n"
        "header H { bit<16> d; }\n"
        "struct P_t { H h; }\n"
        "struct M { }\n"
        "parser P(packet_in b, out P_t hdr, inout M m, inout standard_metadata_t sm) {\n"
        "    state start { b.extract(hdr.h); transition accept; }\n"
        "}\n"
        "control V(inout P_t hdr, inout M m) { apply { } }\n"
        "control I(inout P_t hdr, inout M m, inout standard_metadata_t sm) {\n"
        "    apply { hdr.h.d = hdr.h.d + 1; }\n"
        "}\n"
        "control E(inout P_t hdr, inout M m, inout standard_metadata_t sm) { apply { } }\n"
        "control C(inout P_t hdr, inout M m) { apply { } }\n"
        "control Dp(packet_out b, in P_t hdr) { apply { b.emit(hdr.h); } }\n"
        "V1Switch(P(), V(), I(), E(), C(), Dp()) main;\n", "h.p4")
    assert isinstance(prog.types["H"], ir.HeaderType)
    assert prog.types["P_t"].field_type("h") is prog.types["H"]


def test_include_guards_of_p4c_are_defined() -> None:
    # p4c's testdata fragments are wrapped in `#ifdef _CORE_P4_`
    prog = compile_ingress("apply { }", prelude=(
        "#ifdef _CORE_P4_\n#ifdef _V1_MODEL_P4_\nconst bit<8> SEEN = 1;\n#endif\n#endif\n"
        "struct uses_seen { bit<SEEN> b; }\n"))
    assert prog.types["uses_seen"].field_type("b") == ir.BitsType(1)
