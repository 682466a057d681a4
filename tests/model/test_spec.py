"""model.spec: generated fat-trees and leaf-spines have the sizes, ports, paths and unique
addresses their definitions promise."""

from __future__ import annotations

import itertools

import networkx as nx
import pytest

from model.routing import destinations
from model.spec import (
    MAX_FAT_TREE_K,
    FabricSpec,
    HostSpec,
    LinkSpec,
    SpecError,
    SwitchSpec,
    fat_tree,
    leaf_spine,
)


@pytest.mark.parametrize("k", [4, 6, 8])
def test_fat_tree_counts(k: int) -> None:
    spec = fat_tree(k)
    assert len(spec.switches) == 5 * k * k // 4
    assert len(spec.hosts) == k ** 3 // 4
    # k/2 hosts + k/2 aggs per edge, k/2 up + k/2 down per agg, k down per core: k³/4 * 3 links
    assert len(spec.links) == 3 * k ** 3 // 4
    for sw in spec.switches.values():
        assert sorted(spec.ports(sw.name)) == list(range(1, k + 1)), sw.name
    roles = [sw.role for sw in spec.switches.values()]
    assert roles.count("edge") == roles.count("agg") == k * k // 2
    assert roles.count("core") == k * k // 4


@pytest.mark.parametrize("k", [4, 6, 8])
def test_fat_tree_unique_addresses(k: int) -> None:
    spec = fat_tree(k)
    ips = [h.ip for h in spec.hosts.values()] + [s.ip for s in spec.switches.values()]
    assert len(set(ips)) == len(ips)
    macs = [h.mac for h in spec.hosts.values()]
    macs += [s.port_mac(p) for s in spec.switches.values() for p in spec.ports(s.name)]
    assert len(set(macs)) == len(macs)
    assert len({s.grpc_port for s in spec.switches.values()}) == len(spec.switches)


@pytest.mark.parametrize("k", [4, 6])
def test_fat_tree_paths_across_pods(k: int) -> None:
    spec = fat_tree(k)
    g = nx.Graph(spec.graph())  # no parallel links in a fat-tree
    by_pod = {}
    for h in spec.hosts.values():
        by_pod.setdefault(h.pod, h.name)
    for (_, a), (_, b) in itertools.combinations(sorted(by_pod.items()), 2):
        paths = list(nx.all_shortest_paths(g, a, b))
        assert len(paths) == (k // 2) ** 2, (a, b)
        assert all(len(p) == 7 for p in paths)  # h-edge-agg-core-agg-edge-h


def test_fat_tree_host_gateway_is_its_edge_port() -> None:
    spec = fat_tree(4)
    h1 = spec.hosts["h1"]
    assert (h1.ip, h1.switch, h1.switch_port) == ("10.0.0.2", "edge1", 1)
    edge = spec.switches["edge1"]
    assert h1.gateway_ip == edge.ip == "10.0.0.1"
    assert h1.gateway_mac == edge.port_mac(1)
    assert spec.ports("core1")[1] == ("agg1", 3)


@pytest.mark.parametrize("k", [0, 3, 34])
def test_fat_tree_bad_k(k: int) -> None:
    with pytest.raises(SpecError, match="even"):
        fat_tree(k)


def test_leaf_spine_parallel_uplinks() -> None:
    spec = leaf_spine(leaves=3, spines=2, hosts_per_leaf=2, uplinks=2, bw_mbps=10)
    assert len(spec.hosts) == 6 and len(spec.switches) == 5
    assert len(spec.links_between("leaf1", "spine2")) == 2
    assert sorted(spec.ports("leaf1")) == [1, 2, 3, 4, 5, 6]
    assert spec.graph().number_of_edges("leaf2", "spine1") == 2
    assert all(lk.bw_mbps == 10 for lk in spec.links)


def test_duplicate_port_refused() -> None:
    spec = FabricSpec("x")
    spec.add_switch(SwitchSpec("s1", "switch", 1, 0))
    spec.add_switch(SwitchSpec("s2", "switch", 2, 1))
    spec.add_link(LinkSpec("s1", 1, "s2", 1))
    with pytest.raises(SpecError, match="already used"):
        spec.add_link(LinkSpec("s1", 1, "s2", 2))
    with pytest.raises(SpecError, match="bad port"):
        spec.add_link(LinkSpec("s1", 255, "s2", 3))


@pytest.fixture(scope="module")
def k32() -> FabricSpec:
    return fat_tree(MAX_FAT_TREE_K, bw_mbps=100_000)


def test_fat_tree_k32_builds(k32: FabricSpec) -> None:
    """The largest fat tree: 1,280 switches, 8,192 hosts, every switch with ports 1..32."""
    k = MAX_FAT_TREE_K
    assert k == 32
    assert (len(k32.switches), len(k32.hosts), len(k32.links)) == (1280, 8192, 24576)
    assert [h.name for h in k32.hosts.values()] == [f"h{i}" for i in range(1, 8193)]
    assert {sw.device_id for sw in k32.switches.values()} == set(range(1, 1281))
    for sw in k32.switches.values():
        assert sorted(k32.ports(sw.name)) == list(range(1, k + 1)), sw.name
    assert k32.ports("core1")[32] == ("agg497", 17)   # pod 31's first aggregation switch
    assert k32.hosts["h8192"].ip == "10.31.15.17"
    assert k32.switches["core256"].ip == "10.32.16.16"


def test_fat_tree_k32_addresses_unique(k32: FabricSpec) -> None:
    """IPs, MACs (hosts and every switch port), device ids and server ports stay unique, and
    every edge's subnet is a destination of its own (k²/2 = 512 routes per switch)."""
    ips = [h.ip for h in k32.hosts.values()] + [s.ip for s in k32.switches.values()]
    assert len(set(ips)) == len(ips) == 8192 + 1280
    macs = [h.mac for h in k32.hosts.values()]
    macs += [s.port_mac(p) for s in k32.switches.values() for p in k32.ports(s.name)]
    assert len(set(macs)) == len(macs)
    assert len({s.grpc_port for s in k32.switches.values()}) == 1280
    assert len({s.thrift_port for s in k32.switches.values()}) == 1280
    assert len({d.prefix for d in destinations(k32)}) == 512
    for h in k32.hosts.values():
        assert k32.host_of_ip(h.ip) is h


def test_spec_indexes_follow_the_fields() -> None:
    """Lookups by node and address see links and hosts replaced in place or as a new list, as
    tests and the topology loader change them."""
    spec = fat_tree(4, bw_mbps=100)
    assert [lk.bw_mbps for lk in spec.links_between("edge1", "agg1")] == [100]
    i = next(i for i, lk in enumerate(spec.links) if {lk.a, lk.b} == {"edge1", "agg1"})
    spec.links[i] = LinkSpec(spec.links[i].a, spec.links[i].a_port, spec.links[i].b,
                             spec.links[i].b_port, 25)
    assert [lk.bw_mbps for lk in spec.links_between("edge1", "agg1")] == [25]
    spec.links = [lk for lk in spec.links if "h1" not in (lk.a, lk.b)]
    assert list(spec.node_links("h1")) == []
    spec.add_link(LinkSpec("h1", 0, "edge1", 1, 10))   # port 1 is free again
    assert spec.ports("edge1")[1] == ("h1", 0)
    with pytest.raises(SpecError, match="already used"):
        spec.add_link(LinkSpec("h1", 0, "edge1", 1))
    with pytest.raises(SpecError, match="duplicate IPv4"):
        spec.add_host(HostSpec("h99", "10.0.0.2", 24, "02:00:0a:00:00:02", "edge1", 1))
    spec.hosts = {n: h for n, h in spec.hosts.items() if n != "h1"}
    spec.add_host(HostSpec("h99", "10.0.0.2", 24, "02:00:0a:00:00:02", "edge1", 1))
    assert spec.host_of_ip("10.0.0.2").name == "h99"
