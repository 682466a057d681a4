"""Errors: located `file:line:col: error: message` with the source line, and unsupported
constructs named instead of being mis-executed."""

from __future__ import annotations

import pytest
from fe_helpers import HEADERS, compile_error, ingress_program, line_of

from p4switch.frontend import P4CompileError, compile_source


def test_error_format_has_location_source_line_and_caret() -> None:
    text = "header h_t {\n    bit<8> a\n}\n"
    err = compile_error(text, "bad.p4")
    # a missing ';' is reported right after the token it should follow, not at the next line
    assert (err.loc.file, err.loc.line, err.loc.col) == ("bad.p4", 2, 13)
    assert str(err) == ("bad.p4:2:13: error: syntax error: expected ';' before '}'\n"
                        "    bit<8> a\n            ^")


def test_unexpected_token_without_a_missing_semicolon() -> None:
    err = compile_error("header h_t {\n    bit<8> a;\n}}\n", "bad.p4")
    assert str(err) == "bad.p4:3:2: error: syntax error: unexpected '}'\n}}\n ^"


@pytest.mark.parametrize(
    ("construct", "snippet", "needle"),
    [
        ("abstract method", "extern E { E(); abstract void cb(); }", "abstract"),
    ],
)
def test_unsupported_top_level_constructs_are_named(construct: str, snippet: str,
                                                    needle: str) -> None:
    text = HEADERS + snippet + "\n"
    err = compile_error(text)
    assert f"{construct} is not supported by p4switch" in err.message
    assert err.loc.line == line_of(text, snippet)
    assert err.loc.col == text.splitlines()[err.loc.line - 1].index(needle) + 1


@pytest.mark.parametrize(
    ("body", "construct"),
    [
        ("apply { for (; g(meta.m8) == 1; ) { } }",
         "function calls in the condition of a for statement"),
    ],
)
def test_unsupported_block_constructs_are_named(body: str, construct: str) -> None:
    prelude = ("control Sub(inout headers hdr) { apply { } }\nextern void f(in bit<8> x);\n"
               "bit<8> g(in bit<8> x) { return x; }\n")
    text = ingress_program(body, prelude)
    err = compile_error(text)
    assert construct in err.message and "not supported by p4switch" in err.message


def control_error(body: str, prelude: str = "") -> tuple[P4CompileError, str]:
    text = ingress_program(body, prelude)
    return compile_error(text), text


def test_assigning_to_in_parameter() -> None:
    text = ingress_program("apply { }").replace(
        "control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.ethernet); } }",
        "control D(packet_out pkt, in headers hdr) {\n"
        "    apply { hdr.ethernet.etherType = 1; pkt.emit(hdr.ethernet); }\n}")
    err = compile_error(text)
    assert err.message == "cannot write to 'in' parameter 'hdr'"
    assert err.loc.line == line_of(text, "hdr.ethernet.etherType = 1")
    assert err.loc.col == 13


def test_assigning_to_action_data() -> None:
    err, text = control_error("action a(bit<8> v) { v = 1; }\napply { }")
    assert err.message == "cannot write to action data parameter 'v'"
    assert err.loc.line == line_of(text, "v = 1;")


def test_action_called_with_wrong_argument_count() -> None:
    err, text = control_error("action a(bit<8> v) { meta.m8 = v; }\napply {\n    a(1, 2);\n}")
    assert err.message == "action 'a' expects 1 arguments, got 2"
    assert (err.loc.line, err.loc.col) == (line_of(text, "a(1, 2);"), 5)


def test_extern_called_with_wrong_argument_count() -> None:
    err, _ = control_error("apply { mark_to_drop(); }")
    assert "mark_to_drop expects 1 arguments, got 0" in err.message


def test_table_key_type_not_allowed() -> None:
    err, text = control_error(
        "table t {\n    key = { hdr.ethernet: exact; }\n    actions = { NoAction; }\n}\n"
        "apply { t.apply(); }")
    assert "table key type ethernet_t is not allowed" in err.message
    assert err.loc.line == line_of(text, "hdr.ethernet: exact")


def test_unknown_match_kind_and_missing_action() -> None:
    err, _ = control_error("table t { key = { meta.m8: fuzzy; } actions = { NoAction; } }\n"
                           "apply { t.apply(); }")
    assert "unknown match kind 'fuzzy'" in err.message
    err, _ = control_error("table t { key = { meta.m8: exact; } actions = { nope; } }\n"
                           "apply { t.apply(); }")
    assert "'nope' is not an action" in err.message


def test_default_action_must_be_listed() -> None:
    err, _ = control_error(
        "action a() { }\naction b() { }\n"
        "table t { key = { meta.m8: exact; } actions = { a; } default_action = b(); }\n"
        "apply { t.apply(); }")
    assert "action 'b' is not in the actions of table 't'" in err.message


def test_unknown_parser_state() -> None:
    text = ingress_program("apply { }").replace("transition accept;", "transition nowhere;")
    err = compile_error(text)
    assert err.message == "unknown parser state 'nowhere'"
    assert err.loc.line == line_of(text, "transition nowhere;")


def test_package_block_with_wrong_signature() -> None:
    text = ingress_program("apply { }").replace(
        "control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm)",
        "control E(inout headers hdr, inout metadata meta)")
    err = compile_error(text)
    assert "control 'E' has 2 parameters, but Egress needs 3" in err.message


def test_missing_main() -> None:
    err = compile_error(HEADERS)
    assert "no package instantiation" in err.message


def test_redeclaring_a_v1model_name() -> None:
    text = HEADERS + "control Ingress(inout headers h) { apply { } }\n"
    err = compile_error(text)
    assert err.message.startswith("redeclaration of 'Ingress' (first declared at ")
    assert "v1model.p4" in err.message and "p4c rejects this too" in err.message


def test_keyword_used_as_name() -> None:
    err = compile_error(HEADERS + "header o_t { bit<8> out; }\n")
    assert "'out' is a P4 keyword" in err.message


def test_error_inside_included_file_points_at_that_file(tmp_path) -> None:  # noqa: ANN001
    inc = tmp_path / "inc.p4"
    inc.write_text("// helper\nconst bit<8> X = 8w1 + 16w1;\n")
    main = tmp_path / "main.p4"
    main.write_text('#include <core.p4>\n#include "inc.p4"\n')
    with pytest.raises(P4CompileError) as info:
        compile_source(main.read_text(), str(main))
    err = info.value
    assert err.loc.file == str(inc)
    assert (err.loc.line, err.loc.col) == (2, 18)
    assert "const bit<8> X = 8w1 + 16w1;" in str(err)



@pytest.mark.parametrize("kind", ["error", "match_kind"])
def test_error_and_match_kind_member_declared_twice(kind: str) -> None:
    """Declarations of each merge into one set, so a member repeated across them is an error."""
    text = ingress_program("apply { }", f"{kind} {{ Oops }}\n{kind} {{ Other, Oops }}\n")
    err = compile_error(text)
    assert err.message == f"{kind} 'Oops' declared twice"
    assert err.loc.line == line_of(text, "Other")
