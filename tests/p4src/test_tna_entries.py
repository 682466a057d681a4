"""The tofino target (model/tna.py): every entity it computes for a k=4 fat-tree, for every
scheme, is accepted by the TNA program's P4Info schema (ids, key names and match kinds, widths,
action parameters, table membership, sizes) and encodes as P4Runtime updates through the
controller's codec; and the TNA entries make the same member choices as fabric.p4's where the
choice is deterministic (Whack-a-Mole), the same shares where it is not (random), the same
weights (ECMP). The P4Info is the Tofino compiler's where it is on PATH, else one built from the
program's declarations (tests/p4src/p4contract.py)."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import p4contract as pc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from controller.p4rt_codec import P4Schema
from controller.tna_codec import diff_updates, install_updates
from model import lb as lb_model
from model import tna
from model.entries import LB_GROUP, LB_MEMBER, WAM_SLOT, Entry
from model.routing import compute_fabric_entries
from model.schemes import SCHEMES, Ecmp, Flowlet, WhackAMole
from model.spec import fat_tree
from p4switch import ExactMatch, LpmMatch, RangeMatch, TernaryMatch

ROOT = Path(__file__).resolve().parents[2]
TNA = ROOT / "p4src" / "tna" / "fabric.p4"
KIND = {ExactMatch: "exact", LpmMatch: "lpm", RangeMatch: "range", TernaryMatch: "ternary"}


def _compiler_p4info(tmp: Path) -> p4info_pb2.P4Info | None:
    spec = importlib.util.spec_from_file_location("tofino_script", ROOT / "scripts" / "tofino.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    compiler = mod.find_compiler()
    if compiler is None:
        return None
    r, _ = mod.compile_for(compiler, "tofino", tmp)
    assert r.returncode == 0, r.stderr
    info = p4info_pb2.P4Info()
    text_format.Parse((tmp / "p4info.txtpb").read_text(), info)
    return info


@pytest.fixture(scope="module")
def schema(tmp_path_factory) -> tuple[P4Schema, pc.Contract]:
    info = _compiler_p4info(tmp_path_factory.mktemp("tofino"))
    if info is None:
        contract = pc.from_tna_source(TNA)
        info = pc.to_p4info(contract)
    else:
        contract = pc.from_p4info(info, pipe_prefix="pipe.")
    return P4Schema(info), contract


def validate(t: tna.TnaSwitchEntries, contract: pc.Contract) -> None:
    """Everything a P4Runtime server checks of these writes against the P4Info, by name."""
    counts: Counter[str] = Counter()
    for e in t.entries:
        table = contract.tables[e.table]
        keys = {k.name: k for k in table.keys}
        assert set(e.match_dict) == set(keys), (e, table.keys)
        for name, m in e.match:
            assert KIND[type(m)] == keys[name].match, (e, name)
        assert e.action in table.actions, e
        params = dict(contract.actions[e.action].params)
        assert set(e.params_dict) == set(params), e
        for name, v in e.params:
            assert 0 <= v < 1 << params[name], (e, name)
        needs_priority = any(k.match in ("range", "ternary") for k in table.keys)
        assert (e.priority > 0) == needs_priority, e
        counts[e.table] += 1
    for s in t.selector_entries:
        counts[s.table] += 1
        table = contract.tables[s.table]
        assert table.implementation is not None
        assert {n for n, _ in s.match} == {k.name for k in table.keys}
    for name, n in counts.items():
        assert n <= contract.tables[name].size, (t.switch, name, n)

    selector_tables = [x for x in contract.tables.values() if x.implementation]
    assert len(selector_tables) == 1
    member_ids = {m.member_id for m in t.members}
    assert len(member_ids) == len(t.members)
    for m in t.members:
        assert m.action in selector_tables[0].actions
        params = dict(contract.actions[m.action].params)
        assert {n for n, _ in m.params} == set(params)
        assert m.profile in contract.profiles or selector_tables[0].implementation
    group_ids = {g.group_id for g in t.groups}
    assert len(group_ids) == len(t.groups)
    for g in t.groups:
        assert g.profile in contract.profiles or selector_tables[0].implementation
        assert 0 < len(g.members) <= g.max_size <= lb_model.LB_MAX_MEMBERS
        assert {mid for mid, _ in g.members} <= member_ids
        assert all(w > 0 for _, w in g.members)
    assert {s.group_id for s in t.selector_entries} == group_ids


CASES = [(name, {}) for name in SCHEMES] + [
    ("wam", {"log2_m": 4}), ("flowlet", {"timeout_us": 500}), ("ecmp", {"seed": 7})]


@pytest.mark.parametrize(("scheme", "params"), CASES,
                         ids=[f"{n}{'-' + '-'.join(map(str, p.values())) if p else ''}"
                              for n, p in CASES])
def test_every_entry_fits_the_tna_p4info(schema, scheme, params):
    p4schema, contract = schema
    sch = SCHEMES[scheme](**params)
    fabric = compute_fabric_entries(fat_tree(4), sch)
    out = tna.tna_fabric_entries(fabric)
    assert set(out) == set(fabric.switches)
    for name, t in out.items():
        validate(t, contract)
        ups = install_updates(p4schema, t)  # ids and widths, through the controller's codec
        assert len(ups) == len(t)
        v1_groups = [e for e in fabric[name].entries if e.table == LB_GROUP]
        tna_groups = [e for e in t.entries if e.table == LB_GROUP]
        assert len(v1_groups) == len(tna_groups)
        if scheme in ("ecmp", "flowlet"):
            assert len(t.groups) == len(v1_groups) > 0 or name.startswith("core")
            assert not [e for e in t.entries if e.table == LB_MEMBER]


def test_mixed_schemes_and_a_failed_link(schema):
    _p4schema, contract = schema
    spec = fat_tree(4)
    fabric = compute_fabric_entries(spec, "ecmp", failed_links=[0],
                                    group_schemes={"agg1": WhackAMole(), "edge1": "random"})
    for t in tna.tna_fabric_entries(fabric).values():
        validate(t, contract)


# ---- the TNA entries choose as fabric.p4 does --------------------------------------------------
def _first_group(fabric, switch: str) -> tuple[int, list[Entry]]:
    entries = fabric[switch].entries
    g = next(e for e in entries if e.table == LB_GROUP)
    gid = g.match_dict["meta.lb.group_id"].value
    return gid, entries


def _tna_member_ports(t: tna.TnaSwitchEntries, gid: int) -> tuple[dict[int, int], dict[int, int]]:
    """(j -> lb_member index) of the slot table, (index -> port) of lb_member, for one group."""
    slots, ports = {}, {}
    for e in t.entries:
        m = e.match_dict
        if m.get("meta.lb.group_id") != ExactMatch(gid):
            continue
        if e.table == WAM_SLOT:
            slots[m[tna.K_WAM_J].value] = e.params_dict["member_idx"]
        elif e.table == LB_MEMBER:
            ports[m["meta.lb.member_idx"].value] = e.params_dict["port"]
    return slots, ports


@pytest.mark.parametrize("log2_m", [0, 3, 8])
def test_wam_slot_table_reproduces_fabric_p4_choices(log2_m):
    spec = fat_tree(4)
    probe = compute_fabric_entries(spec, WhackAMole(log2_m=log2_m))
    gid, _ = _first_group(probe, "edge1")
    ports = probe["edge1"].groups[gid].ports
    weights = {("edge1", gid): {ports[0]: 3.0, ports[1]: 1.0}}
    fabric = compute_fabric_entries(spec, WhackAMole(log2_m=log2_m), weights=weights)
    v1 = next(e for e in fabric["edge1"].entries if e.table == LB_GROUP)
    p = v1.params_dict
    balls = lb_model.balls_from_weights([3.0, 1.0], 1 << log2_m)
    ref = lb_model.WamGroup(log2_m, p["a"], p["b"], balls)
    t = tna.tna_entries(fabric["edge1"].entries, "edge1")
    tg = next(e for e in t.entries if e.table == LB_GROUP and e.match == v1.match)
    mask = tg.params_dict["mask"]
    assert mask == (1 << log2_m) - 1
    slots, _ports = _tna_member_ports(t, gid)
    assert len(slots) == 1 << log2_m
    counter = 0xFFF0  # the 16-bit counter wraps: j mod m still follows
    ref.j = counter
    for _ in range(3 * (1 << log2_m) + 5):
        assert slots[counter & mask] == ref.next_member()
        counter = (counter + 1) & 0xFFFF


def test_random_slot_table_shares_are_equal_within_one_slot():
    fabric = compute_fabric_entries(fat_tree(4), "random")
    gid, _ = _first_group(fabric, "edge1")
    t = tna.tna_entries(fabric["edge1"].entries, "edge1")
    slots, ports = _tna_member_ports(t, gid)
    m = 1 << tna.RANDOM_LOG2_M
    assert sorted(slots) == list(range(m))
    shares = Counter(slots.values())
    assert set(shares) == set(ports)
    assert max(shares.values()) - min(shares.values()) <= 1


def test_weighted_ecmp_becomes_group_weights():
    spec = fat_tree(4)
    probe = compute_fabric_entries(spec, Ecmp())
    gid, _ = _first_group(probe, "edge1")
    ports = probe["edge1"].groups[gid].ports
    fabric = compute_fabric_entries(spec, Ecmp(), weights={("edge1", gid): {ports[0]: 2.0}})
    t = tna.tna_entries(fabric["edge1"].entries, "edge1")
    g = next(g for g in t.groups if g.group_id == gid)
    by_id = {m.member_id: dict(m.params)["port"] for m in t.members}
    assert sorted((by_id[mid], w) for mid, w in g.members) == sorted(
        [(ports[0], 2), (ports[1], 1)])
    seed = next(e for e in t.entries if e.table == LB_GROUP).params_dict
    assert set(seed) == {"seed"}


def test_flowlet_timeout_goes_to_ns_and_must_fit_32_bits():
    fabric = compute_fabric_entries(fat_tree(4), Flowlet(timeout_us=250))
    t = tna.tna_entries(fabric["edge1"].entries, "edge1")
    g = next(e for e in t.entries if e.table == LB_GROUP)
    assert g.params_dict["timeout_ns"] == 250_000
    big = compute_fabric_entries(fat_tree(4), Flowlet(timeout_us=5_000_000))
    with pytest.raises(ValueError, match="32-bit ns"):
        tna.tna_entries(big["edge1"].entries, "edge1")


def test_an_entry_with_no_tna_place_is_a_one_line_error():
    e = Entry.make("MyIngress.no_such_table", {"k": ExactMatch(1)}, "MyIngress.x")
    with pytest.raises(ValueError, match="no place in the TNA program"):
        tna.tna_entries([e], "sw1")


def test_port_map_renumbers_every_port(schema):
    _p4schema, contract = schema
    spec = fat_tree(4)
    fabric = compute_fabric_entries(spec, "ecmp")
    ports = sorted(spec.ports("edge1"))
    dev = {p: 128 + 8 * i for i, p in enumerate(ports)}  # e.g. 1/0, 2/0, ... on a Tofino
    t = tna.tna_fabric_entries(fabric, {"edge1": dev})["edge1"]
    validate(t, contract)
    seen = {e.params_dict["port"] for e in t.entries if "port" in e.params_dict}
    seen |= {dict(m.params)["port"] for m in t.members}
    seen |= {e.match_dict[tna.K_EGRESS_TNA].value for e in t.entries
             if tna.K_EGRESS_TNA in e.match_dict}
    assert seen <= set(dev.values()) and seen
    with pytest.raises(ValueError, match="no device port"):
        tna.tna_entries(fabric["edge1"].entries, "edge1", {ports[0]: 128})


def test_updates_write_members_then_groups_then_entries(schema):
    p4schema, _contract = schema
    fabric = compute_fabric_entries(fat_tree(4), "ecmp")
    t = tna.tna_entries(fabric["edge1"].entries, "edge1")
    ups = install_updates(p4schema, t)
    kinds = [u.entity.WhichOneof("entity") for u in ups]
    order = {"action_profile_member": 0, "action_profile_group": 1, "table_entry": 2}
    assert kinds == sorted(kinds, key=order.__getitem__)
    impl = next(x.implementation_id for x in p4schema.info.tables
                if x.preamble.name == tna.LB_SELECT)
    members = [u.entity.action_profile_member for u in ups[:len(t.members)]]
    groups = [u.entity.action_profile_group for u in ups if u.entity.HasField(
        "action_profile_group")]
    assert {m.action_profile_id for m in members} == {impl}
    assert {g.action_profile_id for g in groups} == {impl}
    assert {m.member_id for g in groups for m in g.members} == {m.member_id for m in members}
    selected = [u.entity.table_entry for u in ups if u.entity.HasField("table_entry")
                and u.entity.table_entry.action.WhichOneof("type") == "action_profile_group_id"]
    assert sorted(e.action.action_profile_group_id for e in selected) == sorted(
        g.group_id for g in groups)


# ---- run-time changes ----------------------------------------------------------------------------
class _Switch:
    """A switch's TNA state with P4Runtime's referential rules: a group names existing members,
    a selector entry an existing group; what is referenced cannot be deleted."""

    def __init__(self, t: tna.TnaSwitchEntries) -> None:
        self.entries = {e.key: e for e in t.entries}
        self.members = {m.member_id: m for m in t.members}
        self.groups = {g.group_id: g for g in t.groups}
        self.selected = {s.match: s for s in t.selector_entries}

    def apply(self, op: str, x) -> None:
        if isinstance(x, tna.ProfileMember):
            if op == "delete":
                assert not any(x.member_id == mid for g in self.groups.values()
                               for mid, _ in g.members), f"member {x.member_id} still in a group"
                del self.members[x.member_id]
            else:
                assert (x.member_id in self.members) == (op == "modify")
                self.members[x.member_id] = x
        elif isinstance(x, tna.ProfileGroup):
            if op == "delete":
                assert all(s.group_id != x.group_id for s in self.selected.values())
                del self.groups[x.group_id]
            else:
                assert all(mid in self.members for mid, _ in x.members)
                self.groups[x.group_id] = x
        elif isinstance(x, tna.SelectorEntry):
            if op == "delete":
                del self.selected[x.match]
            else:
                assert x.group_id in self.groups
                self.selected[x.match] = x
        elif op == "delete":
            del self.entries[x.key]
        else:
            assert (x.key in self.entries) == (op == "modify")
            self.entries[x.key] = x

    def same_as(self, t: tna.TnaSwitchEntries) -> bool:
        other = _Switch(t)
        return (self.entries, self.members, self.groups, self.selected) == (
            other.entries, other.members, other.groups, other.selected)


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_failover_diff_applies_in_order_and_reaches_the_new_state(schema, scheme):
    p4schema, _contract = schema
    spec = fat_tree(4)
    before = tna.tna_fabric_entries(compute_fabric_entries(spec, scheme))
    after = tna.tna_fabric_entries(compute_fabric_entries(spec, scheme,
                                                          failed_links=[frozenset({"edge1", "agg1"})]))
    changed = 0
    for name in before:
        d = tna.diff_tna(before[name], after[name])
        sw = _Switch(before[name])
        for op, x in d.ordered():
            sw.apply(op, x)
        assert sw.same_as(after[name]), name
        assert len(diff_updates(p4schema, d)) == len(d)
        changed += len(d) > 0
    assert changed  # the failure changed some switch


def test_wam_reweight_rewrites_only_slot_entries():
    spec = fat_tree(4)
    old = compute_fabric_entries(spec, WhackAMole())
    gid, _ = _first_group(old, "edge1")
    ports = old["edge1"].groups[gid].ports
    new = compute_fabric_entries(spec, WhackAMole(), weights={("edge1", gid): {ports[0]: 0.25}})
    d = tna.diff_tna(tna.tna_entries(old["edge1"].entries), tna.tna_entries(new["edge1"].entries))
    assert not d.entries.inserts and not d.entries.deletes
    assert d.entries.modifies and {e.table for e in d.entries.modifies} == {WAM_SLOT}
    assert not any(d.members) and not any(d.groups)


def test_ecn_ramp_rounds_its_span_to_a_power_of_two() -> None:
    """Tofino's Random is uniform over a power of two: K_max moves up to K_min + 2^s."""
    from model.routing import ecn_entry

    assert tna.ecn_ramp_params(4, 12) == {"kmin": 4, "kmax": 12, "mask": 7}
    assert tna.ecn_ramp_params(4, 13) == {"kmin": 4, "kmax": 20, "mask": 15}
    assert tna.ecn_ramp_params(4, 5) == {"kmin": 4, "kmax": 5, "mask": 0}
    out = tna.tna_entries([ecn_entry(3, (4, 13)), ecn_entry(4, 9)])
    assert [(e.action, e.params_dict) for e in out.entries] == [
        ("MyEgress.set_ecn_ramp", {"kmin": 4, "kmax": 20, "mask": 15}),
        ("MyEgress.set_ecn_threshold", {"qdepth": 9})]


def test_ecn_thresholds_go_from_packets_to_queue_cells():
    assert (tna.cells_per_packet("tofino"), tna.cells_per_packet("tofino2")) == (19, 9)
    with pytest.raises(ValueError, match="unknown chip"):
        tna.cells_per_packet("tofino9")
    fabric = compute_fabric_entries(fat_tree(4), "ecmp", ecn_threshold=(10, 30))
    t = tna.tna_entries(fabric["edge1"].entries, "edge1", qdepth_scale=19)
    ramp = {e.params_dict["kmin"] for e in t.entries if e.action == tna.ECN_RAMP}
    assert ramp == {190}
    with pytest.raises(ValueError, match="19 bits"):
        tna.tna_entries(compute_fabric_entries(fat_tree(4), "ecmp", ecn_threshold=40_000)
                        ["edge1"].entries, "edge1", qdepth_scale=19)
