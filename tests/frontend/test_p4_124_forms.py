"""Constructs of P4_16 1.2.4 that p4c accepts for v1model and p4switch refused before: a
value_set of a struct type, select() without keys, ``_`` for any action parameter, unknown
table properties (a warning, as p4c gives), and the located errors of their invalid forms.
(Packet behaviour on both pipeline paths and against BMv2: tests/stf/programs/select_forms.p4.)"""

from __future__ import annotations

import pytest
from fe_helpers import compile_error, ingress_program, line_of

from p4switch import ir
from p4switch.frontend import compile_source
from p4switch.frontend.diagnostics import P4CompileWarning
from p4switch.pipeline import Pipeline
from p4switch.pipeline.api import ExactMatch, TernaryMatch

VS_PARSER = """
struct pair_t { bit<8> a; bit<8> b; }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    value_set<pair_t>(4) pairs;
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType[15:8], hdr.ethernet.etherType[7:0]) {
            pairs: hit;
            (0x08, _): other;
            default: accept;
        }
    }
    state hit { meta.m8 = 1; transition accept; }
    state other { meta.m8 = 2; transition accept; }
}
"""
VS_INGRESS = "apply { sm.egress_spec = 1; hdr.ethernet.srcAddr[7:0] = meta.m8; }"


def _vs_program() -> str:
    from fe_helpers import HEADERS, REST
    return (HEADERS + VS_PARSER
            + "control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm)"
            + " {\n" + VS_INGRESS + "\n}\n" + REST)


def _frame(ether_type: int) -> bytes:
    return bytes(6) + bytes(6) + ether_type.to_bytes(2, "big")


def _marked(p: Pipeline, ether_type: int) -> int:
    [out] = p.process(_frame(ether_type), 0, 0).outputs
    return out.data[11]


def test_a_struct_value_set_matches_all_keys_jointly() -> None:
    prog = compile_source(_vs_program(), "vs.p4")
    [case, *_] = prog.parsers["P"].states["start"].transition.cases
    assert case.keysets == [ir.KeysetValueSet("pairs", keys=2), ir.KeysetDefault()]
    p = Pipeline(prog)
    assert _marked(p, 0x0102) == 0
    p.value_set_set("P.pairs", [[ExactMatch(0x01), ExactMatch(0x02)],
                                [ExactMatch(0x08), TernaryMatch(0x00, 0xF0)]])
    assert _marked(p, 0x0102) == 1
    assert _marked(p, 0x0103) == 0  # a matches, b does not: no member matches both
    assert _marked(p, 0x0201) == 0
    assert _marked(p, 0x0805) == 1  # the second member, b ternary
    assert _marked(p, 0x0815) == 2  # not a member: the next case


def test_struct_value_set_in_p4info_has_one_match_field_per_member() -> None:
    from p4switch.p4info import build_p4info
    info = build_p4info(compile_source(_vs_program(), "vs.p4"))
    [vs] = info.value_sets
    assert [(m.name, m.bitwidth) for m in vs.match] == [("a", 8), ("b", 8)]


def test_a_struct_value_set_with_other_key_types_is_refused_where_used() -> None:
    text = _vs_program().replace("hdr.ethernet.etherType[7:0]) {", "hdr.ethernet.etherType) {")
    err = compile_error(text)
    assert err.loc.line == line_of(text, "pairs: hit;")
    assert "value_set of type pair_t" in err.message


def test_a_value_set_of_a_header_is_refused() -> None:
    text = _vs_program().replace("value_set<pair_t>(4)", "value_set<ethernet_t>(4)").replace(
        "pairs: hit;", "")
    err = compile_error(text)
    assert err.loc.line == line_of(text, "value_set<ethernet_t>")


def test_select_without_keys_takes_only_default() -> None:
    text = ingress_program("apply { }").replace(
        "pkt.extract(hdr.ethernet); transition accept;",
        "pkt.extract(hdr.ethernet); transition select() { 1: accept; }")
    err = compile_error(text)
    assert "keyset has 1 elements but there are 0 keys" in err.message
    assert err.loc.line == line_of(text, "transition select()")


def test_dontcare_stays_refused_for_non_out_parameters_of_functions() -> None:
    # p4c refuses these too (a function's in/inout parameter needs a value)
    text = ingress_program("apply { f(_); }", "void f(in bit<8> a) { }\n")
    err = compile_error(text)
    assert err.loc.line == line_of(text, "apply { f(_); }")


def test_unknown_table_property_is_a_located_warning() -> None:
    text = ingress_program("action a() { } table t { key = { meta.m8: exact; } "
                           "actions = { a; } my_prop = 3; } apply { t.apply(); }")
    with pytest.warns(P4CompileWarning) as record:
        prog = compile_source(text, "t.p4")
    [w] = [str(r.message) for r in record]
    assert w.startswith(f"t.p4:{line_of(text, 'my_prop')}:")
    assert "unknown table property 'my_prop'" in w
    assert prog.controls["I"].tables["t"].actions


def test_a_known_property_with_a_bad_value_is_still_an_error() -> None:
    text = ingress_program("action a() { } table t { key = { meta.m8: exact; } "
                           "actions = { a; } size = -1; } apply { t.apply(); }")
    err = compile_error(text)
    assert err.loc.line == line_of(text, "size = -1")


# ------------------------------------------------------------------ e[lo +: w]
def _ps(body: str) -> ir.Program:
    return compile_source(ingress_program(body), "ps.p4")


def test_part_select_with_a_constant_start_is_a_slice() -> None:
    prog = _ps("apply { meta.m8 = meta.m16[4 +: 8]; meta.m16[8 +: 8] = 1; }")
    a, b = prog.controls["I"].body.stmts
    assert isinstance(a.rhs, ir.Slice) and (a.rhs.hi, a.rhs.lo) == (11, 4)
    assert isinstance(b.lhs, ir.Slice) and (b.lhs.hi, b.lhs.lo) == (15, 8)


def test_part_select_with_a_run_time_start_reads_shifted_bits() -> None:
    # p4c-bm2-ss 1.2.5 stops with "Compiler Bug: Unhandled case" on this form; p4test takes it
    text = ingress_program("apply { sm.egress_spec = 1; "
                           "hdr.ethernet.srcAddr[7:0] = hdr.ethernet.dstAddr[47:0]"
                           "[hdr.ethernet.etherType[7:0] +: 8]; }")
    p = Pipeline(compile_source(text, "ps.p4"))
    dst = bytes.fromhex("0102030405a6")
    for start, want in ((0, 0xa6), (4, 0x5a), (8, 0x05), (44, 0x00), (40, 0x01)):
        frame = dst + bytes(6) + bytes([0, start])
        [out] = p.process(frame, 0, 0).outputs
        assert out.data[11] == want, start


@pytest.mark.parametrize("body,needle,message", [
    ("apply { meta.m8 = meta.m16[9 +: 8]; }", "[9 +: 8]", "out of range for bit<16>"),
    ("apply { meta.m8 = meta.m16[0 +: 17]; }", "+: 17", "width 17 is out of range"),
    ("apply { meta.m8 = meta.m16[0 +: meta.m8]; }", "+: meta.m8", "must be a compile-time"),
    ("apply { meta.m16[meta.m8 +: 8] = 1; }", "meta.m16[meta.m8", "cannot be written to"),
    ("apply { meta.m8 = meta.flag[0 +: 1]; }", "meta.flag[0", "cannot slice a value of type"),
])
def test_part_select_errors_are_located(body: str, needle: str, message: str) -> None:
    text = ingress_program(body)
    err = compile_error(text)
    assert message in err.message
    assert err.loc.line == line_of(text, needle)


# ------------------------------------------------------------------ block constructor arguments
STF = __import__("pathlib").Path(__file__).resolve().parents[1] / "stf" / "programs"


def test_a_v1switch_parser_with_constructor_arguments_is_specialised() -> None:
    prog = compile_source((STF / "ctor_block_args.p4").read_text(), "ca.p4")
    assert prog.package["parser"] == "CaParser_0"
    # the instance passed to Outer is the one MyIngress declares: one table, its name
    assert list(prog.controls["MyIngress"].tables) == ["counted.hits"]
    assert prog.controls["MyIngress"].tables["counted.hits"].cp_name == "MyIngress.counted.hits"


@pytest.mark.parametrize("old,new,needle,message", [
    ("Outer(counted) outer;", "Outer(hdr) outer;", "Outer(hdr) outer;",
     "'hdr' is not a control instance"),
    ("Outer(counted) outer;", "bit<8> x = 1; Outer(x) outer;", "Outer(x) outer;",
     "'x' is not a control instance"),
    ("V1Switch(CaParser(8w0x5a),", "V1Switch(CaParser(),", "V1Switch(CaParser()",
     "constructor"),
])
def test_block_constructor_argument_errors_are_located(old: str, new: str, needle: str,
                                                       message: str) -> None:
    text = (STF / "ctor_block_args.p4").read_text().replace(old, new)
    err = compile_error(text)
    assert message in err.message
    assert err.loc.line == line_of(text, needle)


# ------------------------------------------------------------------ const before an entry
ENTRY_CONST = ("action a(bit<8> v) { meta.m8 = v; }\n"
               "table t { key = { hdr.ethernet.etherType: exact; } actions = { a; }\n"
               "    entries = { const 1 : a(1); 2 : a(2); } }\n"
               "apply { t.apply(); sm.egress_spec = 1; hdr.ethernet.srcAddr[7:0] = meta.m8; }")


def test_a_const_entry_among_entries_cannot_be_modified_or_deleted() -> None:
    from p4switch.pipeline.api import StateCode, StateError, TableEntry
    prog = compile_source(ingress_program(ENTRY_CONST), "ec.p4")
    entries = prog.controls["I"].tables["t"].initial_entries
    assert [e.const for e in entries] == [True, False]
    p = Pipeline(prog)
    assert [_marked(p, 1), _marked(p, 2)] == [1, 2]
    flags = {e.match["hdr.ethernet.etherType"].value: e.is_const for e in p.table_entries("I.t")}
    assert flags == {1: True, 2: False}
    for op in (lambda: p.table_modify("I.t", TableEntry(
                   match={"hdr.ethernet.etherType": ExactMatch(1)}, action="I.a",
                   params={"v": 9})),
               lambda: p.table_delete("I.t", {"hdr.ethernet.etherType": ExactMatch(1)})):
        with pytest.raises(StateError) as info:
            op()
        assert info.value.code == StateCode.PERMISSION_DENIED
    assert _marked(p, 1) == 1  # unchanged
    p.table_modify("I.t", TableEntry(match={"hdr.ethernet.etherType": ExactMatch(2)},
                                     action="I.a", params={"v": 7}))
    assert _marked(p, 2) == 7
    batch = p.table_batch()
    with pytest.raises(StateError) as info:
        batch.delete("I.t", {"hdr.ethernet.etherType": ExactMatch(1)}, 0)
    assert info.value.code == StateCode.PERMISSION_DENIED


def test_const_inside_const_entries_is_refused_located() -> None:
    text = ingress_program(ENTRY_CONST.replace("entries = {", "const entries = {"))
    err = compile_error(text)
    assert "is const already" in err.message
    assert err.loc.line == line_of(text, "const 1 : a(1)")
