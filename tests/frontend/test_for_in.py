"""for ... in over header stacks and lists (spec 1.2.5): misuse is a located error; the
lowering reads each stack element into a copy and evaluates list items once
(tests/stf/programs/for_in.p4 runs it)."""

from __future__ import annotations

import pytest
from fe_helpers import compile_error, compile_ingress, ingress_program, line_of

from p4switch import ir


@pytest.mark.parametrize(
    ("body", "needle", "message"),
    [
        ("ethernet_t[2] st;\napply {\n    for (bit<8> e in st) { }\n}", "bit<8> e",
         "the variable of a for statement over ethernet_t[2] must have type ethernet_t, "
         "not bit<8>"),
        ("apply {\n    for (bit<8> e in meta.m8) { }\n}", "meta.m8",
         "a for statement iterates over a header stack, a list (list<T>){...} or a range "
         "lo .. hi, not bit<8>"),
        ("apply {\n    for (bit<8> e in {8w1, 8w2}) { }\n}", "{8w1, 8w2}",
         "a for statement iterates over a header stack"),
        ("apply {\n    for (bit<8> k in (list<bit<8>>){1, true}) { }\n}", "true",
         "list element: expected bit<8>, got bool"),
        ("apply {\n    for (bit<16> k in (list<bit<8>>){1}) { }\n}", "bit<16> k",
         "the variable of a for statement over list<bit<8>> must have type bit<8>, "
         "not bit<16>"),
        ("apply {\n    list<bit<8>> l;\n}", "list<bit<8>> l",
         "list<T> outside the collection of a for statement is not supported by p4switch"),
        ("apply {\n    for (bit<8> k in (list<bit<8>>)meta.m8) { }\n}", "meta.m8)",
         "list<T> values other than a list expression {...} is not supported"),
    ],
)
def test_for_in_misuse_is_a_located_error(body: str, needle: str, message: str) -> None:
    text = ingress_program(body)
    err = compile_error(text)
    assert message in err.message, err.message
    assert err.loc is not None and err.loc.line == line_of(text, needle), str(err)


def test_stack_loop_reads_a_copy_of_each_element() -> None:
    prog = compile_ingress("ethernet_t[3] st;\n"
                           "apply { for (ethernet_t e in st) { meta.m16 = e.etherType; } }")
    loop = next(s for s in prog.controls["I"].body.stmts if isinstance(s, ir.For))
    assert isinstance(loop.cond, ir.Binary) and loop.cond.right.value == 3
    first = loop.body.stmts[0]
    assert isinstance(first, ir.VarDecl) and isinstance(first.init, ir.StackElem)


def test_list_items_are_evaluated_before_the_loop() -> None:
    prog = compile_ingress("apply { for (bit<8> k in (list<bit<8>>){meta.m8, 2}) "
                           "{ meta.m8 = meta.m8 + k; } }")
    loop = next(s for s in prog.controls["I"].body.stmts if isinstance(s, ir.For))
    decls = [s for s in loop.init if isinstance(s, ir.VarDecl)]
    # the index, then one local per item holding its value
    assert len(decls) == 3
    assert isinstance(decls[1].init, ir.Member) and decls[1].init.field == "m8"
    assert loop.cond.right.value == 2
