"""Language added for issue 11 part B: what the front end makes of each construct (IR shape,
folding) and the located error for each misuse. Packet behaviour is in tests/stf/programs/
(both pipeline paths through tests/pipeline/test_fused.py)."""

from __future__ import annotations

from fe_helpers import compile_error, compile_ingress, ingress_program, line_of

from p4switch import ir


def _apply_stmts(prog: ir.Program) -> list[ir.Stmt]:
    return prog.controls["I"].body.stmts


# ------------------------------------------------------------------ compound assignment
def test_compound_assignment_is_lhs_op_rhs() -> None:
    prog = compile_ingress("apply { meta.m8 += 3; meta.m16 >>= 2; meta.s8 |-|= 1; "
                           "meta.m32 %= 7; meta.m8 <<= meta.m8; }")
    got = [(s.lhs.field, s.rhs.op, s.rhs.left.field) for s in _apply_stmts(prog)]
    assert got == [("m8", "+", "m8"), ("m16", ">>", "m16"), ("s8", "|-|", "s8"),
                   ("m32", "%", "m32"), ("m8", "<<", "m8")]
    first = _apply_stmts(prog)[0].rhs
    assert isinstance(first.right, ir.Const) and first.right.type == ir.BitsType(8)


def test_compound_assignment_evaluates_a_run_time_stack_index_once() -> None:
    prelude = "header item_t { bit<8> v; }\nstruct more { item_t[2] items; }\n"
    prog = compile_ingress("more m;\napply { m.items[meta.m8].v += 1; }", prelude)
    [blk] = _apply_stmts(prog)
    assert isinstance(blk, ir.Block)
    decl, assign = blk.stmts
    assert isinstance(decl, ir.VarDecl) and decl.init.field == "m8"
    idx = ir.Var(decl.name, type=decl.type)
    assert assign.lhs.base.index == idx and assign.rhs.left.base.index == idx


def test_compound_assignment_misuse_is_located() -> None:
    text = ingress_program("apply {\n    meta.flag += true;\n}")
    err = compile_error(text)
    assert err.message == "'+=' needs a bit<W> or int<W> left side, not bool"
    assert (err.loc.line, err.loc.col) == (line_of(text, "meta.flag +="), 15)
    text = ingress_program("apply {\n    meta.m8 += meta.m16;\n}")
    err = compile_error(text)
    assert "'+' needs operands of the same type, got bit<8> and bit<16>" in err.message
    assert err.loc.line == line_of(text, "meta.m8 += meta.m16")
    text = ingress_program("action a(bit<8> v) { v += 1; }\napply { }")
    err = compile_error(text)
    assert err.message == "cannot write to action data parameter 'v'"
