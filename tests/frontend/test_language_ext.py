"""Language added for issue 11 part B: what the front end makes of each construct (IR shape,
folding) and the located error for each misuse. Packet behaviour is in tests/stf/programs/
(both pipeline paths through tests/pipeline/test_fused.py)."""

from __future__ import annotations

from fe_helpers import HEADERS, compile_error, compile_ingress, ingress_program, line_of

from p4switch import ir
from p4switch.frontend import compile_source


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


# ------------------------------------------------------------------ functions
FUNCS = """
bit<8> twice(in bit<8> x) { return x + x; }
void swap(inout bit<8> a, inout bit<8> b) { bit<8> t = a; a = b; b = t; }
"""


def test_function_call_is_inlined_with_copy_in_and_copy_out() -> None:
    prog = compile_ingress("apply { swap(meta.m8, hdr.ipv4.ttl); }", FUNCS)
    [blk] = _apply_stmts(prog)
    # copy-in of both arguments, then the body, then copy-out left to right
    decls = [s for s in blk.stmts if isinstance(s, ir.VarDecl)]
    assert [d.init.field for d in decls] == ["m8", "ttl"]
    outs = blk.stmts[-2:]
    assert [(o.lhs.field, o.rhs.name) for o in outs] == [("m8", decls[0].name),
                                                       ("ttl", decls[1].name)]


def test_function_value_is_a_variable_after_its_hoisted_body() -> None:
    prog = compile_ingress("apply { meta.m8 = twice(meta.m8) + 1; }", FUNCS)
    [blk] = _apply_stmts(prog)
    assign = blk.stmts[-1]
    assert isinstance(assign, ir.Assign) and assign.rhs.op == "+"
    result = assign.rhs.left
    assert isinstance(result, ir.Var) and result.name.startswith("twice_result")


def _fn_error(prelude: str, body: str = "apply { }") -> tuple[str, int, int, str]:
    text = ingress_program(body, prelude)
    err = compile_error(text)
    return err.message, err.loc.line, err.loc.col, text


def test_function_misuse_is_located() -> None:
    msg, line, _, text = _fn_error("bit<8> f(in bit<8> x) { x = 1; return x; }")
    assert msg == "cannot write to 'in' parameter 'x'" and line == line_of(text, "x = 1")
    msg, line, _, text = _fn_error("bit<8> f(in bit<8> x) {\n    return;\n}")
    assert msg == "function 'f' must return a value of type bit<8>"
    assert line == line_of(text, "    return;")
    msg, line, _, text = _fn_error("void f(in bit<8> x) {\n    return x;\n}")
    assert msg == "function 'f' returns void: 'return' takes no value"
    msg, line, _, text = _fn_error("bit<8> f(in bit<8> x) {\n    exit;\n}")
    assert msg == "exit is not allowed in a function" and line == line_of(text, "    exit;")
    msg, line, col, text = _fn_error(FUNCS, "apply {\n    meta.m8 = twice(1, 2);\n}")
    assert msg == "function 'twice' expects 1 arguments, got 2"
    assert (line, col) == (line_of(text, "twice(1, 2)"), 15)
    msg, line, _, text = _fn_error(FUNCS, "apply {\n    meta.m8 = swap(meta.m8, meta.m8);\n}")
    assert msg == "function 'swap' returns void: it has no value"
    msg, line, _, text = _fn_error(FUNCS, "apply {\n    swap(meta.m8, 3);\n}")
    assert msg == "'3' cannot be written to" and line == line_of(text, "swap(meta.m8, 3)")
    msg, line, _, text = _fn_error(FUNCS, "table t { key = { meta.m8: exact; } "
                                   "actions = { NoAction; } }\napply { meta.m8 = twice(t); }")
    assert "'t'" in msg and line == line_of(text, "twice(t)")
    # the body is checked at the declaration, with no call
    msg, line, _, text = _fn_error("bit<8> f(in bit<8> x) {\n    return undefined_name;\n}")
    assert "undefined_name" in msg and line == line_of(text, "return undefined_name")


def test_function_key_expression_is_refused_with_a_location() -> None:
    msg, line, _, text = _fn_error(FUNCS, "table t {\n    key = { twice(meta.m8): exact; }\n"
                                   "    actions = { NoAction; }\n}\napply { t.apply(); }")
    assert msg.startswith("function 'twice' cannot be called here")
    assert line == line_of(text, "twice(meta.m8): exact")


def test_recursive_function_is_refused() -> None:
    msg, line, _, text = _fn_error("bit<8> f(in bit<8> x) {\n    return f(x);\n}")
    assert msg == "function 'f' calls itself (recursion is not allowed in P4)"


# ------------------------------------------------------------------ for / break / continue
def test_for_statement_ir() -> None:
    prog = compile_ingress("apply { for (bit<8> i = 0, bit<8> j = 1; i < 4; i = i + 1, j += 2) "
                           "{ if (i == 2) { continue; } meta.m8 = meta.m8 + j; } }")
    [loop] = _apply_stmts(prog)
    assert isinstance(loop, ir.For)
    assert [type(s) for s in loop.init] == [ir.VarDecl, ir.VarDecl]
    assert [type(s) for s in loop.update] == [ir.Assign, ir.Assign]
    assert isinstance(loop.body.stmts[0].then.stmts[0], ir.Continue)


def test_range_for_cannot_wrap_around() -> None:
    prog = compile_ingress("apply { for (bit<8> v in 0 .. 255) { meta.m8 = meta.m8 + 1; } }")
    [loop] = _apply_stmts(prog)
    # the condition is a flag set from v <= last and updated with v != last before v + 1
    assert isinstance(loop.cond, ir.Var) and loop.cond.type == ir.BoolType()
    assert loop.update[0].rhs.op == "!=" and loop.update[1].rhs.op == "+"


def test_loop_misuse_is_located() -> None:
    text = ingress_program("apply {\n    break;\n}")
    err = compile_error(text)
    assert err.message == "break outside a for statement"
    assert (err.loc.line, err.loc.col) == (line_of(text, "    break;"), 5)
    text = ingress_program("action a() {\n    continue;\n}\napply { for (;;) { a(); } }")
    err = compile_error(text)
    assert err.message == "continue outside a for statement"
    text = ingress_program("apply {\n    for (bit<8> i = 0; i; i = i + 1) { }\n}")
    err = compile_error(text)
    assert err.message == "the condition of a for statement must be bool, not bit<8>"
    assert err.loc.line == line_of(text, "for (bit<8> i")
    text = ingress_program("apply {\n    for (bool b in true .. false) { }\n}")
    err = compile_error(text)
    assert "must be bit<W> or int<W>, not bool" in err.message
    # a function body's break needs its own loop, even when called inside one
    prelude = "bit<8> f(in bit<8> x) {\n    break;\n    return x;\n}\n"
    text = ingress_program("apply { }", prelude)
    err = compile_error(text)
    assert err.message == "break outside a for statement" and err.loc.line == line_of(text,
                                                                                      "break;")


# ------------------------------------------------------------------ contextual keywords
def test_contextual_keywords_name_fields_variables_and_parameters() -> None:
    prelude = ("header kw_t { bit<8> key; bit<8> state; bit<8> type; bit<8> priority; }\n"
               "type bit<8> Apply_t;\n")
    prog = compile_ingress("bit<8> entries = 1;\naction a(in bit<8> apply, bit<8> actions) "
                           "{ meta.m8 = actions + apply; }\n"
                           "table t { key = { meta.m8: exact; } actions = { NoAction; } }\n"
                           "apply { kw_t k; k.key = entries; k.type = k.state; t.apply(); }",
                           prelude)
    assert prog.controls["I"].tables["t"].keys[0].name == "meta.m8"
    assert [p.name for p in prog.actions["I.a"].params] == ["apply", "actions"]
    assert "Apply_t" in prog.types


def test_reserved_keywords_still_cannot_name_things() -> None:
    text = ingress_program("apply {\n    bit<8> table = 1;\n}")
    err = compile_error(text)
    assert "'table' is a P4 keyword and cannot be used as a name" in err.message
    assert (err.loc.line, err.loc.col) == (line_of(text, "bit<8> table"), 12)


# ------------------------------------------------------------------ defaults and '_'
def test_action_defaults_fill_omitted_arguments() -> None:
    prog = compile_ingress("action a(in bit<8> x, in bit<8> y = 9) { meta.m8 = x + y; }\n"
                           "apply { a(1); a(y = 2, x = 3); }")
    first, second = _apply_stmts(prog)
    assert [c.value for c in first.args] == [1, 9]
    assert [c.value for c in second.args] == [3, 2]


def test_dontcare_out_argument_is_a_fresh_discarded_variable() -> None:
    prog = compile_ingress("action a(out bit<8> x) { x = 1; }\napply { a(_); }")
    [blk] = _apply_stmts(prog)
    decl, call = blk.stmts
    assert isinstance(decl, ir.VarDecl) and call.args[0] == ir.Var(decl.name, type=decl.type)


def test_defaults_and_dontcare_misuse_is_located() -> None:
    text = ingress_program("action a(in bit<8> x, in bit<8> y = 9) { }\napply {\n    a();\n}")
    err = compile_error(text)
    assert err.message == "action 'a' expects 1 to 2 arguments, got 0"
    assert err.loc.line == line_of(text, "    a();")
    text = ingress_program("action a(in bit<8> x, in bit<8> y = 9) { }\napply {\n"
                           "    a(y = 1);\n}")
    err = compile_error(text)
    assert err.message == "action 'a': no argument for parameter 'x'"
    text = ingress_program("action a(out bit<8> x = 1) { }\napply { }")
    err = compile_error(text)
    assert err.message == "an out parameter cannot have a default value"
    line = line_of(text, "action a(out")
    assert (err.loc.line, err.loc.col) == (line, text.splitlines()[line - 1].index("1") + 1)
    text = ingress_program("action a(in bit<8> x = meta.m8) { }\napply { }")
    err = compile_error(text)
    assert err.message == "the default value of 'x' must be a compile-time constant"
    # an action takes '_' for any parameter (as p4c); an extern's in parameter does not
    text = ingress_program("apply {\n    random(meta.m8, _, 8w3);\n}")
    err = compile_error(text)
    assert err.message == ("'_' can only be passed for an out parameter (argument 'lo' of "
                           "random is 'in')")
    assert (err.loc.line, err.loc.col) == (line_of(text, "    random("), 21)
    text = ingress_program("apply {\n    meta.m8 = _;\n}")
    assert "syntax error" in compile_error(text).message


# ------------------------------------------------------------------ literal truncation
def test_out_of_range_literal_in_an_implicit_cast_truncates() -> None:
    prog = compile_ingress("apply { meta.m8 = 300; meta.s8 = -200; meta.m16 = -1; "
                           "meta.m8 = meta.m8 + 257; }")
    a, b, c, d = _apply_stmts(prog)
    assert (a.rhs.value, b.rhs.value, c.rhs.value) == (44, 56, 0xFFFF)
    assert d.rhs.right == ir.Const(1, type=ir.BitsType(8))


# ------------------------------------------------------------------ direct type invocation
def test_direct_invocation_misuse_is_located() -> None:
    prelude = ("control WithCtor(inout bit<8> v)(bit<8> k) { apply { v = k; } }\n"
               "control Plain(inout bit<8> v) { apply { v = 1; } }\n")
    text = ingress_program("apply {\n    WithCtor.apply(meta.m8);\n}", prelude)
    err = compile_error(text)
    assert err.message == ("control 'WithCtor' has constructor parameters: instantiate it "
                           "(WithCtor(...) name;) and apply that")
    assert (err.loc.line, err.loc.col) == (line_of(text, "    WithCtor.apply"), 5)
    text = ingress_program("action a() {\n    Plain.apply(meta.m8);\n}\napply { a(); }", prelude)
    err = compile_error(text)
    assert err.message == "a control cannot be applied inside an action"
    assert err.loc.line == line_of(text, "    Plain.apply")
    text = ingress_program("apply {\n    Plain.apply(meta.m8, meta.m8);\n}", prelude)
    err = compile_error(text)
    assert err.message == "Plain.apply() expects 1 arguments, got 2"


# ------------------------------------------------------------------ entry priorities
def _entries_table(props: str, entries: str, const: str = "") -> str:
    return ingress_program(
        "action a(bit<8> v) { meta.m8 = v; }\n"
        "table t {\n    key = { meta.m16: ternary; }\n    actions = { a; }\n"
        f"    {props}\n    {const}entries = {{\n{entries}    }}\n}}\napply {{ t.apply(); }}")


def test_non_const_entries_are_initial_entries_with_spec_priorities() -> None:
    text = _entries_table("priority_delta = 3;",
                          "        priority = 20 : 1 &&& 1 : a(1);\n        _ : a(2);\n"
                          "        2 &&& 2 : a(3);\n")
    t = compile_source(text, "test.p4").controls["I"].tables["t"]
    assert t.const_entries is None
    assert [e.priority for e in t.initial_entries] == [20, 17, 14]
    # none given, smallest wins: the first gets 1, then + delta, mirrored to larger-wins
    text = _entries_table("largest_priority_wins = false; priority_delta = 2;",
                          "        1 &&& 1 : a(1);\n        _ : a(2);\n        2 &&& 2 : a(3);\n")
    t = compile_source(text, "test.p4").controls["I"].tables["t"]
    assert [e.priority for e in t.initial_entries] == [5, 3, 1]


def test_entry_priority_misuse_is_located() -> None:
    text = _entries_table("", "        priority = 5 : 1 &&& 1 : a(1);\n", const="const ")
    err = compile_error(text)
    assert err.message.startswith("entries of 'const entries' cannot have priorities")
    assert err.loc.line == line_of(text, "priority = 5")
    text = _entries_table("priority_delta = 10;",
                          "        priority = 12 : 1 &&& 1 : a(1);\n        _ : a(2);\n"
                          "        2 &&& 2 : a(3);\n")
    err = compile_error(text)
    assert err.message.startswith("this entry's priority would be -8")
    assert err.loc.line == line_of(text, "2 &&& 2")
    text = _entries_table("", "        1 &&& 1 : a(1);\n        priority = 3 : _ : a(2);\n")
    err = compile_error(text)
    assert err.message == ("the first entry of table 't' needs a priority when later ones "
                           "have one")
    text = _entries_table("priority_delta = 0;", "        _ : a(2);\n")
    assert compile_error(text).message == "priority_delta must be positive"
    text = _entries_table("", "        prio = 3 : _ : a(2);\n")
    err = compile_error(text)
    assert err.message == "expected 'priority = N :' before an entry, not 'prio ='"


# ------------------------------------------------------------------ keys and indexes
def test_int_and_serializable_enum_stack_indexes() -> None:
    prelude = ("header item_t { bit<8> v; }\nstruct more { item_t[4] items; }\n"
               "enum bit<8> Slot { ONE = 1, TWO = 2 }\n")
    prog = compile_ingress("more m;\napply { m.items[meta.s8].v = 1; m.items[Slot.TWO].v = 2; "
                           "Slot s = Slot.ONE; m.items[s].v = 3; }", prelude)
    a, b, _decl, c = _apply_stmts(prog)
    assert a.lhs.base.index.type == ir.BitsType(8, signed=True)
    assert b.lhs.base.index == ir.Const(2, type=ir.BitsType(32))
    assert isinstance(c.lhs.base.index, ir.Cast) and c.lhs.base.index.type == ir.BitsType(8)
    text = ingress_program("more m;\napply {\n    m.items[meta.flag].v = 1;\n}", prelude)
    err = compile_error(text)
    assert err.message == ("stack index must be bit<W>, int<W> or a serializable enum, not "
                           "bool")
    assert err.loc.line == line_of(text, "m.items[meta.flag]")


def test_enum_key_mask_converts_integers_but_values_must_be_members() -> None:
    prelude = "enum bit<16> En { X = 1 }\nstruct em { En e; }\n"
    body = ("em x;\naction a() { }\ntable t {\n    key = { x.e: ternary; }\n"
            "    actions = { a; }\n    const entries = {\n        KS : a();\n    }\n}\n"
            "apply { t.apply(); }")
    prog = compile_ingress(body.replace("KS", "En.X &&& 0xff"), prelude)
    [e] = prog.controls["I"].tables["t"].const_entries
    assert (e.keys[0].value, e.keys[0].mask) == (1, 0xFF)
    text = ingress_program(body.replace("KS", "0x1 &&& 0xff"), prelude)
    err = compile_error(text)
    assert "keyset value: expected En, got int" in err.message
    assert err.loc.line == line_of(text, "0x1 &&& 0xff")


# ------------------------------------------------------------------ header_union
def test_header_union_misuse_is_located() -> None:
    text = HEADERS + "header_union U {\n    ethernet_t e;\n    bit<8> x;\n}\n"
    err = compile_error(text)
    assert err.message == "header_union member 'x' must be a header, not bit<8>"
    assert err.loc.line == line_of(text, "bit<8> x;")
    prelude = "header_union U { ethernet_t e; ipv4_t i; }\n"
    text = ingress_program("U u;\napply {\n    u.setValid();\n}", prelude)
    err = compile_error(text)
    assert err.message == "a header_union has no method setValid() (call it on a member)"
    assert err.loc.line == line_of(text, "u.setValid()")


def test_header_union_member_writes_invalidate_the_others() -> None:
    prelude = "header_union U { ethernet_t e; ipv4_t i; }\n"
    prog = compile_ingress("U u;\napply { u.e.setValid(); if (u.isValid()) { } }", prelude)
    blk, cond = _apply_stmts(prog)
    assert [(s.header.field, s.method) for s in blk.stmts] == [("e", "setValid"),
                                                               ("i", "setInvalid")]
    assert cond.cond.op == "||"


# ------------------------------------------------------------------ struct-typed header fields
def test_struct_typed_header_fields() -> None:
    prelude = ("struct inner_t { bit<4> a; bool b; bit<3> c; }\n"
               "header outer_t { bit<8> x; inner_t s; }\n")
    prog = compile_ingress("outer_t o;\napply { o.s.a = 1; }", prelude)
    assert prog.types["outer_t"].width == 16
    text = ingress_program("apply { }", "struct bad_t { ethernet_t e; }\n"
                           "header outer_t {\n    bad_t s;\n}\n")
    err = compile_error(text)
    assert err.message == ("header field 's' must be bit<W>, int<W>, bool, a serializable "
                           "enum or a struct of those, not bad_t")
    assert err.loc.line == line_of(text, "    bad_t s;")
