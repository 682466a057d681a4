"""Routing on fat_tree(4) and leaf_spine: routes, groups, failures — and packets walked hop by
hop through real fabric.p4 pipelines programmed with the computed entries."""

from __future__ import annotations

import ipaddress
import struct

import pytest
from ctl_helpers import fabric_program, udp_frame

from model.entries import IPV4_LPM, LB_GROUP, LB_MEMBER, PORT_SMAC, WAM_SLOT, diff_entries
from model.pipeline_target import apply_diff_on_pipeline, install_on_pipeline
from model.routing import (
    PROBE_IP,
    compute_fabric_entries,
    destinations,
    tiers,
)
from model.schemes import Ecmp, WhackAMole
from model.spec import FabricSpec, fat_tree, leaf_spine
from p4switch import Pipeline


def _routes(se) -> dict[str, object]:
    out = {}
    for e in se.entries:
        if e.table == IPV4_LPM:
            m = e.match_dict["hdr.ipv4.dstAddr"]
            out[f"{ipaddress.IPv4Address(m.value)}/{m.prefix_len}"] = e
    return out


@pytest.mark.parametrize("spec", [fat_tree(4), leaf_spine(4, 2, 2, 2)], ids=["ft4", "ls"])
def test_every_switch_routes_every_host(spec: FabricSpec) -> None:
    fe = compute_fabric_entries(spec, "ecmp")
    for name in spec.switches:
        nets = [ipaddress.IPv4Network(p) for p in _routes(fe[name])]
        for h in spec.hosts.values():
            assert any(ipaddress.IPv4Address(h.ip) in n for n in nets), (name, h.name)
        assert f"{PROBE_IP}/32" in _routes(fe[name])
        smac_ports = {e.match_dict["standard_metadata.egress_port"].value
                      for e in fe[name].entries if e.table == PORT_SMAC}
        assert smac_ports == set(spec.ports(name))


def test_fat_tree_groups_have_half_k_members_and_up_down_shape() -> None:
    k = 4
    spec = fat_tree(k)
    fe = compute_fabric_entries(spec, "ecmp")
    t = tiers(spec)
    assert {t[s] for s, sw in spec.switches.items() if sw.role == "edge"} == {0}
    assert {t[s] for s, sw in spec.switches.items() if sw.role == "core"} == {2}
    for name, sw in spec.switches.items():
        groups = fe[name].groups
        if sw.role == "core":
            assert groups == {}  # one agg per pod: direct next hops only
            continue
        assert len(groups) == 1
        (g,) = groups.values()
        assert len(g.ports) == k // 2
        up = {"edge": "agg", "agg": "core"}[sw.role]
        assert all(spec.switches[p].role == up for p in g.peers)
        n_members = [e.params_dict["n_members"] for e in fe[name].entries if e.table == LB_GROUP]
        assert n_members == [k // 2]
    # the edge routes every other subnet through its group, with distinct rotation ids
    edge_routes = [e for e in _routes(fe["edge1"]).values()
                   if e.action == "MyIngress.set_lb_group"]
    assert len(edge_routes) == len(destinations(spec)) - 1
    assert len({e.params_dict["dst_id"] for e in edge_routes}) == len(edge_routes)


def test_adjacent_tiers_use_different_hash_variants() -> None:
    spec = fat_tree(4)
    fe = compute_fabric_entries(spec, Ecmp())
    variant = {}
    for name in spec.switches:
        for e in fe[name].entries:
            if e.table == LB_GROUP:
                variant[name] = e.params_dict["seed"] & 3
    for lk in spec.switch_links():
        if lk.a in variant and lk.b in variant:
            assert variant[lk.a] != variant[lk.b], lk


def test_wam_groups_get_ball_ranges_and_odd_b_per_switch() -> None:
    spec = leaf_spine(3, 4, 1, 1)
    fe = compute_fabric_entries(spec, WhackAMole(log2_m=4))
    seen = set()
    for name in spec.switches:
        se = fe[name]
        for gid, g in se.groups.items():
            ranges = sorted((e.match_dict["meta.lb.wam_slot"].low,
                             e.match_dict["meta.lb.wam_slot"].high)
                            for e in se.entries
                            if e.table == WAM_SLOT and e.match_dict["meta.lb.group_id"].value == gid)
            assert ranges[0][0] == 0 and ranges[-1][1] == 15
            assert all(hi + 1 == lo for (_, hi), (lo, _) in zip(ranges, ranges[1:], strict=False))
            assert len(ranges) == len(g.ports)
        (grp,) = [e for e in se.entries if e.table == LB_GROUP] or [None]
        if grp is not None:
            assert grp.params_dict["b"] % 2 == 1
            seen.add((grp.params_dict["a"], grp.params_dict["b"]))
    assert len(seen) == 3  # one group per leaf, each leaf its own (a, b)


def test_failed_link_is_avoided_and_diff_is_small() -> None:
    spec = fat_tree(4)
    before = compute_fabric_entries(spec, "ecmp")
    after = compute_fabric_entries(spec, "ecmp", failed_links={frozenset({"agg1", "core1"})})
    bad = {(lk.a, lk.a_port) for lk in spec.links_between("agg1", "core1")} | \
          {(lk.b, lk.b_port) for lk in spec.links_between("agg1", "core1")}
    for name in spec.switches:
        for e in after[name].entries:
            if e.table in (LB_MEMBER, IPV4_LPM) and "port" in e.params_dict:
                assert (name, e.params_dict["port"]) not in bad, (name, e)
    changed = {n for n in spec.switches
               if len(diff_entries(before[n].entries, after[n].entries))}
    # agg1 loses its uplink; the other column-0 aggs stop sending pod 0 through core1; core1
    # loses pod 0 (no other agg of pod 0 reaches core1)
    assert "agg1" in changed and "core1" in changed
    assert not any(spec.switches[n].role == "edge" for n in changed)
    total = sum(len(diff_entries(before[n].entries, after[n].entries)) for n in spec.switches)
    assert 0 < total < before.total() // 4
    # groups that still exist keep their ids
    assert before["agg3"].groups[1].ports == after["agg3"].groups[1].ports


# ---- packets through programmed pipelines ----------------------------------------------------
def _walk(spec: FabricSpec, pipes: dict[str, Pipeline], src: str, dst: str, sport: int,
          now: int) -> tuple[list[str], bytes | None]:
    """Send one UDP packet from host src to host dst; return the switches visited and the frame
    that reached dst (None if dropped)."""
    hs, hd = spec.hosts[src], spec.hosts[dst]
    frame = udp_frame(hs.ip, hd.ip, sport, 4791, hs.mac, hs.gateway_mac or "02:00:00:00:00:01")
    node, port = hs.switch, hs.switch_port
    path = []
    for _ in range(10):
        path.append(node)
        res = pipes[node].process(frame, port, now)
        if len(res.outputs) != 1:
            return path, None
        out = res.outputs[0]
        peer, peer_port = spec.ports(node)[out.port]
        frame = out.data
        if peer in spec.hosts:
            return path, frame if peer == dst else None
        node, port = peer, peer_port
    return path, None


def _program_fabric(spec: FabricSpec, fe) -> dict[str, Pipeline]:
    pipes = {}
    for name in spec.switches:
        p = Pipeline(fabric_program(), cpu_port=255, seed=1)
        install_on_pipeline(p, fe[name])
        pipes[name] = p
    return pipes


@pytest.mark.parametrize("spec", [fat_tree(4), leaf_spine(3, 2, 2, 2)], ids=["ft4", "ls"])
def test_packets_reach_every_host_over_shortest_paths(spec: FabricSpec) -> None:
    fe = compute_fabric_entries(spec, "ecmp")
    pipes = _program_fabric(spec, fe)
    hosts = sorted(spec.hosts)
    for i, src in enumerate(hosts):
        for dst in hosts[i + 1:: 3]:
            path, frame = _walk(spec, pipes, src, dst, 1000 + i, 1_000_000)
            assert frame is not None, (src, dst, path)
            same_sw = spec.hosts[src].switch == spec.hosts[dst].switch
            ip = frame[14:34]
            hops = len(path)
            assert ip[8] == 64 - hops  # TTL decremented once per switch
            assert frame[0:6] == bytes.fromhex(spec.hosts[dst].mac.replace(":", ""))
            if spec.kind == "fattree" and not same_sw:
                pod = {spec.hosts[src].pod, spec.hosts[dst].pod}
                assert hops == (3 if len(pod) == 1 else 5)


def test_reroute_after_failure_keeps_every_pair_connected() -> None:
    spec = fat_tree(4)
    before = compute_fabric_entries(spec, "ecmp")
    pipes = _program_fabric(spec, before)
    after = compute_fabric_entries(spec, "ecmp", failed_links={frozenset({"edge1", "agg1"}),
                                                               frozenset({"agg3", "core1"})})
    for name in spec.switches:
        apply_diff_on_pipeline(pipes[name], diff_entries(before[name].entries,
                                                         after[name].entries))
    for src in ("h1", "h5"):
        for dst in sorted(spec.hosts):
            if dst == src:
                continue
            for sport in range(1000, 1004):
                path, frame = _walk(spec, pipes, src, dst, sport, 2_000_000)
                assert frame is not None, (src, dst, path)
                assert ("edge1", "agg1") not in zip(path, path[1:], strict=False)
                assert ("agg1", "edge1") not in zip(path, path[1:], strict=False)
                assert ("agg3", "core1") not in zip(path, path[1:], strict=False)


def test_probe_route_punts_to_cpu() -> None:
    spec = fat_tree(4)
    fe = compute_fabric_entries(spec, "ecmp")
    p = Pipeline(fabric_program(), cpu_port=255, seed=1)
    install_on_pipeline(p, fe["agg1"])
    frame = udp_frame("169.254.0.1", PROBE_IP, 1, 1, "02:00:00:00:00:01", "ff:ff:ff:ff:ff:ff",
                      payload=struct.pack("!HHI", 3, 3, 7))
    res = p.process(frame, 3, 1000)
    assert [o.port for o in res.outputs] == [255]


def test_unknown_failed_link_is_an_error() -> None:
    with pytest.raises(KeyError):
        compute_fabric_entries(fat_tree(4), "ecmp", failed_links={frozenset({"edge1", "core1"})})
