"""SpecTopo and its subclasses: the Mininet graph has exactly the spec's nodes, links and port
numbers (so interface <sw>-ethN is the controller's port N), and node params carry the spec."""

from __future__ import annotations

import pytest

pytest.importorskip("mininet.topo", reason="needs Mininet (Debian package `mininet`)")

from model.spec import SpecError, fat_tree, leaf_spine  # noqa: E402
from topo.topos import MININET_MAX_K, FatTreeTopo, LeafSpineTopo, SpecTopo  # noqa: E402


def _ports(topo, node: str) -> set[int]:
    out = set()
    for a, b, info in topo.links(withInfo=True):
        if a == node:
            out.add(info["port1"] if info["node1"] == node else info["port2"])
        if b == node:
            out.add(info["port2"] if info["node2"] == node else info["port1"])
    return out


@pytest.mark.parametrize("k", [4, 6, 8])
def test_fat_tree_topo_counts(k: int) -> None:
    t = FatTreeTopo(k, bw_mbps=100)
    assert len(t.switches()) == 5 * k * k // 4
    assert len(t.hosts()) == k ** 3 // 4
    assert len(t.links()) == 3 * k ** 3 // 4
    for sw in t.switches():
        assert _ports(t, sw) == set(range(1, k + 1)), sw
    roles = [t.nodeInfo(s)["role"] for s in t.switches()]
    assert roles.count("core") == k * k // 4 and roles.count("edge") == k * k // 2


def test_fat_tree_topo_links_match_spec_ports() -> None:
    t = FatTreeTopo(4, bw_mbps=50)
    spec = t.spec
    for _a, _b, info in t.links(withInfo=True):
        n1, p1, n2, p2 = info["node1"], info["port1"], info["node2"], info["port2"]
        (lk,) = [lk for lk in spec.links_between(n1, n2)]
        assert lk.port_of(n1) == p1 and lk.port_of(n2) == p2
        assert info["bw"] == 50
    info = t.nodeInfo("h1")
    assert info["ip"] == "10.0.0.2/24" and info["mac"] == "02:00:0a:00:00:02"
    assert info["spec"].gateway_ip == "10.0.0.1"
    assert len(info["peers"]) == 16
    e1 = t.nodeInfo("edge1")
    assert e1["spec"].device_id == 1 and e1["pod"] == 0
    assert e1["port_rates"] == {1: 50, 2: 50, 3: 50, 4: 50}
    assert t.nodeInfo("core4")["dpid"] == f"{20:016x}"


def test_no_rates_without_bandwidth() -> None:
    t = FatTreeTopo(4)
    assert t.nodeInfo("agg1")["port_rates"] == {}


def test_leaf_spine_topo_parallel_uplinks() -> None:
    t = LeafSpineTopo(leaves=3, spines=2, hosts_per_leaf=2, uplinks=2)
    assert len(t.switches()) == 5 and len(t.hosts()) == 6
    assert len(t.links()) == 6 + 3 * 2 * 2
    assert _ports(t, "leaf1") == set(range(1, 2 + 2 * 2 + 1))
    assert _ports(t, "spine2") == set(range(1, 3 * 2 + 1))


def test_spec_topo_from_any_spec() -> None:
    spec = leaf_spine(2, 1, 1, 1)
    t = SpecTopo(spec)
    assert sorted(t.nodes()) == sorted([*spec.switches, *spec.hosts])


def test_port_delays_give_every_host_path_its_one_way_delay() -> None:
    spec = leaf_spine(2, 2, 2)
    t = SpecTopo(spec, prop_delay_us=50.0)
    leaf = t.nodeInfo("leaf1")["port_delays"]
    assert leaf == {1: 100.0, 2: 100.0, 3: 50.0, 4: 50.0}   # host ports twice: hosts cannot delay
    assert set(t.nodeInfo("spine1")["port_delays"].values()) == {50.0}
    # one way, host -> leaf -> spine -> leaf -> host: 4 links, delayed at 3 switch egresses
    assert leaf[3] + t.nodeInfo("spine1")["port_delays"][2] + leaf[1] == 4 * 50.0
    assert "port_delays" not in SpecTopo(spec).nodeInfo("leaf1")   # no delay: nothing passed
    # the host-facing ports, which also carry the host uplink's serialisation (--host-port)
    assert t.nodeInfo("leaf1")["host_ports"] == {1, 2} and t.nodeInfo("spine1")["host_ports"] == set()


def test_mininet_refuses_a_fabric_only_the_simulator_runs() -> None:
    """model.spec builds k=18..32 for the simulator; Mininet stops at MININET_MAX_K, in one
    line that says where such a fabric runs."""
    with pytest.raises(SpecError, match=r"^a k=18 fat tree \(405 switches, 1458 hosts\) is "
                                        r"too big for Mininet: k <= 16 here \(the simulator"):
        FatTreeTopo(MININET_MAX_K + 2)
    with pytest.raises(SpecError, match="too big for Mininet"):
        SpecTopo(fat_tree(20))
