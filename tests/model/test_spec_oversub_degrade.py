"""Oversubscribed fat trees and leaf-spines (link rates, host counts), degraded links (a fraction
of their rate; the simulator carries that fraction), and their experiment and CLI spellings."""

from __future__ import annotations

import pytest

from experiments.config import ConfigError, _topology
from model.spec import SpecError, degrade_links, fat_tree, leaf_spine, random_switch_links
from sim.network import SimConfig, SimNetwork
from traffic.schedules.cm import parse_cm, to_schedule


@pytest.mark.parametrize("ratio", [2, 4, 8])
def test_an_oversubscribed_fat_tree_slows_its_edge_uplinks_only(ratio: int) -> None:
    s = fat_tree(4, 100e3, oversub=ratio)
    assert len(s.hosts) == 16 and s.name == f"fattree-k4-os{ratio}"
    for lk in s.links:
        ends = {s.switches[n].role if n in s.switches else "host" for n in (lk.a, lk.b)}
        want = 100e3 / ratio if ends == {"edge", "agg"} else 100e3
        assert lk.bw_mbps == want, (lk, ends)


@pytest.mark.parametrize("ratio", [2, 4, 8])
def test_an_oversubscribed_leaf_spine_slows_its_uplinks(ratio: int) -> None:
    s = leaf_spine(4, 2, 8, 1, 100e3, oversub=ratio)
    assert len(s.hosts) == 32
    up = [lk.bw_mbps for lk in s.switch_links()]
    assert up == [100e3 / ratio] * 8
    hosts = [lk.bw_mbps for lk in s.links if lk.a in s.hosts or lk.b in s.hosts]
    assert hosts == [100e3] * 32


def test_oversubscription_needs_a_rate_and_a_sane_ratio() -> None:
    with pytest.raises(SpecError, match="needs a link rate"):
        fat_tree(4, None, oversub=2)
    with pytest.raises(SpecError, match="1..64"):
        fat_tree(4, 100e3, oversub=0.5)


def test_degraded_links_keep_their_fraction_and_the_draw_is_seeded() -> None:
    s = fat_tree(4, 100e3)
    pairs = random_switch_links(s, 3, seed=7)
    assert pairs == random_switch_links(s, 3, seed=7) and len(set(pairs)) == 3
    d = degrade_links(s, pairs, 0.25)
    for a, b in pairs:
        assert [lk.bw_mbps for lk in d.links_between(a, b)] == [25e3]
    assert sum(lk.bw_mbps == 25e3 for lk in d.links) == 3    # type: ignore[misc]  # all have rates
    assert all(lk.bw_mbps == 100e3 for lk in s.links)          # the original is untouched
    with pytest.raises(SpecError, match="no link"):
        degrade_links(s, [("h1", "core1")], 0.5)
    with pytest.raises(SpecError, match="fraction"):
        degrade_links(s, pairs, 1.5)


def test_a_degraded_link_carries_its_fraction_in_the_simulator() -> None:
    # leaf1 -> spine1 is the only way from h1 to h3: at a quarter of its rate the flow takes ~4x
    base = leaf_spine(2, 1, 2, 1, 100e3)
    sched = to_schedule(parse_cm("Nodes 4\n0->2 id 1 start 0 size 2000000\n"))
    fct = []
    for spec in (base, degrade_links(base, [("leaf1", "spine1")], 0.25)):
        res = SimNetwork(spec, "ecmp", SimConfig()).run(sched)
        assert res.ok
        fct.append(res.summary()["fct_tail_us"])
    assert 3.5 < fct[1] / fct[0] < 4.5, fct


def test_the_experiment_topology_takes_oversub_and_degrade() -> None:
    t = _topology({"kind": "fattree", "k": 4, "bw_mbps": 1000, "oversub": 2,
                   "degrade": {"links": 2, "fraction": 0.5, "seed": 3}})
    s = t.spec()
    assert s.params["oversub"] == 2 and len(s.params["degraded"]) == 2  # type: ignore[arg-type]  # a dict
    with pytest.raises(ConfigError, match="topology.degrade.fraction"):
        _topology({"kind": "fattree", "degrade": {"links": 1, "fraction": -1}})
    with pytest.raises(ConfigError, match="topology: a degraded link"):
        _topology({"kind": "fattree", "degrade": {"links": 1, "fraction": 2}})
