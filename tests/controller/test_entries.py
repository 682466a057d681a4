"""Entry converters: P4Runtime protos by P4Info names (round trip, canonical bytes, errors),
STF lines, diffs and the order a Write batch carries them."""

from __future__ import annotations

import pytest

from controller.p4rt_codec import P4Schema, decode, encode
from controller.program import compile_program
from model.entries import IPV4_LPM, K_DST, WAM_SLOT, Entry, diff_entries
from model.routing import compute_fabric_entries
from model.schemes import SwitchContext, WhackAMole, wam_range_entries
from model.spec import fat_tree
from p4switch import LpmMatch


@pytest.fixture(scope="module")
def schema() -> P4Schema:
    return P4Schema(compile_program("p4switch").p4info)


def test_every_computed_entry_round_trips_through_p4runtime(schema: P4Schema) -> None:
    fe = compute_fabric_entries(fat_tree(4), WhackAMole(log2_m=4))
    n = 0
    for name in fe:
        for e in fe[name].entries:
            te = schema.table_entry(e)
            assert te.table_id == schema.tables[e.table].id
            assert schema.entry_of(te) == e
            n += 1
    assert n == fe.total() > 300


def test_values_are_canonical_and_lpm_values_masked(schema: P4Schema) -> None:
    e = Entry.make(IPV4_LPM, {K_DST: LpmMatch(0x0A0102FF, 24)}, "MyIngress.set_nhop",
                   {"port": 1, "dmac": 0x00000000000A})
    te = schema.table_entry(e)
    assert te.match[0].lpm.value == bytes([10, 1, 2, 0])
    assert te.match[0].lpm.prefix_len == 24
    names = schema.actions["MyIngress.set_nhop"].params
    assert {names[p.param_id][0]: p.value for p in te.action.action.params} == \
        {"port": b"\x01", "dmac": b"\x0a"}
    assert encode(0, 9) == b"\x00" and decode(b"\x01\x00") == 256
    with pytest.raises(ValueError):
        encode(512, 9)
    with pytest.raises(ValueError):
        schema.table_entry(Entry.make(IPV4_LPM, {K_DST: LpmMatch(0, 8)}, "MyIngress.set_nhop",
                                      {"port": 600, "dmac": 0}))
    with pytest.raises(KeyError, match="no action"):
        schema.table_entry(Entry.make(IPV4_LPM, {K_DST: LpmMatch(0, 8)}, "MyIngress.nope"))
    with pytest.raises(KeyError, match="no table"):
        schema.table_entry(Entry.make("MyIngress.nope", {}, "NoAction"))


def test_default_route_is_the_omitted_lpm_key(schema: P4Schema) -> None:
    te = schema.table_entry(Entry.make(IPV4_LPM, {K_DST: LpmMatch(0, 0)}, "MyIngress.drop_route"))
    assert len(te.match) == 0


def test_packet_metadata_by_name(schema: P4Schema) -> None:
    pkt = schema.packet_out(b"abc", egress_port=7)
    assert pkt.payload == b"abc" and [(m.metadata_id, m.value) for m in pkt.metadata] == \
        [(1, b"\x07")]


def test_stf_lines() -> None:
    (r,) = wam_range_entries(2, [16])
    assert r.to_stf() == ("add MyIngress.wam_slot_to_member 1 meta.lb.group_id:0x2 "
                          "meta.lb.wam_slot:0->15 MyIngress.wam_set_member(member_idx:0x0)")
    g = WhackAMole(log2_m=4, a=3, b=5).group_entry(2, 1, SwitchContext())
    assert g.to_stf() == ("add MyIngress.lb_group meta.lb.group_id:0x2 "
                          "MyIngress.lb_wam(a:0x3, b:0x5, log2_m:0x4)")


def test_diff_and_batch_order() -> None:
    route = Entry.make(IPV4_LPM, {K_DST: LpmMatch(0x0A000000, 8)}, "MyIngress.set_lb_group",
                       {"group_id": 1, "dst_id": 0})
    old = [route, *wam_range_entries(1, [8, 8])]
    new_route = Entry.make(IPV4_LPM, {K_DST: LpmMatch(0x0A000000, 8)}, "MyIngress.set_nhop",
                           {"port": 3, "dmac": 1})
    new = [new_route, *wam_range_entries(1, [4, 12])]
    d = diff_entries(old, new)
    assert d.modifies == (new_route,)
    assert len(d.inserts) == 2 and len(d.deletes) == 2 and len(d) == 5
    ops = [(op, e.table) for op, e in d.ordered()]
    # overlapping ranges: the old ones leave before the new ones arrive
    assert ops[:2] == [("delete", WAM_SLOT)] * 2
    assert ops[2:4] == [("insert", WAM_SLOT)] * 2
    assert ops[4] == ("modify", IPV4_LPM)
    assert len(diff_entries(new, new)) == 0
