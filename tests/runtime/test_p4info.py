"""P4Info generation: spec id prefixes, @id, scopes, resources — and that p4runtime-shell's
own P4Info helpers (names -> ids) accept the result."""

from __future__ import annotations

from pathlib import Path

import pytest
import runtime_sample_ir as sample_ir
from p4.config.v1 import p4info_pb2
from p4runtime_sh.context import Context, P4Type

from p4switch import ir
from p4switch.frontend import compile_file
from p4switch.p4info import (
    P4InfoError,
    _IdAllocator,
    _member_ids,
    build_p4info,
    jenkins_one_at_a_time,
    parse,
    serialize,
)

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
    assert (arg.param_id, arg.value) == (1, b"\x00\x03")  # full width of bit<9>, as p4c


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
    # @padding fields are listed (annotated), as p4c lists them
    pin = by_name(p.controller_packet_metadata, "packet_in")
    assert [(m.id, m.name, m.bitwidth, list(m.annotations)) for m in pin.metadata] == [
        (1, "ingress_port", 9, []), (2, "_pad", 7, ["@padding"])]
    pout = by_name(p.controller_packet_metadata, "packet_out")
    assert [(m.id, m.name, m.bitwidth) for m in pout.metadata] == [
        (1, "egress_port", 9), (2, "mcast", 16), (3, "_pad", 7)]
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


# --------------------------------------------------------------------------------------------
# Ids as p4c assigns them (known answers from p4c-bm2-ss 1.2.5.16's output)
# --------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
P4DIR = Path(__file__).parent / "p4"


def _compiled(path: Path) -> p4info_pb2.P4Info:
    return build_p4info(compile_file(path))


def test_jenkins_one_at_a_time():
    assert jenkins_one_at_a_time(b"") == 0
    assert jenkins_one_at_a_time(b"a") == 0xCA2E9442  # the hash's published test vector
    assert jenkins_one_at_a_time(b"The quick brown fox jumps over the lazy dog") == 0x519E91F5


def test_fabric_ids_equal_p4cs():
    p = _compiled(ROOT / "p4src" / "fabric.p4")
    assert by_name(p.tables, "MyIngress.ipv4_lpm").preamble.id == 37375156
    assert by_name(p.actions, "MyIngress.set_nhop").preamble.id == 24952588
    assert by_name(p.actions, "NoAction").preamble.id == 21257015
    assert by_name(p.counters, "MyIngress.port_rx_ctr").preamble.id == 308059362


def test_hash_collisions_probe_the_hash_in_name_order():
    """c.t1626 and c.t3872 share their hash's low 24 bits: the first in name order keeps it,
    the second probes to the next; c.a2's hash id is taken by a3's @id, so c.a2 probes."""
    p = _compiled(P4DIR / "p4info_collision.p4")
    assert by_name(p.tables, "c.t1626").preamble.id == 0x02000000 | 0x3A2734
    assert by_name(p.tables, "c.t3872").preamble.id == 0x02000000 | 0x3A2735
    assert by_name(p.actions, "c.a3").preamble.id == 0x01CD7CE5
    assert by_name(p.actions, "c.a2").preamble.id == 0x01CD7CE6


def test_probing_unit():
    alloc = _IdAllocator()
    ids = alloc.allocate(0x02, [("c.t3872", None), ("c.t1626", None), ("x", 0x0200ABCD)])
    assert ids == {"c.t1626": 0x023A2734, "c.t3872": 0x023A2735, "x": 0x0200ABCD}
    # a hash that collides with an id already handed out probes further (wrapping the hash)
    again = alloc.allocate(0x02, [("c.t1626", None)])
    assert again == {"c.t1626": 0x023A2736}


@pytest.mark.parametrize("body, expected", [
    ("0x777", 0x01000777),          # no prefix byte: the kind's is added
    ("16779127", 0x01000777),       # the same id written in full, with the right prefix
    ("0", 0x01000000),              # p4c accepts it (the prefix alone)
])
def test_explicit_id_forms(body, expected):
    prog = sample_ir.build()
    prog.actions["MyIngress.set_group"].annotations["id"] = body
    assert by_name(build_p4info(prog).actions, "MyIngress.set_group").preamble.id == expected


@pytest.mark.parametrize("body, message", [
    ("0x02000777", "wrong 8-bit prefix"),
    ("0x100000000", "unsigned 32-bit"),
    ("seven", "not an integer"),
])
def test_bad_explicit_ids_are_rejected(body, message):
    prog = sample_ir.build()
    prog.actions["MyIngress.set_group"].annotations["id"] = body
    with pytest.raises(P4InfoError, match=message):
        build_p4info(prog)


def test_member_ids_take_their_position():
    """p4c: @id members first; another member takes its 1-based position or the next free id
    above it; a member with an @id still uses up a position."""
    assert _member_ids([("a", {}), ("b", {}), ("c", {})], "t") == [1, 2, 3]
    assert _member_ids([("a", {}), ("b", {"id": "1"}), ("c", {})], "t") == [2, 1, 3]
    assert _member_ids([("a", {"id": "3"}), ("b", {}), ("c", {})], "t") == [3, 2, 4]
    with pytest.raises(P4InfoError, match="duplicate"):
        _member_ids([("a", {"id": "2"}), ("b", {"id": "2"})], "t")
    with pytest.raises(P4InfoError, match="not a valid id"):
        _member_ids([("a", {"id": "0"})], "t")


def test_features_program_members_and_actions():
    p = _compiled(P4DIR / "p4info_features.p4")
    ecmp = by_name(p.tables, "Ing.ecmp")  # its selector key comes first and takes id 1
    assert [(f.id, f.name) for f in ecmp.match_fields] == [(2, "meta.group")]
    fwd = by_name(p.tables, "Ing.Ing.forward")
    assert [(f.id, f.name) for f in fwd.match_fields] == [(1, "dst_mac"), (9, "hdr.eth.etype")]
    assert fwd.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    args = [(a.param_id, a.value) for a in fwd.initial_default_action.arguments]
    assert args == [(3, b"\x00\x01"), (2, b"\x00\x07")]  # full-width bytes, as p4c writes
    sp = by_name(p.actions, "Ing.set_port")
    assert sp.preamble.id == 0x01000777
    assert [(q.id, q.name) for q in sp.params] == [(3, "port"), (2, "tag")]
    names = {a.preamble.name for a in p.actions}
    assert "Ing.count_it" in names  # called directly from the apply block
    refs = {r.id: list(r.annotations) for r in by_name(p.tables, "Ing.acl").action_refs}
    assert refs[by_name(p.actions, "NoAction").preamble.id] == ["@defaultonly"]  # implicit
    pin = by_name(p.controller_packet_metadata, "packet_in")
    assert [(m.id, m.name) for m in pin.metadata] == [(1, "ingress_port"), (7, "reason"),
                                                      (2, "pad")]
    assert p.type_info.serializable_enums["Color_t"].underlying_type.bitwidth == 8


def test_actions_nothing_reaches_are_left_out():
    prog = sample_ir.build()
    for c in prog.controls.values():
        for t in c.tables.values():
            t.actions = [r for r in t.actions if r.action != "NoAction"]
            if t.default_action.action == "NoAction":
                t.default_action = ir.BoundAction("MyIngress.drop", [])
    names = {a.preamble.name for a in build_p4info(prog).actions}
    assert "NoAction" not in names and "MyIngress.drop" in names


def test_aliases_are_unique_across_kinds():
    """p4c keeps one suffix set for all kinds: a counter named like a table in another control
    makes both keep their control's name in the alias."""
    prog = sample_ir.build()
    twin = prog.controls["MyIngress"].instances.get("port_counter") or prog.instances[
        "port_counter"]
    prog.instances["eg_lpm"] = ir.ExternInstance(
        "ipv4_lpm", "MyEgress.ipv4_lpm", "counter", (), twin.args)
    p = build_p4info(prog)
    assert by_name(p.tables, "MyIngress.ipv4_lpm").preamble.alias == "MyIngress.ipv4_lpm"
    assert by_name(p.counters, "MyEgress.ipv4_lpm").preamble.alias == "MyEgress.ipv4_lpm"
    assert by_name(p.tables, "MyIngress.acl").preamble.alias == "acl"


def test_non_const_entries_are_initial_not_const():
    prog = sample_ir.build()
    filt = prog.controls["MyIngress"].tables["ether_filter"]
    filt.initial_entries, filt.const_entries = filt.const_entries, None
    t = by_name(build_p4info(prog).tables, "MyIngress.ether_filter")
    assert t.has_initial_entries and not t.is_const_table
