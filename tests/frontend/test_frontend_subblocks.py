"""Sub-controls and sub-parsers (``Sub() c; ... c.apply(...)``), inlined by the front end:
IR shape, control-plane names (p4c's ``<outer>.<instance>.<object>``), P4Info, and packets run
through the pipeline (per-instance tables and registers, copy-in/copy-out, return, exit,
sub-parser continuation and reject)."""

from __future__ import annotations

import pytest

from p4switch import ir
from p4switch.frontend import P4CompileError, compile_source
from p4switch.p4info import build_p4info
from p4switch.pipeline import Pipeline
from p4switch.pipeline.api import ExactMatch, TableEntry

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
error { InnerBad }
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header data_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
header tail_t { bit<8> t; }
struct headers { ethernet_t ethernet; data_t data; tail_t tail; }
struct metadata { bit<8> x; bit<8> y; }
"""

TAIL = """
control VC(inout headers hdr, inout metadata meta) { apply { } }
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.data); pkt.emit(hdr.tail); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

PLAIN_PARSER = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); pkt.extract(hdr.data); transition accept; }
}
"""

CONTROLS = PRELUDE + PLAIN_PARSER + """
// one table, one register, one local per instance; the action writes a parameter
control Stage(inout bit<8> v, in bit<9> port) {
    register<bit<8>>(4) seen;
    bit<8> old;
    action set(bit<8> value) { v = value; }
    table t { key = { port: exact; } actions = { set; NoAction; } default_action = NoAction(); }
    apply {
        t.apply();
        seen.read(old, 0);
        seen.write(0, old + 1);
    }
}

control Wrap(inout bit<8> v, in bit<9> port) {
    Stage() deep;
    apply { deep.apply(v, port); }
}

control Sem(in bit<8> i, out bit<8> o, inout bit<8> io) {
    apply {
        io = io + 1;
        o = o + 5;            // out starts at zero, not at the caller's value
        if (i == io) { o = 0xEE; }   // i is a copy: io's update does not show through it
        io = io + i;
    }
}

control Ret(inout bit<8> v, in bit<8> sel) {
    apply {
        v = 1;
        if (sel == 1) { v = 2; return; }
        switch (sel) {
            2: { v = 3; return; }
            default: { }
        }
        if (sel == 4) {
            { if (sel > 3) { v = 0x40; return; } }
            v = 0x41;
        }
        v = v + 0x10;
    }
}

control Ex(inout bit<8> v, in bit<8> sel) {
    apply {
        v = 0x22;
        if (sel == 9) { exit; }
        v = 0x11;
    }
}

control AddK(inout bit<8> v)(bit<8> k) {
    apply { v = v + k; }
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Stage() s1;
    Stage() s2;
    Wrap() w;
    Sem() sem;
    Ret() r;
    Ex() ex;
    AddK(5) a5;
    AddK(8w7) a7;
    apply {
        sm.egress_spec = 2;
        if (hdr.data.a == 0xF0) {
            s1.apply(hdr.data.b, sm.ingress_port);
            s2.apply(hdr.data.c, sm.ingress_port);
            w.apply(hdr.data.d, sm.ingress_port);
        } else if (hdr.data.a == 0xF1) {
            meta.y = 7;
            sem.apply(hdr.data.b, meta.y, hdr.data.b);
            hdr.data.c = meta.y;
        } else if (hdr.data.a == 0xF2) {
            r.apply(hdr.data.c, hdr.data.b);
            hdr.data.d = 0x55;
        } else if (hdr.data.a == 0xF3) {
            ex.apply(hdr.data.c, hdr.data.b);
            hdr.data.d = 0x77;
        } else if (hdr.data.a == 0xF4) {
            a5.apply(hdr.data.b);
            a7.apply(hdr.data.c);
            a7.apply(hdr.data.c);
        } else if (hdr.data.a == 0xF5) {
            s1.apply(hdr.data.b, sm.ingress_port);
            s1.apply(hdr.data.c, sm.ingress_port);
        }
    }
}
""" + TAIL

ETH = bytes.fromhex("0000000000020000000000010800")


def run(pipe: Pipeline, data: bytes, port: int = 3) -> bytes:
    res = pipe.process(data, port, 0)
    assert [o.port for o in res.outputs] == [2], res.drops
    return res.outputs[0].data


@pytest.fixture(scope="module")
def controls() -> ir.Program:
    return compile_source(CONTROLS, "subcontrols.p4")


def test_instances_are_inlined_with_p4c_names(controls: ir.Program) -> None:
    # only the package's blocks remain; the sub-controls live inlined in I
    assert set(controls.controls) == {"VC", "I", "E", "CC", "D"}
    ing = controls.controls["I"]
    assert sorted(t.cp_name for t in ing.tables.values()) == [
        "I.s1.t", "I.s2.t", "I.w.deep.t"]
    assert sorted(i.cp_name for i in ing.instances.values()) == [
        "I.s1.seen", "I.s2.seen", "I.w.deep.seen"]
    acts = sorted(controls.actions[k].cp_name for k in ing.actions)
    assert acts == ["I.s1.set", "I.s2.set", "I.w.deep.set"]
    assert not any(a.startswith("Stage.") for a in controls.actions)
    # IR names of tables/instances are distinct per instance
    assert len(set(ing.tables)) == 3 and len(set(ing.instances)) == 3
    # parameters and locals of the instances are control-level locals of I
    local_names = {d.name for d in ing.locals}
    assert {"s1_v", "s1_port", "s2_v", "w_v", "sem_o"} <= local_names


def test_p4info_lists_nested_names(controls: ir.Program) -> None:
    info = build_p4info(controls)
    tables = {t.preamble.name for t in info.tables}
    assert tables == {"I.s1.t", "I.s2.t", "I.w.deep.t"}
    assert {a.preamble.name for a in info.actions} == {
        "I.s1.set", "I.s2.set", "I.w.deep.set", "NoAction"}
    assert {r.preamble.name for r in info.registers} == {
        "I.s1.seen", "I.s2.seen", "I.w.deep.seen"}
    t = next(t for t in info.tables if t.preamble.name == "I.s1.t")
    assert [m.name for m in t.match_fields] == ["port"]
    assert len({t.preamble.id for t in info.tables}) == 3


def test_two_instances_have_their_own_tables_and_registers(controls: ir.Program) -> None:
    pipe = Pipeline(controls)
    pipe.table_add("I.s1.t", TableEntry({"port": ExactMatch(3)}, "I.s1.set", {"value": 0x42}))
    pipe.table_add("I.w.deep.t", TableEntry({"port": ExactMatch(3)}, "I.w.deep.set",
                                            {"value": 0x99}))
    out = run(pipe, ETH + bytes([0xF0, 1, 2, 3]))
    # s1's entry hit; s2's table is empty (miss: c unchanged); the nested instance hit
    assert out[14:] == bytes([0xF0, 0x42, 2, 0x99])
    run(pipe, ETH + bytes([0xF0, 1, 2, 3]))
    assert pipe.register_read("I.s1.seen", 0) == 2
    assert pipe.register_read("I.s2.seen", 0) == 2
    assert pipe.register_read("I.w.deep.seen", 0) == 2
    pipe.register_write("I.s2.seen", 0, 40)
    run(pipe, ETH + bytes([0xF0, 1, 2, 3]))
    assert pipe.register_read("I.s1.seen", 0) == 3
    assert pipe.register_read("I.s2.seen", 0) == 41
    # another port misses in s1 too
    assert run(pipe, ETH + bytes([0xF0, 1, 2, 3]), port=4)[14:] == bytes([0xF0, 1, 2, 3])


def test_one_instance_applied_twice_shares_its_state(controls: ir.Program) -> None:
    # as p4c accepts (its testdata issue1127-bmv2.p4 applies one instance twice)
    pipe = Pipeline(controls)
    pipe.table_add("I.s1.t", TableEntry({"port": ExactMatch(3)}, "I.s1.set", {"value": 0x42}))
    assert run(pipe, ETH + bytes([0xF5, 1, 2, 3]))[14:] == bytes([0xF5, 0x42, 0x42, 3])
    assert pipe.register_read("I.s1.seen", 0) == 2
    assert pipe.register_read("I.s2.seen", 0) == 0


def test_copy_in_copy_out(controls: ir.Program) -> None:
    pipe = Pipeline(controls)
    out = run(pipe, ETH + bytes([0xF1, 10, 0, 0]))
    # io: 10 -> 11 -> 11 + i(10) = 21; o: 0 + 5 (the caller's 7 is not copied in); i stayed 10
    assert out[14:] == bytes([0xF1, 21, 5, 0])


@pytest.mark.parametrize(("sel", "c"), [(1, 2), (2, 3), (4, 0x40), (5, 0x11), (0, 0x11)])
def test_return_ends_only_the_sub_control(controls: ir.Program, sel: int, c: int) -> None:
    out = run(Pipeline(controls), ETH + bytes([0xF2, sel, 0xAB, 0]))
    assert out[14:] == bytes([0xF2, sel, c, 0x55])  # the caller went on after r.apply


def test_return_lowering_leaves_no_return_in_the_body(controls: ir.Program) -> None:
    def walk(node: object) -> list[object]:
        found = [node]
        if isinstance(node, ir.Block):
            for s in node.stmts:
                found += walk(s)
        elif isinstance(node, ir.If):
            found += walk(node.then) + (walk(node.else_) if node.else_ else [])
        elif isinstance(node, ir.SwitchValue | ir.SwitchAction):
            for case in node.cases:
                found += walk(case.body) if case.body else []
        return found

    body = walk(controls.controls["I"].body)
    assert not any(isinstance(s, ir.Return) for s in body)
    assert any(isinstance(s, ir.Exit) for s in body)


def test_exit_in_sub_control_ends_the_outer_control(controls: ir.Program) -> None:
    pipe = Pipeline(controls)
    # sel 9: exit before the caller's `d = 0x77`; the packet still leaves (egress_spec set),
    # and the exit still copies out v (the spec's exit statement): c = 0x22
    assert run(pipe, ETH + bytes([0xF3, 9, 0xAB, 0]))[14:17] == bytes([0xF3, 9, 0x22])
    assert run(pipe, ETH + bytes([0xF3, 9, 0xAB, 0]))[17] == 0
    assert run(pipe, ETH + bytes([0xF3, 1, 0xAB, 0]))[14:] == bytes([0xF3, 1, 0x11, 0x77])


def test_constructor_parameters_are_constants(controls: ir.Program) -> None:
    out = run(Pipeline(controls), ETH + bytes([0xF4, 1, 1, 0]))
    assert out[14:] == bytes([0xF4, 6, 15, 0])  # the same instance applied twice: +7 +7


PARSERS = PRELUDE + """
parser Inner(packet_in pkt, out data_t d, inout bit<8> n) {
    state start {
        pkt.extract(d);
        n = n + 1;
        verify(d.b != 0xBB, error.InnerBad);
        transition select(d.a) { 0xCC: more; default: accept; }
    }
    state more { n = n + 0x10; transition accept; }
}

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Inner() inner;
    state start {
        pkt.extract(hdr.ethernet);
        meta.x = 1;
        inner.apply(pkt, hdr.data, meta.x);
        meta.y = meta.x + 0x20;
        transition select(hdr.data.c) { 0xAA: tail; default: accept; }
    }
    state tail { pkt.extract(hdr.tail); transition accept; }
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (hdr.data.isValid()) { hdr.data.d = meta.y; }
        if (sm.parser_error == error.InnerBad) { hdr.ethernet.etherType = 0xEEEE; }
    }
}
""" + TAIL


@pytest.fixture(scope="module")
def parsers() -> ir.Program:
    return compile_source(PARSERS, "subparsers.p4")


def test_sub_parser_states_are_inlined(parsers: ir.Program) -> None:
    assert set(parsers.parsers) == {"P"}
    states = parsers.parsers["P"].states
    assert set(states) == {"start", "start.inner.start", "start.inner.more",
                           "start.inner.accept", "tail"}
    assert states["start"].transition.next_state == "start.inner.start"
    inner_start = states["start.inner.start"].transition
    assert [c.next_state for c in inner_start.cases] == ["start.inner.more",
                                                         "start.inner.accept"]
    assert states["start.inner.more"].transition.next_state == "start.inner.accept"
    assert [c.next_state for c in states["start.inner.accept"].transition.cases] == [
        "tail", "accept"]


def test_sub_parser_extracts_and_the_caller_continues(parsers: ir.Program) -> None:
    pipe = Pipeline(parsers)
    out = run(pipe, ETH + bytes([1, 2, 3, 4]) + b"\x99")
    # n: 1 -> 2 (copied back into meta.x); meta.y = 0x22 after the call
    assert out == ETH + bytes([1, 2, 3, 0x22]) + b"\x99"
    out = run(pipe, ETH + bytes([0xCC, 2, 0xAA, 4]) + b"\x99\x77")
    # the callee's second state ran (n = 0x12), then the caller's select went to `tail`
    assert out == ETH + bytes([0xCC, 2, 0xAA, 0x32]) + b"\x99\x77"


def test_sub_parser_reject_sets_parser_error(parsers: ir.Program) -> None:
    out = run(Pipeline(parsers), ETH + bytes([1, 0xBB, 3, 4]))
    assert out[12:14] == b"\xee\xee"


# ---------------------------------------------------------------- errors


def _error(text: str) -> P4CompileError:
    with pytest.raises(P4CompileError) as e:
        compile_source(text, "bad.p4")
    return e.value


def test_control_cannot_instantiate_a_parser() -> None:
    text = PRELUDE + """
parser Q(packet_in pkt, out data_t d) { state start { transition accept; } }
""" + PLAIN_PARSER + """
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Q() q;
    apply { }
}
""" + TAIL
    err = _error(text)
    assert "a control cannot instantiate a parser ('Q')" in err.message
    assert err.loc is not None and err.loc.line == text.splitlines().index("    Q() q;") + 1


def test_apply_argument_errors() -> None:
    sub = "control S(inout bit<8> v, in bit<8> w) { apply { v = w; } }\n"
    ing = ("control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) "
           "{{\n    S() s;\n    apply {{ {} }}\n}}\n")
    err = _error(PRELUDE + PLAIN_PARSER + sub + ing.format("s.apply(hdr.data.a);") + TAIL)
    assert "s.apply() expects 2 arguments, got 1" in err.message
    err = _error(PRELUDE + PLAIN_PARSER + sub + ing.format("s.apply(8w1, 8w2);") + TAIL)
    assert "cannot be written to" in err.message
    err = _error(PRELUDE + PLAIN_PARSER + sub
                 + ing.format("s.apply(hdr.data.a, hdr.data.b); s.foo();") + TAIL)
    assert "has no member 'foo'" in err.message


def test_constructor_argument_count_is_checked() -> None:
    sub = "control K(inout bit<8> v)(bit<8> k) { apply { v = k; } }\n"
    ing = ("control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) "
           "{\n    K() k;\n    apply { k.apply(hdr.data.a); }\n}\n")
    err = _error(PRELUDE + PLAIN_PARSER + sub + ing + TAIL)
    assert "expects 1 constructor arguments, got 0" in err.message


MIXED = PRELUDE + PLAIN_PARSER + """
control Pick(inout bit<8> v) {
    action one() { v = 1; }
    action two() { v = 2; }
    table t { key = { v: exact; } actions = { one; two; } default_action = two(); }
    apply {
        switch (t.apply().action_run) {
            one: { return; }
            default: { v = v + 0x20; }
        }
        v = v + 0x40;
    }
}

control EmitData(packet_out pkt, in data_t d) {
    apply { pkt.emit(d); }
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    @name("chooser") Pick() p;
    apply {
        sm.egress_spec = 2;
        p.apply(hdr.data.a);
        hdr.data.d = 0x33;
    }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) {
    EmitData() ed;
    apply { pkt.emit(hdr.ethernet); ed.apply(pkt, hdr.data); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture(scope="module")
def mixed() -> ir.Program:
    return compile_source(MIXED, "mixed.p4")


def test_name_annotation_on_an_instance_renames_its_objects(mixed: ir.Program) -> None:
    assert [t.cp_name for t in mixed.controls["I"].tables.values()] == ["I.chooser.t"]
    # no table can run NoAction here, so (as in p4c's P4Info) it is not listed
    assert {a.preamble.name for a in build_p4info(mixed).actions} == {
        "I.chooser.one", "I.chooser.two"}


def test_return_in_action_run_switch_and_sub_deparser(mixed: ir.Program) -> None:
    pipe = Pipeline(mixed)
    pipe.table_add("I.chooser.t", TableEntry({"v": ExactMatch(5)}, "I.chooser.one"))
    # hit `one`: v = 1 then return (no +0x40); the caller goes on (d = 0x33); the deparser's
    # sub-control emitted the data header after Ethernet
    assert run(pipe, ETH + bytes([5, 0, 0, 0])) == ETH + bytes([1, 0, 0, 0x33])
    # miss -> default two(): v = 2, + 0x20, + 0x40
    assert run(pipe, ETH + bytes([6, 0, 0, 0])) == ETH + bytes([0x62, 0, 0, 0x33])


def test_general_ingress_egress_path_agrees(controls: ir.Program) -> None:
    from p4switch.pipeline.api import QueueingMetadata

    pipe = Pipeline(controls)
    pipe.table_add("I.s2.t", TableEntry({"port": ExactMatch(3)}, "I.s2.set", {"value": 0x24}))
    for data, want in [
        (ETH + bytes([0xF0, 1, 2, 3]), bytes([0xF0, 1, 0x24, 3])),
        (ETH + bytes([0xF1, 10, 0, 0]), bytes([0xF1, 21, 5, 0])),
        (ETH + bytes([0xF2, 2, 0, 0]), bytes([0xF2, 2, 3, 0x55])),
        (ETH + bytes([0xF3, 9, 0xAB, 0]), bytes([0xF3, 9, 0x22, 0])),  # exit copies out
    ]:
        ing = pipe.ingress(data, 3, 0)
        [job] = ing.jobs
        eg = pipe.egress(job, 0, QueueingMetadata())
        assert [(o.port, o.data[14:]) for o in eg.outputs] == [(2, want)]
