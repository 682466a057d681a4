"""An extern declared only in the pipeline's extern registry works end to end.

The toy ``tally`` (declared in the P4 source, as any user extern is, and in the registry — no
other module knows its name) is a counter whose byte cell grows by a program-given amount. It
must compile on the fused and the general path with identical results, be read through the
pipeline's state API, be listed in P4Info by the section the registry names, and be read over
P4Runtime through the entity the registry gives. Without the registry entry the pipeline
refuses it; declared unfusable, the program falls back to the general driver."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from p4.v1 import p4runtime_pb2

from p4switch import ir
from p4switch.frontend import compile_source
from p4switch.p4info import build_p4info
from p4switch.pipeline import BuildError, Pipeline, registry
from p4switch.pipeline.api import Output
from p4switch.pipeline.codegen import BlockGen
from p4switch.pipeline.emit import const_int, enum_member
from p4switch.pipeline.externs import CounterArray
from p4switch.runtime.entities import Entities, ServerState
from p4switch.runtime.schema import build_schema

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>

extern tally {
    tally(bit<32> size, CounterType type);
    void add(in bit<32> index, in bit<32> amount);
}

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control V(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    tally(8, CounterType.packets_and_bytes) weighed;
    apply {
        weighed.add((bit<32>)sm.ingress_port, (bit<32>)hdr.eth.type[7:0]);
        sm.egress_spec = 3;
    }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def _tally_state(inst: ir.ExternInstance) -> CounterArray:
    return CounterArray(inst, const_int(inst.args[0]), enum_member(inst.args[1]))


def _tally_add(g: BlockGen, s: ir.ExternCall, obj: Any, _x: str) -> None:
    i = g.mod.fresh("_i")
    g.w(f"{i} = {g.ex(s.args[0])}")
    g.w(f"if {i} < {obj.size}:")
    g.w(f"    {g.mod.bind(obj.packets, 'CP')}[{i}] += 1")
    g.w(f"    {g.mod.bind(obj.bytes, 'CB')}[{i}] += {g.ex(s.args[1])}")


def _declare(fusable: bool = True) -> registry.ExternObject:
    return registry.declare_object(registry.ExternObject(
        "tally", _tally_state, {"add": _tally_add}, space="counter", p4info="counters",
        fusable=fusable))


@pytest.fixture
def tally() -> Iterator[registry.ExternObject]:
    kind = _declare()
    yield kind
    registry.forget("tally")


def _general(p: Pipeline) -> Pipeline:
    """The same pipeline forced onto the general driver (as tests/pipeline/test_fused.py)."""
    p._fused = p._fused_lean = None
    vars(p).pop("process", None)
    vars(p).pop("process_fast", None)
    return p


def _frame(ethertype: int) -> bytes:
    return bytes(6) + bytes([0, 0, 0, 0, 0, 1]) + ethertype.to_bytes(2, "big") + b"payload"


PACKETS = [(1, 0x0807), (2, 0x0810), (1, 0x0801), (5, 0x08FF)]  # (port, ethertype)


def _run(p: Pipeline) -> list[Any]:
    return [p.process(_frame(et), port, 10 * n) for n, (port, et) in enumerate(PACKETS)]


def test_undeclared_extern_is_refused() -> None:
    prog = compile_source(PROGRAM, "tally.p4")
    with pytest.raises(BuildError, match="unsupported extern tally"):
        Pipeline(prog)


def test_toy_extern_runs_on_both_paths(tally: registry.ExternObject) -> None:
    prog = compile_source(PROGRAM, "tally.p4")
    fused = Pipeline(prog)
    assert fused.fused_reason is None
    general = _general(Pipeline(prog))
    a, b = _run(fused), _run(general)
    assert a == b
    assert all(isinstance(o, Output) and o.port == 3 for r in a for o in r.outputs)
    for p in (fused, general):
        assert p.counter_size("weighed") == 8
        assert p.counter_read("weighed", 1) == (2, 0x07 + 0x01)
        assert p.counter_read("weighed", 2) == (1, 0x10)
        assert p.counter_read("weighed", 5) == (1, 0xFF)
        assert p.counter_read("weighed", 0) == (0, 0)


def test_unfusable_toy_extern_takes_the_general_driver() -> None:
    _declare(fusable=False)
    try:
        p = Pipeline(compile_source(PROGRAM, "tally.p4"))
    finally:
        registry.forget("tally")
    assert p.fused_reason == "extern tally needs the general driver"
    _run(p)
    assert p.counter_read("weighed", 1) == (2, 0x07 + 0x01)


def test_toy_extern_in_p4info_and_p4runtime(tally: registry.ExternObject) -> None:
    prog = compile_source(PROGRAM, "tally.p4")
    p4info = build_p4info(prog)
    assert tally.p4info == "counters" and tally.entity == "counter_entry"
    [c] = p4info.counters
    assert c.preamble.name == "I.weighed" and c.size == 8
    p = Pipeline(prog)
    _run(p)
    ents = Entities(build_schema(p4info), p, ServerState())
    req = p4runtime_pb2.Entity()
    getattr(req, tally.entity).counter_id = c.preamble.id
    cells = {e.counter_entry.index.index: (e.counter_entry.data.packet_count,
                                           e.counter_entry.data.byte_count)
             for e in ents.read(req)}
    assert len(cells) == 8
    assert cells[1] == (2, 0x08) and cells[2] == (1, 0x10) and cells[3] == (0, 0)
