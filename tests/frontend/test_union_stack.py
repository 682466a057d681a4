"""Header stacks of header_unions (spec 7.2.4, 8.20): what the front end refuses, located; the
validity rules the lowering adds (tests/stf/programs/union_stack*.p4 run them)."""

from __future__ import annotations

import pytest
from fe_helpers import compile_error, line_of, skeleton_program

from p4switch import ir
from p4switch.frontend import compile_source

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union ab_t { a_t a; b_t b; }
struct plain_t { bit<8> z; }
struct headers { a_t first; ab_t[2] us; }
struct metadata { bit<8> m8; bit<32> m32; }
"""


def program(parser_body: str = "pkt.extract(hdr.us.next.a);", ingress: str = "apply { }",
            prelude: str = "") -> str:
    return skeleton_program(PRELUDE + prelude, parser_body, ingress)


@pytest.mark.parametrize(
    ("text_args", "needle", "message"),
    [
        ({"prelude": "struct bad_t { plain_t[2] s; }\n"}, "plain_t[2] s",
         "header stack elements must be headers or header unions, not plain_t"),
        ({"parser_body": "pkt.extract(hdr.us.next);"}, "pkt.extract(hdr.us.next);",
         "extract() needs a header, not ab_t"),
        ({"ingress": "apply { hdr.us[0].setValid(); }"}, "hdr.us[0].setValid()",
         "a header_union has no method setValid() (call it on a member)"),
        ({"parser_body": "meta.m32 = hdr.us.nextIndex;"}, "hdr.us.nextIndex",
         "a stack of header unions has no nextIndex"),
        ({"parser_body": "meta.m32 = hdr.us.lastIndex;"}, "hdr.us.lastIndex",
         "a stack of header unions has no lastIndex"),
        ({"ingress": "apply { hdr.us[2].a.setValid(); }"}, "hdr.us[2]", "out of"),
    ],
)
def test_union_stack_misuse_is_a_located_error(text_args: dict[str, str], needle: str,
                                               message: str) -> None:
    text = program(**text_args)
    err = compile_error(text)
    assert message in err.message, err.message
    assert err.loc is not None and err.loc.line == line_of(text, needle), str(err)


def test_extract_into_next_member_invalidates_the_other_member_of_last() -> None:
    """extract(us.next.a) advances nextIndex, so the other member to invalidate is us.last.b,
    not (the following element's) us.next.b."""
    prog = compile_source(program(), "test.p4")
    stmts = prog.parsers["P"].states["start"].stmts
    (blk,) = stmts
    assert isinstance(blk, ir.Block)
    ext, inval = blk.stmts
    assert isinstance(ext, ir.Extract) and isinstance(ext.header.base, ir.StackNext)
    assert isinstance(inval, ir.HeaderMethod) and inval.method == "setInvalid"
    assert isinstance(inval.header, ir.Member) and inval.header.field == "b"
    assert isinstance(inval.header.base, ir.StackLast)


def test_member_valid_at_an_index_invalidates_that_element_only() -> None:
    prog = compile_source(program(ingress="apply { hdr.us[1].b.setValid(); }"), "test.p4")
    (blk,) = prog.controls["I"].body.stmts
    setv, inval = blk.stmts
    assert setv.method == "setValid" and inval.method == "setInvalid"
    assert inval.header.field == "a" and inval.header.base.index.value == 1
