"""Expressions: literal width inference, constant folding with wrap-around, casts, slices,
concatenation, saturating ops, shifts, ?:, comparisons and header validity."""

from __future__ import annotations

import pytest
from fe_helpers import compile_error, compile_ingress, ingress_program

from p4switch import ir

B8, B16, B32 = ir.BitsType(8), ir.BitsType(16), ir.BitsType(32)


def assigned(body_stmt: str, prelude: str = "") -> ir.Expr:
    """The right-hand side of the single assignment in the ingress apply block."""
    prog = compile_ingress("apply { " + body_stmt + " }", prelude)
    stmt = prog.controls["I"].body.stmts[-1]
    assert isinstance(stmt, ir.Assign)
    return stmt.rhs


def test_literal_takes_width_of_other_operand() -> None:
    rhs = assigned("hdr.ipv4.ttl = hdr.ipv4.ttl - 1;")
    assert isinstance(rhs, ir.Binary)
    assert rhs.type == B8 and rhs.right == ir.Const(1, type=B8)


@pytest.mark.parametrize(
    ("literal", "value", "type"),
    [
        ("8w255", 255, B8),
        ("16s-1", -1, ir.BitsType(16, True)),
        ("0x1_0", 16, B16),
        ("0b1010", 10, B16),
        ("0o17", 15, B16),
        ("16w0xffff", 0xFFFF, B16),
        ("1_000", 1000, B16),
        ("8w256", 0, B8),  # width literals wrap
    ],
)
def test_integer_literals(literal: str, value: int, type: ir.BitsType) -> None:
    prog = compile_ingress(f"apply {{ {type} x = {literal}; }}")
    decl = prog.controls["I"].body.stmts[0]
    assert isinstance(decl, ir.VarDecl)
    assert decl.init == ir.Const(value, type=type)


def test_constants_fold_with_wrap_around() -> None:
    rhs = assigned("meta.m8 = 8w250 + 8w10;")
    assert rhs == ir.Const(4, type=B8)
    rhs = assigned("meta.m8 = 8w3 - 8w5;")
    assert rhs == ir.Const(254, type=B8)
    rhs = assigned("meta.m8 = 8w250 |+| 8w10;")
    assert rhs == ir.Const(255, type=B8)
    rhs = assigned("meta.m8 = 8w3 |-| 8w5;")
    assert rhs == ir.Const(0, type=B8)
    rhs = assigned("meta.m8 = (bit<8>) (16w0x1234 >> 4);")
    assert rhs == ir.Const(0x23, type=B8)


def test_named_constants_and_typedefs_are_resolved() -> None:
    prelude = "typedef bit<16> port_t;\nconst port_t BASE = 100;\nconst bit<16> TOP = BASE * 2 + 1;\n"
    rhs = assigned("meta.m16 = TOP;", prelude)
    assert rhs == ir.Const(201, type=B16)


def test_slice_concat_cast() -> None:
    rhs = assigned("meta.m8 = hdr.ipv4.srcAddr[15:8];")
    assert isinstance(rhs, ir.Slice) and (rhs.hi, rhs.lo) == (15, 8) and rhs.type == B8
    rhs = assigned("meta.m16 = hdr.ipv4.ttl ++ hdr.ipv4.protocol;")
    assert isinstance(rhs, ir.Concat) and rhs.type == B16
    rhs = assigned("meta.m32 = (bit<32>) hdr.ipv4.ttl;")
    assert isinstance(rhs, ir.Cast) and rhs.type == B32 and rhs.expr.type == B8
    rhs = assigned("meta.m8 = 16w0xabcd[11:4];")
    assert rhs == ir.Const(0xBC, type=B8)


def test_shift_amount_may_have_another_width() -> None:
    rhs = assigned("meta.m16 = meta.m16 << hdr.ipv4.ttl;")
    assert isinstance(rhs, ir.Binary) and rhs.op == "<<" and rhs.type == B16
    assert rhs.right.type == B8
    rhs = assigned("meta.m16 = meta.m16 >> 3;")
    assert isinstance(rhs, ir.Binary) and rhs.op == ">>"


def test_mux_comparison_and_validity() -> None:
    rhs = assigned("meta.m8 = hdr.ipv4.isValid() && hdr.ipv4.ttl > 1 ? hdr.ipv4.ttl : 8w64;")
    assert isinstance(rhs, ir.Mux) and rhs.type == B8
    assert isinstance(rhs.cond, ir.Binary) and rhs.cond.op == "&&"
    assert isinstance(rhs.cond.left, ir.IsValid)
    assert rhs.cond.right.right == ir.Const(1, type=B8)


def test_bool_and_enum_and_error_values() -> None:
    prelude = "enum bit<8> Colour { RED = 1, GREEN = 2 }\nenum Mode { A, B, C }\n"
    prog = compile_ingress(
        "apply { Colour c = Colour.GREEN; Mode m = Mode.C; error e = error.NoMatch;"
        " meta.flag = !meta.flag; meta.m8 = (bit<8>) c; }", prelude)
    stmts = prog.controls["I"].body.stmts
    assert stmts[0].init == ir.Const(2, type=prog.types["Colour"])
    assert stmts[1].init == ir.Const(2, type=prog.types["Mode"])
    assert stmts[2].init == ir.Const(prog.error_code("NoMatch"), type=ir.ErrorType())
    assert isinstance(stmts[3].rhs, ir.Unary) and stmts[3].rhs.op == "!"
    assert isinstance(stmts[4].rhs, ir.Cast)


def test_shadowed_locals_are_renamed_uniquely() -> None:
    prog = compile_ingress(
        "bit<8> x = 1;\n"
        "apply { bit<8> y = x; { bit<8> x = 2; y = x; } meta.m8 = x + y; }")
    ctrl = prog.controls["I"]
    outer = ctrl.locals[0].name
    inner_block = ctrl.body.stmts[1]
    inner_decl = inner_block.stmts[0]
    assert outer == "x" and inner_decl.name != "x"
    assert inner_block.stmts[1].rhs == ir.Var(inner_decl.name, type=ir.BitsType(8))
    last = ctrl.body.stmts[-1].rhs
    assert last.left == ir.Var("x", type=ir.BitsType(8))


@pytest.mark.parametrize(
    ("stmt", "words"),
    [
        ("meta.m8 = hdr.ipv4.ttl + meta.m16;", "'+' needs operands of the same type, got bit<8> and bit<16>"),
        ("meta.m8 = meta.m16;", "assignment: expected bit<8>, got bit<16>"),
        ("meta.m8 = hdr.ipv4.nosuch;", "header ipv4_t has no field 'nosuch'"),
        ("meta.m8 = undefined_name;", "unknown name 'undefined_name'"),
        ("meta.m8 = hdr.ipv4.ttl[8:0];", "slice [8:0] is out of range for bit<8>"),
        ("if (meta.m8) { }", "condition must be bool, not bit<8>"),
        ("meta.m8 = ~5;", "'~' needs bit<W> or int<W>"),
        ("meta.flag = (bool) meta.m8;", "cannot cast bit<8> to bool"),
    ],
)
def test_type_errors_are_located(stmt: str, words: str) -> None:
    text = ingress_program("apply {\n        " + stmt + "\n}")
    err = compile_error(text)
    lines = text.splitlines()
    line = next(i for i, s in enumerate(lines, 1) if stmt in s)
    assert err.loc.file == "test.p4" and err.loc.line == line
    assert err.loc.col >= lines[line - 1].index(stmt.split()[0]) + 1
    assert words in err.message
    assert str(err).startswith(f"test.p4:{line}:{err.loc.col}: error: ")
    assert stmt in str(err).splitlines()[1]
