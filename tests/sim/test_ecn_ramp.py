"""ECN marking ramp (K_min, K_max) in the simulator: fabric.p4 on a simulated switch, its queue
filled by bursts, marks each departing packet with the ramp's probability for the depth the
queue reports; the step stays the default and draws no random number."""

from __future__ import annotations

import math

import pytest

from model.pipeline_target import install_on_pipeline
from model.routing import EcnRamp, ecn_entry, route_nhop
from model.spec import fat_tree
from p4switch import Pipeline
from sim.events import EventLoop
from sim.frames import ECN_ECT0, l2l3_header
from sim.link import Link
from sim.network import DROP_PORT, SimConfig, SimNetwork, fabric_program
from sim.switch import SimSwitch, choose_pipeline

KMIN, KMAX = 4, 12
BURST = 20       # packets arriving together: the first leaves at once (depth 0), the next
                 # see deq_qdepth 18, 17, ..., 0 (the packets still behind them)
BURSTS = 300


def _ramp(depth: int) -> float:
    return min(max((depth - KMIN) / (KMAX - KMIN), 0.0), 1.0)


@pytest.mark.parametrize("kind", ["python", "native"])
def test_marking_fraction_follows_the_ramp_by_queue_depth(kind: str) -> None:
    """On the pipeline's Python and on its native code (which falls back to Python where the
    machine cannot compile it)."""
    pipe = Pipeline(fabric_program(), drop_port=DROP_PORT, cpu_port=255, seed=7)
    install_on_pipeline(pipe, [route_nhop("10.2.0.0/16", 2, 0x0A0000000002),
                               ecn_entry(2, (KMIN, KMAX))])
    loop = EventLoop()
    sw = SimSwitch("s1", choose_pipeline(pipe, kind), loop, uptime_us=0.0)
    got: list[bytes] = []
    sw.connect(2, Link("s1", 2, "sink", 0, rate_bps=1e9, prop_us=1.0),
               lambda _t, arg: got.append(arg[1]), 0)
    frame = l2l3_header("00:00:00:00:00:01", "00:00:00:00:00:02", "10.1.0.1", "10.2.0.1",
                        4791, 4791, 1000, tos=ECN_ECT0) + bytes(1000)
    gap_us = BURST * len(frame) * 8 / 1e3 + 10     # each burst drains before the next
    for b in range(BURSTS):
        for _ in range(BURST):
            loop.schedule(b * gap_us, sw.receive, (1, frame))
    loop.run()
    assert len(got) == BURST * BURSTS
    marked = [0] * BURST
    for i, out in enumerate(got):
        j = i % BURST
        depth = BURST - 1 - j if j else 0      # the queue behind this departure
        marked[depth] += out[15] & 3 == 3      # the IPv4 tos byte's ECN bits
    assert marked[BURST - 1] == 0      # no departure saw 19
    for depth, m in enumerate(marked[:BURST - 1]):
        n = 2 * BURSTS if depth == 0 else BURSTS
        p = _ramp(depth)
        if p in (0.0, 1.0):
            assert m == p * n, (depth, m)
        else:
            assert abs(m / n - p) <= 4 * math.sqrt(p * (1 - p) / n), (depth, m)


def test_a_ramp_reaches_the_switches_and_the_step_stays_the_default() -> None:
    spec = fat_tree(4)
    step = SimNetwork(spec, "ecmp", SimConfig())
    ramp = SimNetwork(spec, "ecmp", SimConfig(ecn_threshold=EcnRamp(5, 20)))
    steps = [e.action for se in step.entries.switches.values() for e in se.entries
             if e.table == "MyEgress.ecn_config"]
    assert steps and set(steps) == {"MyEgress.set_ecn_threshold"}
    ramps = [e.params_dict for se in ramp.entries.switches.values() for e in se.entries
             if e.table == "MyEgress.ecn_config"]
    assert ramps and all(p == {"kmin": 5, "kmax": 20} for p in ramps)
