"""Evaluation order of expressions with side effects (frontend/ordering.py): the IR the front
end builds for calls inside expressions. The packet-level behaviour, on both pipeline paths and
against BMv2, is tests/stf/programs/eval_order.p4."""

from __future__ import annotations

from fe_helpers import compile_error, compile_ingress, ingress_program, line_of

from p4switch import ir
from p4switch.frontend.ordering import Effect, has_effect

FUNCS = """
bit<8> bump(inout bit<8> v) { v = v + 1; return v; }
bool yes(inout bit<8> n) { n = n + 1; return true; }
"""


def _flat(stmts: list[ir.Stmt]) -> list[ir.Stmt]:
    out: list[ir.Stmt] = []
    for s in stmts:
        out.extend(_flat(s.stmts) if isinstance(s, ir.Block) else [s])
    return out


def _body(prog: ir.Program) -> list[ir.Stmt]:
    return _flat(prog.controls["I"].body.stmts)


def test_an_operand_left_of_a_call_is_saved_before_the_call() -> None:
    prog = compile_ingress("apply { meta.m8 = meta.m8 + bump(meta.m8); }", FUNCS)
    stmts = _body(prog)
    first = stmts[0]
    # meta.m8 is read into a temporary before bump's copy-in
    assert isinstance(first, ir.VarDecl) and isinstance(first.init, ir.Member)
    assert first.init.field == "m8"
    last = stmts[-1]
    assert isinstance(last, ir.Assign) and isinstance(last.rhs, ir.Binary)
    assert last.rhs.left == ir.Var(first.name, type=first.type)
    assert not has_effect(prog.controls["I"].body)


def test_a_call_on_the_right_of_and_runs_under_the_left_operand() -> None:
    prog = compile_ingress("apply { meta.flag = meta.m8 == 0 && yes(meta.m16[7:0]); }", FUNCS)
    stmts = prog.controls["I"].body.stmts
    blk = stmts[0]
    assert isinstance(blk, ir.Block)
    decl, guard, assign = blk.stmts
    assert isinstance(decl, ir.VarDecl) and isinstance(decl.init, ir.Binary)
    assert isinstance(guard, ir.If) and guard.cond == ir.Var(decl.name, type=decl.type)
    assert guard.else_ is None
    # the call's statements are inside the if, then the temporary takes the right side
    assert isinstance(guard.then.stmts[-1], ir.Assign)
    assert assign.rhs == ir.Var(decl.name, type=decl.type)


def test_or_tests_the_negated_left_operand() -> None:
    prog = compile_ingress("apply { meta.flag = meta.flag || yes(meta.m8); }", FUNCS)
    guard = prog.controls["I"].body.stmts[0].stmts[1]
    assert isinstance(guard, ir.If) and isinstance(guard.cond, ir.Unary)
    assert guard.cond.op == "!"


def test_mux_with_calls_runs_one_branch() -> None:
    prog = compile_ingress("apply { meta.m8 = meta.flag ? bump(meta.m8) : 8w3; }", FUNCS)
    stmts = prog.controls["I"].body.stmts[0].stmts
    ifs = [s for s in stmts if isinstance(s, ir.If)]
    assert len(ifs) == 1
    assert any(isinstance(s, ir.Block) for s in ifs[0].then.stmts)  # bump's body
    assert [type(s) for s in ifs[0].else_.stmts] == [ir.Assign]


def test_calls_without_side_effects_around_them_change_nothing() -> None:
    # a call whose left has only constants: no temporaries
    prog = compile_ingress("apply { meta.m8 = 8w1 + bump(meta.m8); }", FUNCS)
    decls = [s for s in _body(prog) if isinstance(s, ir.VarDecl)]
    assert all(not d.name.startswith("value") for d in decls)


def test_select_keys_are_evaluated_left_to_right() -> None:
    text = ingress_program("apply { }", FUNCS).replace(
        "pkt.extract(hdr.ethernet); transition accept;",
        "pkt.extract(hdr.ethernet); transition select(hdr.ethernet.srcAddr[7:0], "
        "bump(hdr.ethernet.dstAddr[7:0])) { (1, 2): accept; default: accept; }")
    from p4switch.frontend import compile_source
    prog = compile_source(text, "test.p4")
    start = prog.parsers["P"].states["start"]
    saved = [s for s in _flat(start.stmts) if isinstance(s, ir.VarDecl)
             and isinstance(s.init, ir.Slice)]
    assert saved and saved[0].init.base.field == "srcAddr"
    assert start.transition.select_keys[0] == ir.Var(saved[0].name, type=saved[0].type)


def test_effect_never_reaches_the_program() -> None:
    prog = compile_ingress(
        "apply { if (bump(meta.m8) == meta.m8 || yes(meta.m8)) { meta.m16 = 1; } "
        "switch (bump(meta.m8)) { 1: { meta.m16 = 2; } default: { } } }", FUNCS)
    assert not has_effect(prog.controls["I"].body)
    assert not any(isinstance(s, Effect) for s in _body(prog))


def test_a_call_in_a_for_condition_is_refused_with_its_location() -> None:
    body = "apply { for (bit<8> i = 0; bump(meta.m8) < 3; i = i + 1) { } }"
    text = ingress_program(body, FUNCS)
    err = compile_error(text)
    assert err.loc.line == line_of(text, "for (bit<8> i")
    assert "function calls in the condition of a for statement" in err.message


def test_a_block_initializer_with_a_call_runs_at_the_start_of_the_body() -> None:
    prog = compile_ingress("bit<8> v = bump(meta.m8); bit<8> w = 3; apply { meta.m16 = 1; }",
                           FUNCS)
    control = prog.controls["I"]
    assert all(d.init is None for d in control.locals if d.name in ("v", "w"))
    stmts = _flat(control.body.stmts)
    # bump's copy-in ... v = result; w = 3; then the apply block
    assigns = [s for s in stmts if isinstance(s, ir.Assign) and isinstance(s.lhs, ir.Var)]
    assert [a.lhs.name for a in assigns][-2:] == ["v", "w"]
    assert isinstance(stmts[-1], ir.Assign) and stmts[-1].lhs.field == "m16"


def test_a_parser_initializer_call_with_a_loop_to_start_is_refused_located() -> None:
    text = ingress_program("apply { }", FUNCS).replace(
        "    state start {", "    bit<8> v = bump(meta.m8);\n    state start {").replace(
        "pkt.extract(hdr.ethernet); transition accept;",
        "pkt.extract(hdr.ethernet); transition select(hdr.ethernet.etherType) "
        "{ 1: start; default: accept; }")
    err = compile_error(text)
    assert "loop back to start" in err.message
    assert err.loc.line == line_of(text, "parser P(")
