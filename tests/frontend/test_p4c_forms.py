"""Forms p4c's own test corpus uses that p4switch takes as p4c does (their packet behaviour is
in the STF programs subblock_defaults, serenum_implicit, struct_valued_expr and
extract_dontcare): what they compile to, and the located errors of their misuse."""

from __future__ import annotations

from fe_helpers import HEADERS, REST, compile_error, compile_ingress, ingress_program, line_of

from p4switch import ir
from p4switch.frontend import compile_source


def test_static_assert_holds_or_fails_at_its_call():
    prog = compile_ingress("apply { static_assert(true); }",
                           prelude="const bool ok = static_assert(V1MODEL_VERSION >= 20160101,"
                                   " \"old v1model\");\n")
    assert isinstance(prog, ir.Program)
    text = ingress_program("apply { static_assert(1 == 2, \"one is not two\"); }")
    err = compile_error(text)
    assert "static assertion failed: one is not two" in err.message
    assert err.loc.line == line_of(text, "static_assert(1 == 2")


def test_struct_valued_expression_needs_every_field():
    text = ingress_program("apply { hdr.ethernet = { dstAddr = 1, srcAddr = 2 }; }")
    err = compile_error(text)
    assert "missing etherType" in err.message
    assert err.loc.line == line_of(text, "dstAddr = 1")
    text = ingress_program("apply { meta.m8 = { x = 1 }; }")
    assert "expected bit<8>, got a structure with fields x" in compile_error(text).message


def test_annotated_entries_property():
    prog = compile_ingress("""
        action a() { }
        table t {
            key = { hdr.ethernet.etherType : exact; }
            actions = { a; NoAction; }
            @noWarn("duplicate-priorities") const entries = { 0x800 : a(); }
        }
        apply { t.apply(); }""")
    [t] = prog.controls["I"].tables.values()
    assert [e.action.action for e in t.const_entries] == ["I.a"]


def test_parser_without_packet_in_is_a_sub_parser_only():
    sub = "parser Half(out bit<8> r, in bit<8> v = 4) { state start { r = v >> 1; " \
          "transition accept; } }\n"
    prog = compile_source(HEADERS + sub + """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Half() h;
    state start { h.apply(meta.m8); transition accept; }
}
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
""" + REST, "t.p4")
    assert "Half" not in prog.parsers
    text = HEADERS + """
parser P(out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
""" + REST
    err = compile_error(text)
    assert "parser 'P' has 3 parameters, but Parser needs 4" in err.message
    assert err.loc.line == line_of(text, "V1Switch(")


def test_default_of_an_out_parameter_is_refused():
    text = HEADERS + "control S(out bit<8> r = 1) { apply { r = 2; } }\n" + ingress_program(
        "S() s; apply { s.apply(meta.m8); }")[len(HEADERS):]
    err = compile_error(text)
    assert "only an 'in' parameter can have a default value" in err.message
    assert err.loc.line == line_of(text, "out bit<8> r = 1")


def test_extract_into_dont_care_needs_the_header_type():
    text = ingress_program("apply { }").replace(
        "pkt.extract(hdr.ethernet);", "pkt.extract(_);")
    assert "extract<T>(_)" in compile_error(text).message


def test_an_extern_function_p4switch_cannot_run_is_refused_where_it_is_called():
    """A declared extern function without an implementation compiles (p4c's front end takes
    it) but the pipeline cannot be built: the error names the call's line."""
    import pytest

    from p4switch.errors import P4CompileError
    from p4switch.pipeline import Pipeline

    text = ingress_program("apply { tally(meta.m8); }",
                           prelude="extern void tally(in bit<8> v);\n")
    prog = compile_source(text, "t.p4")
    with pytest.raises(P4CompileError) as info:
        Pipeline(prog)
    assert "unsupported extern function tally" in str(info.value)
    assert info.value.loc is not None and info.value.loc.line == line_of(text, "tally(meta.m8)")


def _pipeline(text: str):
    from p4switch.pipeline import Pipeline

    return Pipeline(compile_source(text, "t.p4"))


def test_sub_control_action_with_a_global_name_called_by_another_action():
    """switch_p4_16's form: the inlined copy of ``helper`` is the standalone one (same
    global @name); dropping the standalone control must not drop the action its caller
    runs."""
    sub = """
control Sub(inout headers hdr) {
    @name(".Sub.helper") action helper(bit<8> v) { }
    @name(".Sub.run") action run(bit<8> v) { helper(v); hdr.ipv4.ttl = v; }
    table t { key = { hdr.ipv4.dstAddr : exact; } actions = { run; } }
    apply { t.apply(); }
}
"""
    _pipeline(ingress_program("Sub() s; apply { s.apply(hdr); }", prelude=sub))


def test_log_msg_of_an_enum_and_a_located_refusal_of_its_hash():
    """issue2201-bmv2's form: log_msg prints an enum without underlying type; hashing one
    (it has no width) is refused where the hash is."""
    prelude = "enum Color { Red, Blue }\n"
    _pipeline(ingress_program(
        "apply { Color c = Color.Blue; log_msg(\"c={}\", {c}); }", prelude=prelude))
    text = ingress_program(
        "apply { Color c = Color.Red; hash(meta.m16, HashAlgorithm.crc16, 16w0, {c}, 16w100); }",
        prelude=prelude)
    import pytest

    from p4switch.errors import P4CompileError
    with pytest.raises(P4CompileError) as info:
        _pipeline(text)
    assert "without a width" in str(info.value)
    assert info.value.loc is not None and info.value.loc.line == line_of(text, "hash(meta.m16")


def test_a_header_of_odd_width_is_refused_at_its_declaration():
    text = HEADERS.replace("struct headers {", "header odd_t { bit<3> x; }\nstruct headers {") \
        + ingress_program("apply { }")[len(HEADERS):]
    text = text.replace("struct headers { ethernet_t ethernet;",
                        "struct headers { odd_t odd; ethernet_t ethernet;")
    import pytest

    from p4switch.errors import P4CompileError
    with pytest.raises(P4CompileError) as info:
        _pipeline(text)
    assert "header odd_t is 3 bits wide" in str(info.value)
    assert info.value.loc is not None and info.value.loc.line == line_of(text, "header odd_t")
