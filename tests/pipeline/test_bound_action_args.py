"""Directional action arguments bound in a table's actions list (``ir.ActionRef.args``).

``actions = { setbyte(h.b.b2); }`` makes every run of ``setbyte`` from that table (entry, default
action, const entry) use ``h.b.b2`` for its ``out`` parameter, with copy-in/copy-out as for a
direct call; the control plane supplies only the action data. Each program runs on the fused
path and on the general driver in lock-step, which must agree packet by packet."""

from __future__ import annotations

import pytest
from test_fused import PairPipeline, _general

from p4switch.frontend import compile_source
from p4switch.p4info import build_p4info
from p4switch.pipeline import Pipeline
from p4switch.pipeline.api import ExactMatch, TableEntry, TernaryMatch

_HEAD = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header b_t { bit<8> b1; bit<8> b2; }
header r_t { bit<8> x; bit<8> y; bit<8> z; }
"""

_TAIL = """
control V(inout h_t h, inout m_t m) { apply { } }
control E(inout h_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }
control C(inout h_t h, inout m_t m) { apply { } }
control D(packet_out pk, in h_t h) { apply { pk.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

SCALARS = _HEAD + """
struct h_t { eth_t eth; b_t b; r_t r; }
struct m_t { bit<8> x; bit<8> y; bit<8> z; }
parser P(packet_in pk, out h_t h, inout m_t m, inout standard_metadata_t sm) {
    state start { pk.extract(h.eth); pk.extract(h.b); transition accept; }
}
control I(inout h_t h, inout m_t m, inout standard_metadata_t sm) {
    action setbyte(out bit<8> dst, bit<8> val) { dst = val; }
    action addto(inout bit<8> acc, in bit<8> src, bit<8> k) { acc = acc + src + k; }
    // copy-out of 'a' overwrites the body's direct write of the same field
    action clobber(inout bit<8> a, bit<8> k) { h.b.b1 = 8w0xEE; a = a + k; }
    action noop() { }
    table t1 {
        key = { h.b.b1: exact; }
        actions = { setbyte(h.b.b2); addto(m.x, h.b.b1); clobber(h.b.b1); noop; }
        default_action = noop();
    }
    table t2 {
        key = { h.b.b2: ternary; }
        actions = { setbyte(m.y); noop; }
        default_action = setbyte(8w0x42);
    }
    table t3 {
        key = { h.eth.type: exact; }
        actions = { setbyte(m.z); noop; }
        default_action = noop();
        const entries = { 0x1234 : setbyte(8w0x11); 0x5678 : setbyte(8w0x22); }
    }
    apply {
        m.x = 8w5;
        t1.apply();
        t2.apply();
        t3.apply();
        h.r.setValid();
        h.r.x = m.x; h.r.y = m.y; h.r.z = m.z;
        sm.egress_spec = 1;
    }
}
""" + _TAIL

STACK = _HEAD + """
struct h_t { eth_t eth; b_t[2] st; }
struct m_t { bit<8> x; }
parser P(packet_in pk, out h_t h, inout m_t m, inout standard_metadata_t sm) {
    state start { pk.extract(h.eth); pk.extract(h.st.next); pk.extract(h.st.next);
                  transition accept; }
}
control I(inout h_t h, inout m_t m, inout standard_metadata_t sm) {
    action setbyte(out bit<8> dst, bit<8> val) { dst = val; }
    action bump(inout bit<8> v) { v = v + 1; }
    table t {
        key = { h.st[0].b1: exact; }
        actions = { setbyte(h.st[1].b2); bump(h.st[0].b2); }
        default_action = bump();
    }
    apply { t.apply(); sm.egress_spec = 1; }
}
""" + _TAIL


def _pair(src: str, name: str) -> PairPipeline:
    prog = compile_source(src, name)
    return PairPipeline(Pipeline(prog), _general(Pipeline(prog)))


def _pkt(etype: int, b1: int, b2: int) -> bytes:
    return bytes(6) + bytes.fromhex("020000000001") + etype.to_bytes(2, "big") + bytes([b1, b2])


def _out(pair: PairPipeline, data: bytes) -> bytes:
    res = pair.process(data, 0, 0)
    assert res.drops == [] and len(res.outputs) == 1
    return res.outputs[0].data


@pytest.fixture
def scalars() -> PairPipeline:
    pair = _pair(SCALARS, "bound_scalars.p4")
    assert pair.fused.fused_reason is None  # bound arguments do not force the general driver
    return pair


def test_out_argument_is_written_and_default_binds_too(scalars: PairPipeline) -> None:
    scalars.table_add("I.t1", TableEntry(match={"h.b.b1": ExactMatch(1)}, action="I.setbyte",
                                         params={"val": 0x99}))
    out = _out(scalars, _pkt(0x0800, 1, 0))
    # t1 wrote h.b.b2; t2 misses (b2 = 0x99 has no entry) and its default writes m.y
    assert out[14:] == bytes([1, 0x99, 5, 0x42, 0])
    out = _out(scalars, _pkt(0x0800, 3, 7))  # t1 misses: noop
    assert out[14:] == bytes([3, 7, 5, 0x42, 0])


def test_same_action_bound_differently_per_table(scalars: PairPipeline) -> None:
    scalars.table_add("I.t1", TableEntry(match={"h.b.b1": ExactMatch(1)}, action="I.setbyte",
                                         params={"val": 0x30}))
    scalars.table_add("I.t2", TableEntry(match={"h.b.b2": TernaryMatch(0x30, 0xF0)},
                                         action="I.setbyte", params={"val": 0x07}, priority=1))
    out = _out(scalars, _pkt(0x0800, 1, 0))
    assert out[14:] == bytes([1, 0x30, 5, 0x07, 0])  # t1 -> h.b.b2, t2 -> m.y, t3 -> nothing


def test_inout_and_in_arguments_are_copied_in_and_out(scalars: PairPipeline) -> None:
    scalars.table_add("I.t1", TableEntry(match={"h.b.b1": ExactMatch(9)}, action="I.addto",
                                         params={"k": 100}))
    out = _out(scalars, _pkt(0x0800, 9, 0))
    assert out[16] == 5 + 9 + 100  # m.x (inout) = m.x + h.b.b1 (in) + k
    scalars.table_add("I.t1", TableEntry(match={"h.b.b1": ExactMatch(4)}, action="I.clobber",
                                         params={"k": 3}))
    out = _out(scalars, _pkt(0x0800, 4, 0))
    assert out[14] == 7  # copy-out of a = 4 + 3 wins over the body's h.b.b1 = 0xEE


def test_const_entries_and_set_default_use_the_bound_arguments(scalars: PairPipeline) -> None:
    assert _out(scalars, _pkt(0x1234, 0, 0))[18] == 0x11
    assert _out(scalars, _pkt(0x5678, 0, 0))[18] == 0x22
    assert _out(scalars, _pkt(0x9999, 0, 0))[18] == 0
    scalars.table_set_default("I.t2", "I.setbyte", {"val": 0x5A})
    assert _out(scalars, _pkt(0x9999, 0, 0))[17] == 0x5A
    scalars.table_set_default("I.t2", "I.noop", {})
    assert _out(scalars, _pkt(0x9999, 0, 0))[17] == 0


def test_p4info_lists_only_the_action_data() -> None:
    info = build_p4info(compile_source(SCALARS, "bound_scalars.p4"))
    params = {a.preamble.name: [p.name for p in a.params] for a in info.actions}
    assert params["I.setbyte"] == ["val"]
    assert params["I.addto"] == ["k"]
    assert params["I.clobber"] == ["k"]


def test_header_stack_element_as_bound_argument() -> None:
    pair = _pair(STACK, "bound_stack.p4")
    assert pair.fused.fused_reason is not None  # stacks need the general driver
    pair.table_add("I.t", TableEntry(match={"h.st[0].b1": ExactMatch(1)}, action="I.setbyte",
                                     params={"val": 0xAB}))
    out = _out(pair, _pkt(0x0800, 1, 2) + bytes([3, 4]))
    assert out[14:] == bytes([1, 2, 3, 0xAB])
    out = _out(pair, _pkt(0x0800, 7, 2) + bytes([3, 4]))  # default: bump(h.st[0].b2)
    assert out[14:] == bytes([7, 3, 3, 4])
