"""Every registered scheme, installed through the registry on the fabric.p4 pipeline, chooses
exactly the member its reference model (model/lb.py) predicts."""

from __future__ import annotations

import random

import pytest
from ctl_helpers import fabric_program, udp_frame

from model.entries import IPV4_LPM, K_DST, Entry
from model.lb import FlowKey, ip
from model.pipeline_target import install_on_pipeline
from model.schemes import (
    SCHEMES,
    DstRotation,
    Ecmp,
    Flowlet,
    GroupContext,
    RandomSpray,
    Scheme,
    SwitchContext,
    WhackAMole,
    scheme_from_name,
)
from p4switch import LpmMatch, Pipeline

PORT0 = 10
GID = 3
DST_ID = 42

# one instance per registered scheme: adding a scheme to SCHEMES without a case here fails
CASES: dict[str, Scheme] = {
    "ecmp": Ecmp(),
    "flowlet": Flowlet(timeout_us=50),
    "random": RandomSpray(),
    "rotate": DstRotation(),
    "wam": WhackAMole(log2_m=5),
}


def test_every_registered_scheme_has_a_case() -> None:
    assert set(CASES) == set(SCHEMES)


def _switch(scheme: Scheme, weights: tuple[float, ...]) -> tuple[Pipeline, GroupContext]:
    n = len(weights)
    g = GroupContext(GID, tuple(PORT0 + k for k in range(n)),
                     tuple(0x020000000100 + k for k in range(n)), weights,
                     SwitchContext("s", device_id=7, tier=1))
    p = Pipeline(fabric_program(), cpu_port=255, seed=5)
    install_on_pipeline(p, [Entry.make(IPV4_LPM, {K_DST: LpmMatch(ip("10.2.0.0"), 16)},
                                       "MyIngress.set_lb_group",
                                       {"group_id": GID, "dst_id": DST_ID})])
    install_on_pipeline(p, scheme.entries(g))
    return p, g


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("weights", [(1, 1, 1, 1), (1, 2, 1)], ids=["equal", "weighted"])
def test_scheme_on_pipeline_matches_reference(name: str, weights: tuple[float, ...]) -> None:
    scheme = CASES[name]
    p, g = _switch(scheme, weights)
    ref = scheme.reference(g)
    slots = scheme.member_slots(g.weights)
    rng = random.Random(1)
    flows = [FlowKey(ip(f"10.1.0.{i + 1}"), ip(f"10.2.{i}.9"), 17, 49152 + i, 4791)
             for i in range(16)]
    now = 1_000_000
    seen = []
    for i in range(240):
        f = flows[rng.randrange(len(flows))] if i % 7 else flows[0]
        now += rng.choice((1, 2, 80))  # some gaps beyond the flowlet timeout
        frame = udp_frame(_dotted(f.src), _dotted(f.dst), f.sport, f.dport,
                          "02:00:00:00:00:01", "02:00:00:00:00:02")
        outs = p.process(frame, 1, now).outputs
        assert len(outs) == 1
        member = outs[0].port - PORT0
        want = ref.predict(f, now, DST_ID)
        if want is None:  # random: only the range is known
            assert 0 <= member < len(weights)
        else:
            assert member == slots[want], (i, f)
        seen.append(member)
    assert set(seen) == set(range(len(weights)))


def _dotted(v: int) -> str:
    return ".".join(str((v >> s) & 0xFF) for s in (24, 16, 8, 0))


def test_scheme_from_name() -> None:
    assert scheme_from_name("flowlet", timeout_us=200) == Flowlet(timeout_us=200)
    assert scheme_from_name("WAM") == WhackAMole()
    with pytest.raises(ValueError, match="ecmp, flowlet, random, rotate, wam"):
        scheme_from_name("spray")
    with pytest.raises(ValueError, match="flowlet"):
        scheme_from_name("flowlet", nonsense=1)
    with pytest.raises(ValueError, match="odd"):
        WhackAMole(b=4)
    with pytest.raises(ValueError, match="log2_m"):
        WhackAMole(log2_m=17)


def test_weighted_ecmp_replicates_ports_and_wam_splits_balls() -> None:
    assert Ecmp().member_slots((1, 3)) == [0, 1, 1, 1]
    assert Ecmp().member_slots((2, 2)) == [0, 1]
    assert WhackAMole().member_slots((1, 3)) == [0, 1]
    assert WhackAMole(log2_m=4).balls((1, 3)) == [4, 12]
