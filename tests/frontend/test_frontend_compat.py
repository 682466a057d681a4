"""Compatibility with real-world v1model programs (tutorial and p4c-testdata idioms), each
construct checked on a small program of our own: the IR it compiles to, or the error it gets."""

from __future__ import annotations

from fe_helpers import (
    HEADERS,
    PARSER,
    REST,
    compile_error,
    compile_ingress,
    ingress_program,
    line_of,
)

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


# ------------------------------------------------------------------ named arguments


def test_named_arguments_bind_by_parameter_name() -> None:
    text = (HEADERS
            + "parser P(packet_in pkt, out headers hdr, inout metadata meta,\n"
              "         inout standard_metadata_t sm) {\n"
              "    state start { pkt.extract(hdr = hdr.ethernet); transition accept; }\n"
              "}\n"
              "control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {\n"
              "    register<bit<8>>(size = 16) r;\n"
              "    action a(bit<9> port, bit<8> v) { sm.egress_spec = port; meta.m8 = v; }\n"
              "    table t { key = { hdr.ethernet.etherType: exact; } actions = { a; }\n"
              "              default_action = a(v = 7, port = 3); }\n"
              "    apply {\n"
              "        t.apply();\n"
              "        r.read(index = 2, result = meta.m8);\n"
              "        a(v = 1, port = 2);\n"
              "        hash(max = 32w8, base = 8w0, data = { hdr.ethernet.srcAddr },\n"
              "             algo = HashAlgorithm.crc16, result = meta.m8);\n"
              "    }\n"
              "}\n"
              "control VC(inout headers hdr, inout metadata meta) { apply { } }\n"
              "control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {\n"
              "    apply { }\n"
              "}\n"
              "control CC(inout headers hdr, inout metadata meta) { apply { } }\n"
              "control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr = hdr.ethernet); } }\n"
              "V1Switch(p = P(), ig = I(), vr = VC(), eg = E(), ck = CC(), dep = D()) main;\n")
    prog = compile_source(text, "named.p4")
    assert prog.package == {"parser": "P", "verify_checksum": "VC", "ingress": "I",
                            "egress": "E", "compute_checksum": "CC", "deparser": "D"}
    ctl = prog.controls["I"]
    assert ctl.instances["r"].args == [ir.Const(16, type=ir.BitsType(32))]
    assert ctl.tables["t"].default_action == ir.BoundAction(
        "I.a", [ir.Const(3, type=ir.BitsType(9)), ir.Const(7, type=B8)])
    _, read, call, hsh = ctl.body.stmts
    assert isinstance(read, ir.ExternCall) and read.method == "read"
    assert [type(a) for a in read.args] == [ir.Member, ir.Const]  # (result, index)
    assert read.args[1] == ir.Const(2, type=ir.BitsType(32))
    assert isinstance(call, ir.ActionCall)
    assert call.args == [ir.Const(2, type=ir.BitsType(9)), ir.Const(1, type=B8)]
    assert isinstance(hsh, ir.ExternCall) and hsh.method == "hash"
    assert [str(a.type) for a in hsh.args] == [
        "bit<8>", "HashAlgorithm", "bit<8>", "tuple<bit<48>>", "bit<32>"]
    start = prog.parsers["P"].states["start"]
    assert isinstance(start.stmts[0], ir.Extract)
    assert isinstance(prog.controls["D"].body.stmts[0], ir.Emit)


def test_named_argument_errors() -> None:
    err = compile_error(ingress_program(
        "action a(bit<8> v) { meta.m8 = v; }\napply { a(w = 1); }"))
    assert err.message == "action 'a' has no parameter named 'w'"
    err = compile_error(ingress_program(
        "action a(bit<8> v, bit<8> u) { meta.m8 = v; }\napply { a(v = 1, 2); }"))
    assert err.message == "arguments must be all named or all positional"
    err = compile_error(ingress_program("apply { mark_to_drop(standard = sm); }"))
    assert err.message == "mark_to_drop has no parameter named 'standard'"
    assert err.source_line.strip().startswith("apply { mark_to_drop(standard")
    assert err.loc.col == len("apply { mark_to_drop(") + 1


# ------------------------------------------------------------------ @name(".NoAction") copies


def test_actions_renamed_to_an_existing_action_are_that_action() -> None:
    # p4c's own output (and programs derived from it) declares local copies of NoAction
    prog = compile_ingress(
        "@name(\".NoAction\") action NoAction_1() { }\n"
        "@name(\".NoAction\") action NoAction_2() { }\n"
        "action set(bit<8> v) { meta.m8 = v; }\n"
        "table t { key = { meta.m8: exact; } actions = { set; NoAction_1; }\n"
        "          default_action = NoAction_1(); }\n"
        "table u { key = { meta.m16: exact; } actions = { set; @defaultonly NoAction_2; }\n"
        "          default_action = NoAction_2(); }\n"
        "apply { switch (t.apply().action_run) { NoAction_1: { u.apply(); } } }")
    assert sorted(prog.actions) == ["I.set", "NoAction"]
    ctl = prog.controls["I"]
    assert ctl.actions == ["I.set"]
    t, u = ctl.tables["t"], ctl.tables["u"]
    assert [r.action for r in t.actions] == ["I.set", "NoAction"]
    assert t.default_action == ir.BoundAction("NoAction", [])
    assert [(r.action, r.scope) for r in u.actions] == [("I.set", ""), ("NoAction", "defaultonly")]
    sw = ctl.body.stmts[0]
    assert isinstance(sw, ir.SwitchAction) and sw.cases[0].actions == ["NoAction"]


def test_a_different_action_with_a_taken_name_stays_separate() -> None:
    prog = compile_ingress(
        "@name(\".NoAction\") action my_noop() { meta.m8 = 1; }\n"
        "table t { key = { meta.m8: exact; } actions = { my_noop; } }\n"
        "apply { t.apply(); }")
    assert "NoAction_1" in prog.actions and prog.actions["NoAction_1"].cp_name == "NoAction"
    assert prog.actions["NoAction"].body.stmts == []


# ------------------------------------------------------------------ messages for old idioms


def test_argument_less_mark_to_drop_says_what_to_pass() -> None:
    text = HEADERS + PARSER.replace("standard_metadata_t sm", "standard_metadata_t smeta") + (
        "control I(inout headers hdr, inout metadata meta, inout standard_metadata_t stdmeta) {\n"
        "    action drop() {\n        mark_to_drop();\n    }\n"
        "    apply { drop(); }\n}\n") + REST
    err = compile_error(text)
    assert err.message.startswith("mark_to_drop expects 1 arguments, got 0: pass the standard "
                                  "metadata, mark_to_drop(stdmeta)")
    assert (err.loc.line, err.loc.col) == (line_of(text, "mark_to_drop();"), 9)


def test_table_with_parentheses_is_a_clear_syntax_error() -> None:
    text = ingress_program("table t() { actions = { NoAction; } }\napply { t.apply(); }")
    err = compile_error(text)
    assert err.message == ("syntax error: a table declaration has no parameter list: write "
                           "'table name { ... }' (p4c rejects 'table name() { ... }' too)")
    assert (err.loc.line, err.loc.col) == (line_of(text, "table t()"), 8)


def test_block_parameter_directions_must_match_the_package() -> None:
    # p4c unifies the control's apply signature with VerifyChecksum<H, M>(inout H, inout M):
    # an 'in' header parameter does not unify
    text = ingress_program("apply { }").replace(
        "control VC(inout headers hdr,", "control VC(in headers hdr,")
    err = compile_error(text)
    assert err.message == ("parameter 'hdr' of 'VC' is 'in', but VerifyChecksum declares it "
                           "'inout': the directions must match (p4c rejects this too)")
    assert err.loc.line == line_of(text, "V1Switch(")


# ------------------------------------------------------------------ bound action arguments

_BOUND = (
    "action setbyte(out bit<8> dst, bit<8> val) { dst = val; }\n"
    "table t { key = { meta.m16: ternary; }\n"
    "          actions = { setbyte(hdr.ipv4.ttl); NoAction; } default_action = NoAction(); }\n"
    "apply { t.apply(); }")


def test_bound_action_arguments_ir_shape() -> None:
    from p4switch.frontend import tables

    assert tables.BOUND_ACTION_ARGS  # the pipeline executes them (tests/pipeline)
    prog = compile_ingress(_BOUND)
    ref = prog.controls["I"].tables["t"].actions[0]
    assert ref.action == "I.setbyte"
    (arg,) = ref.args
    assert isinstance(arg, ir.Member) and arg.field == "ttl" and arg.type == B8
    assert [p.name for p in prog.actions["I.setbyte"].data_params] == ["val"]


def test_bound_action_arguments_are_checked() -> None:
    err = compile_error(ingress_program(
        "action setbyte(out bit<8> dst, bit<8> val) { dst = val; }\n"
        "table t { key = { meta.m16: exact; } actions = { setbyte; } }\napply { t.apply(); }"))
    assert err.message == ("action 'setbyte' in the actions list of table 't' needs 1 "
                           "argument(s) for its directional parameters, got 0")
    err = compile_error(ingress_program(
        "action setbyte(out bit<8> dst, bit<8> val) { dst = val; }\n"
        "table t { key = { meta.m16: exact; } actions = { setbyte(8w1); } }\n"
        "apply { t.apply(); }"))
    assert err.message == "'8w1' cannot be written to"


# ------------------------------------------------------------------ error quality


def test_missing_semicolon_points_after_the_statement() -> None:
    text = ingress_program("apply {\n    meta.m8 = meta.m8 + 1\n}")
    err = compile_error(text)
    line = line_of(text, "meta.m8 = meta.m8 + 1")
    assert (err.loc.line, err.loc.col) == (line, len("    meta.m8 = meta.m8 + 1") + 1)
    assert err.message == "syntax error: expected ';' before '}'"


def test_missing_closing_brace_is_suggested() -> None:
    text = ingress_program("apply {\n    if (meta.flag) {\n        meta.m8 = 1;\n}")
    err = compile_error(text)
    assert err.message == "syntax error: unexpected 'control' (is a '}' missing before it?)"
    assert (err.loc.line, err.loc.col) == (line_of(text, "control VC("), 1)


def test_width_mismatch_suggests_a_cast() -> None:
    text = ingress_program("apply {\n    meta.m16 = hdr.ipv4.srcAddr;\n}")
    err = compile_error(text)
    assert err.message == ("assignment: expected bit<16>, got bit<32> (convert with a cast: "
                           "(bit<16>)...)")
    assert (err.loc.line, err.loc.col) == (line_of(text, "meta.m16 ="), 16)
