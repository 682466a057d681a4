"""Control- and parser-typed constructor parameters (spec 15.1 / 11.3) -- tests/stf's
control_ctor_params runs packets through them; here: how their instances are named, and
located errors for each misuse (p4c refuses the same programs)."""

from __future__ import annotations

import pytest
from fe_helpers import compile_error, compile_ingress, ingress_program, line_of

PRELUDE = """
control Stage(inout headers hdr);
control SetTtl(inout headers hdr)(bit<8> ttl) {
    action set(bit<8> v) { hdr.ipv4.ttl = v; }
    table ttl_t { key = { hdr.ipv4.dstAddr : exact; } actions = { set; } default_action = set(ttl); }
    apply { ttl_t.apply(); }
}
control Wrap(inout headers hdr)(Stage inner) {
    apply { if (hdr.ipv4.isValid()) { inner.apply(hdr); } }
}
control Other(inout headers hdr, in bit<8> x) { apply { } }
control OutOnly(out headers hdr) { apply { } }
parser PStage(packet_in pkt, out headers hdr) { state start { transition accept; } }
"""


def test_instances_are_named_after_the_parameter():
    prog = compile_ingress("Wrap(SetTtl(8w9)) w; Wrap(Wrap(SetTtl(8w3))) ww;\n"
                           "apply { w.apply(hdr); ww.apply(hdr); }", PRELUDE)
    tables = prog.controls["I"].tables
    assert sorted(t.cp_name for t in tables.values()) == [
        "I.w.inner.ttl_t", "I.ww.inner.inner.ttl_t"]
    defaults = sorted(t.default_action.args[0].value for t in tables.values())
    assert defaults == [3, 9]  # each instance's own constructor argument


@pytest.mark.parametrize(
    ("decl", "needle", "message"),
    [
        ("Wrap(8w1) w;", "8w1", "argument 'inner' of constructor of Wrap must be a control "
                                "instantiation like Stage()"),
        ("Wrap(PStage()) w;", "PStage()", "argument 'inner' of constructor of Wrap must be a "
                                          "control, but 'PStage' is a parser"),
        ("Wrap(Other()) w;", "Other()", "control 'Other' has 2 parameters, but Stage needs 1"),
        ("Wrap(OutOnly()) w;", "OutOnly()", "parameter 'hdr' of 'OutOnly' is 'out headers', "
                                            "but Stage declares 'inout headers'"),
        ("Wrap(Nope()) w;", "Nope()", "argument 'inner' of constructor of Wrap must be a "
                                      "control instantiation like Stage()"),
    ],
)
def test_misuse_is_a_located_error(decl: str, needle: str, message: str):
    text = ingress_program(decl + "\napply { w.apply(hdr); }", PRELUDE)
    err = compile_error(text)
    assert err.message == message
    line = line_of(text, decl)
    assert (err.loc.line, err.loc.col) == (line, text.splitlines()[line - 1].index(needle) + 1)


def test_a_control_declaration_is_not_a_parameter_type():
    prelude = PRELUDE + "control Bad(inout headers hdr)(SetTtl s) { apply { s.apply(hdr); } }\n"
    text = ingress_program("Bad(SetTtl(8w1)) b;\napply { b.apply(hdr); }", prelude)
    err = compile_error(text)
    assert err.message == ("constructor parameter 's' cannot have type control SetTtl: use a "
                           "control type declaration ('control SetTtl_t(...);') as its type")
    line = line_of(text, "control Bad(")
    assert (err.loc.line, err.loc.col) == (line, text.splitlines()[line - 1].index("SetTtl s") + 1)


EGRESS = """
control EW(inout headers hdr, inout metadata meta, inout standard_metadata_t sm)(Stage s) {
    apply { s.apply(hdr); }
}
"""


def _with_egress(egress: str, prelude: str = PRELUDE + EGRESS) -> str:
    text = ingress_program("apply { }", prelude)
    return text.replace("V1Switch(P(), VC(), I(), E(), CC(), D()) main;",
                        f"V1Switch(P(), VC(), I(), {egress}, CC(), D()) main;")


def test_a_v1switch_control_with_constructor_arguments_is_named_as_p4c_names_it():
    from p4switch.frontend import compile_source

    prog = compile_source(_with_egress("EW(SetTtl(8w5))"), "test.p4")
    assert prog.package["egress"] == "EW_0"
    (t,) = prog.controls["EW_0"].tables.values()
    assert (t.cp_name, t.default_action.args[0].value) == ("EW_0.s.ttl_t", 5)


@pytest.mark.parametrize(
    ("egress", "needle", "message"),
    [
        ("E(8w1)", "8w1)", "control 'E' has no constructor parameters"),
        ("EW()", "EW()", "control 'EW' expects 1 constructor arguments, got 0"),
    ],
)
def test_v1switch_constructor_misuse_is_located(egress: str, needle: str, message: str):
    text = _with_egress(egress)
    err = compile_error(text)
    assert err.message == message
    line = line_of(text, "V1Switch(")
    assert (err.loc.line, err.loc.col) == (line, text.splitlines()[line - 1].index(needle) + 1)
