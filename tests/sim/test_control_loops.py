"""The controller's control loops in the simulator (sim.control): the same ControlLoops code as
the emulated fabric's controller, ticked in virtual time.

A k=4 fat-tree at 10 Gb/s whose agg1-core1 link runs at a quarter of that: its queue at agg1
fills under an AllToAll, and Whack-a-Mole's loop moves balls off it; the failure loop finds a
cut link from its missing probes and routes around it; without loops nothing is scheduled."""

from __future__ import annotations

import dataclasses

import pytest

from model.spec import FabricSpec, fat_tree
from sim.network import LinkFailure, SimConfig, SimNetwork
from sim.results import SimResult
from traffic.schedules import alltoall

PERIOD_US = 20.0


def degraded() -> FabricSpec:
    spec = fat_tree(4, bw_mbps=10_000)
    for i, lk in enumerate(spec.links):
        if {lk.a, lk.b} == {"agg1", "core1"}:
            spec.links[i] = dataclasses.replace(lk, bw_mbps=2_500)
    return spec


def run(spec: FabricSpec, scheme: str, loops: list[str] | None,
        failures: tuple[LinkFailure, ...] = ()) -> tuple[SimNetwork, SimResult]:
    net = SimNetwork(spec, scheme, SimConfig(seed=1))
    if loops is not None:
        net.start_loops(loops, PERIOD_US)
    res = net.run(alltoall(16, 16 * 8_000), until_us=1e6, failures=list(failures))
    assert res.ok
    return net, res


def test_wam_moves_balls_off_the_slow_member_and_back() -> None:
    net, _ = run(degraded(), "wam", ["wam"])
    changes = [(t, sw, what) for t, loop, sw, what in net.control_events
               if loop == "wam" and sw is not None]
    assert changes, "no weight change on a link at a quarter of the rate"
    assert all(sw == "agg1" for _, sw, _ in changes)      # only the slow member's group
    assert all(t % PERIOD_US == 0 for t, _, _ in changes)  # at the loop's ticks
    first = changes[0][2]
    assert first.startswith("group ") and "weights [0.75, 1.0]" in first
    assert net.loops.weight_changes == len(changes)
    # the weights reached the pipeline: agg1's ranges follow the controller's weights
    (key,) = [k for k in net.weights if k[0] == "agg1"]
    g = net.entries["agg1"].groups[key[1]]
    assert set(net.weights[key]) == set(g.ports)


def test_the_loop_changes_nothing_when_no_member_is_congested() -> None:
    net, _ = run(fat_tree(4, bw_mbps=10_000), "wam", ["wam"])
    assert net.loops.periods > 0 and net.loops.weight_changes == 0
    assert not net.control_events


def test_loops_are_deterministic() -> None:
    (a, ra), (b, rb) = (run(degraded(), "wam", ["wam", "failure"]) for _ in range(2))
    assert a.control_events == b.control_events and a.control_events
    assert (ra.cct_s, ra.packet_hops, ra.events) == (rb.cct_s, rb.packet_hops, rb.events)


def test_without_loops_nothing_is_scheduled() -> None:
    """No loop (or only reconcile, which needs no ticks): the run is the one of a network
    whose loops were never asked for, event for event."""
    _, plain = run(degraded(), "wam", None)
    off, res = run(degraded(), "wam", ["reconcile"])
    assert off.loops is None and not off.control_events
    assert (res.cct_s, res.events, res.packet_hops) == (
        plain.cct_s, plain.events, plain.packet_hops)


def test_failure_loop_finds_the_cut_link_and_reroutes() -> None:
    cut = LinkFailure("agg1", "core1", at_us=30.0, reroute_after_us=None)
    net, _ = run(fat_tree(4, bw_mbps=10_000), "random", ["failure"], (cut,))
    down = [(t, what) for t, loop, _, what in net.control_events
            if loop == "failure" and " down " in what]
    assert len(down) == 1 and "agg1" in down[0][1] and "core1" in down[0][1]
    # probes every 20 µs, 2 rounds missed: found at the second tick after the first
    # round the cut link missed (round 2 at 40 µs -> checked at 60 and 80 µs)
    assert down[0][0] == 80.0
    reroute = [t for t, loop, _, what in net.control_events
               if loop == "failure" and what.startswith("reroute")]
    assert reroute == [80.0]
    assert net.detected_failed and all(
        {net.spec.links[i].a, net.spec.links[i].b} == {"agg1", "core1"}
        for i in net.detected_failed)


def test_a_split_run_refuses_loops() -> None:
    net = SimNetwork(fat_tree(4, bw_mbps=10_000), "wam", SimConfig(workers=2))
    net.start_loops(["wam"], PERIOD_US)
    with pytest.raises(ValueError, match="workers must be 1"):
        net.run(alltoall(16, 16 * 1_000))
