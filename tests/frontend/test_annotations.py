"""Annotation bodies (P4_16 spec 18.1): an unstructured body is any tokens with balanced
parentheses, a structured one (18.1.2) a list of compile-time-known ints, strings and bools or
of unique key-value pairs. What p4c accepts is accepted; what it rejects is a located error.
(What P4Info carries: tests/runtime/test_p4info_annotations.py.)"""

from __future__ import annotations

import pytest
from fe_helpers import compile_error, compile_ingress, ingress_program, line_of

from p4switch import ir


def _action(annos: str, prelude: str = "") -> str:
    return ingress_program(f"    {annos} action a() {{ }}\n    apply {{ a(); }}", prelude)


def _annotations(annos: str, prelude: str = "") -> dict[str, str]:
    prog = compile_ingress(f"    {annos} action a() {{ }}\n    apply {{ a(); }}", prelude)
    return next(act for key, act in prog.actions.items() if key.endswith("a")).annotations


def test_unstructured_bodies_hold_any_tokens_with_balanced_parentheses():
    annos = _annotations("@p(hdr.ethernet.dstAddr) @e(1 + (2 * 3)) @b(x, [y) @k(in table {) "
                         "@c(a $ ` #)")
    assert annos["p"].source == "hdr . ethernet . dstAddr"
    assert annos["e"].source == "1 + ( 2 * 3 )"
    assert annos["b"].source == "x , [ y"
    assert annos["k"].source == "in table {"
    assert annos["c"].source == "a $ ` #"


def test_known_annotations_still_read_their_values():
    prog = compile_ingress('    @name("renamed") @brief("short") action a() { }\n'
                           "    apply { a(); }")
    act = next(a for a in prog.actions.values() if a.cp_name == "I.renamed")
    assert act.annotations["brief"] == "short"
    annos = _annotations('@pair(k = "v", - 2)')
    assert (str(annos["pair"]), annos["pair"].source) == ("k=v, -2", 'k = "v" , - 2')


def test_structured_annotations_are_folded_typed_values():
    annos = _annotations('@l[1 + 2, "s", true, -4, C] @kv[a=1, b="x",] @e[]',
                         prelude="const int C = 9;\n")
    assert isinstance(annos["l"], ir.StructuredAnnotation)
    assert (annos["l"].kind, annos["l"].items) == (
        "expressions", ((None, 3), (None, "s"), (None, True), (None, -4), (None, 9)))
    assert (annos["kv"].kind, annos["kv"].items) == ("kv", (("a", 1), ("b", "x")))
    assert annos["e"].items == ()


@pytest.mark.parametrize(
    ("annos", "needle", "message"),
    [
        ("@u(x (y)", "(x", "the body of annotation @u has no closing ')'"),
        ("@s(x += 1)", "+=", "'+=' cannot appear in an annotation body"),
        ("@s(x <<= 1)", "<<=", "'<<=' cannot appear in an annotation body"),
        ("@kv[k=1, j=2, k=3]", "k=3", "duplicate key 'k' in a structured annotation"),
        ("@d[1] @d[2]", "@d[2]", "duplicate name for structured annotation @d"),
        ("@d(1) @d[2]", "@d[2]", "duplicate name for structured annotation @d"),
        ("@v[(bit<8>)3]", "(bit", "'(bit<8>)3' is not a compile-time-known int, string or bool"),
        ("@v[B]", "B]", "'B' is not a compile-time-known int, string or bool"),
        ("@v[{1, 2}]", "{1", "is not a compile-time-known int, string or bool"),
        ("@v[meta.m8]", "meta", "'meta.m8' is not a compile-time-known int, string or bool"),
        ("@v[nowhere]", "nowhere", "unknown name 'nowhere'"),
        ("@id[3]", "@id", "p4switch reads @id in its unstructured form only: write @id(...)"),
        ("@m[1, k=2]", "=2", "unexpected '=' in structured annotation @m[...]"),
        ("@m[k=1, 2]", "2]", "unexpected '2' in structured annotation @m[...]"),
    ],
)
def test_bad_annotation_bodies_are_located_errors(annos: str, needle: str, message: str):
    text = _action(annos, prelude="const bit<8> B = 1;\n")
    err = compile_error(text)
    assert message in err.message
    line = line_of(text, annos)
    assert (err.loc.line, err.loc.col) == (line, text.splitlines()[line - 1].index(needle) + 1)


def test_an_unexpected_character_outside_an_annotation_is_still_an_error():
    text = _action("@ok($)").replace("apply { a(); }", "apply { a(); $ }")
    err = compile_error(text)
    assert err.message == "syntax error: unexpected character '$'"
    assert err.loc.line == line_of(text, "apply { a(); $ }")
