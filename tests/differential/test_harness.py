"""The differential harness's own parts, without BMv2 (these run everywhere): the recording
proxy, the API-call -> simple_switch_CLI translation, the packet mutants and the comparison."""

from __future__ import annotations

from pathlib import Path

import pytest
from differential import (
    CliTranslator,
    Comparison,
    Packet,
    Probe,
    RecordingPipeline,
    Unsupported,
    _Bmv2Names,
    number_mc_nodes,
)
from test_stf_differential import mutants

from p4switch.frontend import compile_file
from p4switch.pipeline import Pipeline, api

PROGRAMS = Path(__file__).resolve().parents[1] / "stf" / "programs"


@pytest.fixture(scope="module")
def lpm_program():
    return compile_file(PROGRAMS / "ipv4_lpm.p4")


def names_for(program) -> _Bmv2Names:
    """What p4c's BMv2 JSON would say, built from the IR (keys in order, action params)."""
    tables = {t.cp_name: {"key": [{"match_type": k.match_kind} for k in t.keys],
                          "type": "simple"} for t in program.all_tables()}
    actions = {a.cp_name: [p.name for p in a.data_params] for a in program.actions.values()}
    return _Bmv2Names(tables, actions)


def test_recording_keeps_order_and_passes_through(lpm_program):
    rec = RecordingPipeline(Pipeline(lpm_program, drop_port=511, cpu_port=None, seed=0))
    entry = api.TableEntry(match={"hdr.ipv4.dstAddr": api.LpmMatch(0x0A000000, 8)},
                           action="MyIngress.forward", params={"dmac": 0xA1, "smac": 0xF0,
                                                               "port": 1})
    rec.table_add("MyIngress.ipv4_lpm", entry)
    frame = bytes.fromhex("000000000002000000000001080045000020000100004011" "5dba0a000001"
                          "0a09090904d20050000c4004deadbeef")
    result = rec.process(frame, 0, 0)
    assert [o.port for o in result.outputs] == [1]
    assert len(rec.inner.table_entries("MyIngress.ipv4_lpm")) == 1  # reached the pipeline
    kinds = [type(e).__name__ if not isinstance(e, tuple) else e[1] for e in rec.timeline]
    assert kinds == ["table_add", "Packet"]
    assert rec.packets[0].outputs == 1 and rec.p4switch_outputs[1][0][:6] == bytes(5) + b"\xa1"


def test_cli_translation(lpm_program):
    tr = CliTranslator(lpm_program, names_for(lpm_program))
    entry = api.TableEntry(match={"hdr.ipv4.dstAddr": api.LpmMatch(0x0A010000, 16)},
                           action="MyIngress.forward", params={"dmac": 0xA2, "smac": 0xF0,
                                                               "port": 2})
    cmds = tr.translate([("table_add", ("MyIngress.ipv4_lpm", entry)),
                         ("table_set_default", ("MyIngress.ipv4_lpm", "MyIngress.drop", {})),
                         ("register_write", ("MyIngress.r", 3, 7))])
    assert cmds == [
        "table_add MyIngress.ipv4_lpm MyIngress.forward 0xa010000/16 => 0xa2 0xf0 0x2",
        "table_set_default MyIngress.ipv4_lpm MyIngress.drop ",
        "register_write MyIngress.r 3 7",
    ]
    with pytest.raises(Unsupported, match="meters"):
        tr.translate([("meter_set", ("MyIngress.m", 0, None))])


def test_multicast_nodes_are_numbered_in_creation_order(lpm_program):
    tr = CliTranslator(lpm_program, names_for(lpm_program))
    tr.translate([("mcast_group_set", (1, [api.Replica(2, 0), api.Replica(3, 0)])),
                  ("mcast_group_set", (5, [api.Replica(4, 1)]))])
    assert number_mc_nodes(tr.setup()) == [
        "mc_mgrp_create 1", "mc_node_create 0 2 3", "mc_node_associate 1 0",
        "mc_mgrp_create 5", "mc_node_create 1 4", "mc_node_associate 5 1"]
    with pytest.raises(Unsupported, match="between packets"):
        tr.translate([("mcast_group_set", (1, []))])


def test_mutants_keep_the_ethernet_header_and_never_shrink():
    base = [Packet(3, bytes(range(40))), Packet(1, bytes(20))]
    ms = mutants(base, 50, seed=1)
    assert len(ms) == 50 and ms == mutants(base, 50, seed=1)  # seeded
    assert any(m.data not in (b.data for b in base) for m in ms)
    for m in ms:
        src = next(b for b in base if b.port == m.port)
        assert m.data[:14] == src.data[:14] and len(m.data) >= len(src.data)


def test_comparison_reports_every_kind_of_difference():
    same = Comparison({1: [b"a"]}, {1: [b"a"]}, [], 1)
    assert same.mismatches() == []
    diff = Comparison({1: [b"a", b"b"], 2: [b"x"]}, {1: [b"a", b"c"], 3: [b"y"]}, [], 3,
                      [(Probe("counter", "c", 0, (1, 60)), (1, 64))])
    text = "\n".join(diff.mismatches())
    assert "port 1 packet #2" in text and "port 2: p4switch sent 1" in text
    assert "port 3: p4switch sent 0 packet(s), BMv2 1" in text
    assert "counter c[0]: p4switch (1, 60), BMv2 (1, 64)" in text
