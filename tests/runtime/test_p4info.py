"""P4Info generation: spec id prefixes, @id, scopes, resources — and that p4runtime-shell's
own P4Info helpers (names -> ids) accept the result."""

from __future__ import annotations

import pytest
import runtime_sample_ir as sample_ir
from p4.config.v1 import p4info_pb2
from p4runtime_sh.context import Context, P4Type

from p4switch import ir
from p4switch.p4info import P4InfoError, build_p4info, parse, serialize

MF = p4info_pb2.MatchField


def by_name(objs, name):
    return next(o for o in objs if o.preamble.name == name)


def test_ids_carry_the_spec_prefix_and_are_unique(sample_p4info):
    p = sample_p4info
    expected = {
        "tables": 0x02, "actions": 0x01, "action_profiles": 0x11, "counters": 0x12,
        "direct_counters": 0x13, "meters": 0x14, "direct_meters": 0x15, "registers": 0x16,
        "digests": 0x17, "controller_packet_metadata": 0x04,
    }
    ids = []
    for kind, prefix in expected.items():
        objs = getattr(p, kind)
        assert objs, kind
        for o in objs:
            assert o.preamble.id >> 24 == prefix, (kind, o.preamble.name, hex(o.preamble.id))
            ids.append(o.preamble.id)
    assert len(ids) == len(set(ids))


def test_ids_are_stable_across_builds():
    a, b = build_p4info(sample_ir.build()), build_p4info(sample_ir.build())
    assert a == b
    assert serialize(a) == serialize(b)


def test_explicit_ids_are_honoured(sample_p4info):
    assert by_name(sample_p4info.actions, "MyIngress.set_group").preamble.id == 0x01000777
    ecmp = by_name(sample_p4info.tables, "MyIngress.ecmp")
    assert [(f.id, f.name) for f in ecmp.match_fields] == [(7, "meta.group")]  # selector key hidden


def test_conflicting_ids_are_rejected():
    prog = sample_ir.build()
    prog.actions["MyIngress.drop"].annotations["id"] = "0x777"
    with pytest.raises(P4InfoError, match="already in use"):
        build_p4info(prog)


def test_tables(sample_p4info):
    p = sample_p4info
    aid = {a.preamble.name: a.preamble.id for a in p.actions}
    lpm = by_name(p.tables, "MyIngress.ipv4_lpm")
    assert lpm.preamble.alias == "ipv4_lpm"
    assert [(f.id, f.name, f.bitwidth, f.match_type) for f in lpm.match_fields] == [
        (1, "hdr.ipv4.dstAddr", 32, MF.LPM)]
    scopes = {r.id: r.scope for r in lpm.action_refs}
    assert scopes[aid["NoAction"]] == p4info_pb2.ActionRef.DEFAULT_ONLY
    assert scopes[aid["MyIngress.set_group"]] == p4info_pb2.ActionRef.TABLE_ONLY
    assert scopes[aid["MyIngress.set_nhop"]] == p4info_pb2.ActionRef.TABLE_AND_DEFAULT
    assert lpm.size == 1024 and lpm.const_default_action_id == 0
    assert lpm.initial_default_action.action_id == aid["MyIngress.drop"]

    acl = by_name(p.tables, "MyIngress.acl")
    assert [f.match_type for f in acl.match_fields] == [MF.TERNARY, MF.EXACT, MF.RANGE,
                                                        MF.OPTIONAL]
    dc = by_name(p.direct_counters, "MyIngress.acl_counter")
    dm = by_name(p.direct_meters, "MyIngress.acl_meter")
    assert sorted(acl.direct_resource_ids) == sorted([dc.preamble.id, dm.preamble.id])
    assert dc.direct_table_id == acl.preamble.id == dm.direct_table_id
    assert dc.spec.unit == p4info_pb2.CounterSpec.BOTH
    assert dm.spec.unit == p4info_pb2.MeterSpec.BYTES

    ecmp = by_name(p.tables, "MyIngress.ecmp")
    sel = by_name(p.action_profiles, "MyIngress.ecmp_sel")
    assert ecmp.implementation_id == sel.preamble.id
    assert sel.with_selector and sel.size == 64 and list(sel.table_ids) == [ecmp.preamble.id]

    filt = by_name(p.tables, "MyIngress.ether_filter")
    assert filt.is_const_table and filt.has_initial_entries
    assert filt.const_default_action_id == aid["MyIngress.forward"]
    arg = filt.initial_default_action.arguments[0]
    assert (arg.param_id, arg.value) == (1, b"\x03")


def test_actions_and_noaction(sample_p4info):
    names = {a.preamble.name for a in sample_p4info.actions}
    assert "NoAction" in names
    nhop = by_name(sample_p4info.actions, "MyIngress.set_nhop")
    assert [(q.id, q.name, q.bitwidth) for q in nhop.params] == [(1, "dmac", 48), (2, "port", 9)]


def test_externs(sample_p4info):
    p = sample_p4info
    c = by_name(p.counters, "MyIngress.port_counter")
    assert c.size == 8 and c.spec.unit == p4info_pb2.CounterSpec.BOTH
    m = by_name(p.meters, "MyIngress.port_meter")
    assert m.size == 16 and m.spec.unit == p4info_pb2.MeterSpec.PACKETS
    r = by_name(p.registers, "MyIngress.flowlet_ts")
    assert r.size == 16 and r.type_spec.bitstring.bit.bitwidth == 48


def test_digests_and_controller_headers(sample_p4info):
    p = sample_p4info
    d = by_name(p.digests, "mac_learn_t")
    assert d.type_spec.struct.name == "mac_learn_t"
    members = p.type_info.structs["mac_learn_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [
        ("src_mac", 48), ("port", 9)]
    pin = by_name(p.controller_packet_metadata, "packet_in")
    assert [(m.id, m.name, m.bitwidth) for m in pin.metadata] == [(1, "ingress_port", 9)]
    pout = by_name(p.controller_packet_metadata, "packet_out")
    assert [(m.id, m.name, m.bitwidth) for m in pout.metadata] == [
        (1, "egress_port", 9), (2, "mcast", 16)]
    assert p.pkg_info.arch == "v1model"


def test_hidden_tables_are_left_out():
    prog = sample_ir.build()
    prog.controls["MyIngress"].tables["acl"].annotations["hidden"] = ""
    names = {t.preamble.name for t in build_p4info(prog).tables}
    assert "MyIngress.acl" not in names and "MyIngress.ipv4_lpm" in names


@pytest.mark.parametrize("fmt", ["text", "binary", "json"])
def test_serialisation_round_trip(sample_p4info, fmt):
    assert parse(serialize(sample_p4info, fmt), fmt) == sample_p4info


def test_p4runtime_shell_helpers_resolve_names(sample_p4info):
    """p4runtime-shell's Context (what its TableEntry/CounterEntry/... builders use)."""
    ctx = Context()
    ctx.set_p4info(parse(serialize(sample_p4info, "text"), "text"))
    lpm = by_name(sample_p4info.tables, "MyIngress.ipv4_lpm")
    assert ctx.get_obj_id(P4Type.table, "MyIngress.ipv4_lpm") == lpm.preamble.id
    assert ctx.get_obj_id(P4Type.table, "ipv4_lpm") == lpm.preamble.id  # unique suffix
    assert ctx.get_mf_id("ipv4_lpm", "hdr.ipv4.dstAddr") == 1
    assert ctx.get_param_id("set_nhop", "port") == 2
    assert ctx.get_name_from_id(lpm.preamble.id) == "MyIngress.ipv4_lpm"
    for kind, name in [
        (P4Type.action, "NoAction"), (P4Type.action_profile, "ecmp_sel"),
        (P4Type.counter, "port_counter"), (P4Type.direct_counter, "acl_counter"),
        (P4Type.meter, "port_meter"), (P4Type.direct_meter, "acl_meter"),
        (P4Type.controller_packet_metadata, "packet_out"), (P4Type.digest, "mac_learn_t"),
    ]:
        assert ctx.get_obj_id(kind, name), (kind, name)


def test_non_byte_types_get_type_specs():
    prog = sample_ir.build()
    reg = prog.controls["MyIngress"].instances["flowlet_ts"]
    reg.type_args = (ir.BoolType(),)
    p = build_p4info(prog)
    assert by_name(p.registers, "MyIngress.flowlet_ts").type_spec.HasField("bool")


def test_extern_aliases_are_unique_suffixes():
    """Two counters with one local name in different controls: neither may take the bare name
    as its alias (a name lookup would be ambiguous); a counter alone keeps its short alias."""
    prog = sample_ir.build()
    twin = prog.controls["MyIngress"].instances.get("port_counter") or prog.instances[
        "port_counter"]
    prog.instances["eg_port_counter"] = ir.ExternInstance(
        "port_counter", "MyEgress.port_counter", "counter", (), twin.args)
    p = build_p4info(prog)
    assert {c.preamble.name: c.preamble.alias for c in p.counters} == {
        "MyIngress.port_counter": "MyIngress.port_counter",
        "MyEgress.port_counter": "MyEgress.port_counter"}
    assert by_name(p.meters, "MyIngress.port_meter").preamble.alias == "port_meter"
