"""Table keys of any type with == (spec 14.2.1.1) as p4c/BMv2 take them -- error and bool keys;
validity keys named ``h.$valid$`` as p4c names them -- and located errors for the keys p4c-bm2-ss
refuses (an enum without underlying type) or that need bits (an error key matched ternary)."""

from __future__ import annotations

from fe_helpers import compile_error, compile_ingress, ingress_program, line_of

from p4switch import ir

ENUM = "enum Color { Red, Green }\n"


def _keys(body: str, prelude: str = "") -> list[ir.TableKey]:
    prog = compile_ingress(body, prelude)
    return prog.controls["I"].tables["t"].keys


def test_error_bool_and_validity_keys():
    keys = _keys("action a() { }\n"
                 "table t { key = { sm.parser_error : exact; meta.flag : exact;\n"
                 "                  hdr.ipv4.isValid() : exact; sm.parser_error : optional; }\n"
                 "          actions = { a; } }\n"
                 "apply { t.apply(); }")
    assert [(k.name, k.match_kind, k.width) for k in keys] == [
        ("sm.parser_error", "exact", 32), ("meta.flag", "exact", 1),
        ("hdr.ipv4.$valid$", "exact", 1), ("sm.parser_error", "optional", 32)]
    assert isinstance(keys[0].expr.type, ir.ErrorType)


def test_enum_key_without_underlying_type_is_a_located_error():
    body = ("Color c = Color.Red;\naction a() { }\n"
            "table t { key = { c : exact; } actions = { a; } }\napply { t.apply(); }")
    text = ingress_program(body, ENUM)
    err = compile_error(text)
    assert "table key of enum type Color, which has no underlying type" in err.message
    assert "enum bit<W> Color" in err.message
    line = line_of(text, "key = { c : exact")
    assert (err.loc.line, err.loc.col) == (line, text.splitlines()[line - 1].index("c :") + 1)


def test_error_key_needs_exact_or_optional():
    body = ("action a() { }\n"
            "table t { key = { sm.parser_error : ternary; } actions = { a; } }\n"
            "apply { t.apply(); }")
    text = ingress_program(body)
    err = compile_error(text)
    assert err.message == "an error key can only be matched exact or optional, not ternary"
    line = line_of(text, "sm.parser_error : ternary")
    assert (err.loc.line, err.loc.col) == (line, text.splitlines()[line - 1].index("ternary") + 1)


def test_header_key_is_still_refused():
    body = ("action a() { }\n"
            "table t { key = { hdr.ipv4 : exact; } actions = { a; } }\napply { t.apply(); }")
    text = ingress_program(body)
    err = compile_error(text)
    assert "table key type ipv4_t is not allowed" in err.message
    assert err.loc.line == line_of(text, "hdr.ipv4 : exact")
