"""Path policies on a k=4 fat-tree running fabric.p4: pinned split against the pipeline itself,
the CE echo end to end in the simulator, and how many ECMP members each policy's flow uses
(the switches' lb_member counters)."""

from __future__ import annotations

import functools

import pytest

from model.paths import PathModel, pinned_flow_ports
from model.spec import FabricSpec, fat_tree
from sim.frames import l2l3_header
from sim.host import HostConfig
from sim.network import SimConfig, SimNetwork
from sim.results import member_counters
from traffic.packet import HDR, ROCEV2_PORT, VERSION
from traffic.policies import PolicySpec
from traffic.schedules.trace import from_rows


@functools.cache
def k4() -> FabricSpec:
    return fat_tree(4, bw_mbps=10_000)


@functools.cache
def model() -> PathModel:
    return PathModel(k4())


@functools.cache
def ecmp_net() -> SimNetwork:
    return SimNetwork(k4(), "ecmp", SimConfig())


def pipeline_path(net: SimNetwork, src: str, dst: str, sport: int) -> list[tuple[str, int]]:
    """Walk a data frame through each switch's fabric.p4 pipeline (switch, egress port)."""
    spec = net.spec
    hs, hd = spec.hosts[src], spec.hosts[dst]
    frame = l2l3_header(hs.mac, hs.gateway_mac or "00:00:00:00:00:00", hs.ip, hd.ip, sport,
                        ROCEV2_PORT, HDR.size + 10) + \
        HDR.pack(VERSION, 0, 1, 0, 1, 0, 0, 7, 0, 1, 10, 0) + bytes(10)
    sw, port = hs.switch, hs.switch_port
    out = []
    for _ in range(8):
        res = net.switches[sw].pipe.process(frame, port, 0)
        assert len(res.outputs) == 1, (sw, res.drops)
        o = res.outputs[0]
        out.append((sw, o.port))
        peer, peer_port = spec.ports(sw)[o.port]
        if peer in spec.hosts:
            assert peer == dst
            return out
        sw, port, frame = peer, peer_port, o.data
    raise AssertionError("no path")


PAIRS = [("h1", "h16"), ("h2", "h9"), ("h5", "h12"), ("h1", "h3"), ("h7", "h14")]


@pytest.mark.parametrize("src, dst", PAIRS)
def test_pinned_split_uses_distinct_uplinks_at_every_tier(src: str, dst: str) -> None:
    spec, m = k4(), model()
    a, b = spec.hosts[src].ip, spec.hosts[dst].ip
    ports = pinned_flow_ports(m, 1, 0, 7, a, b, 4)
    assert len(set(ports)) == 4
    paths = [m.path(a, b, p) for p in ports]
    # the pipeline takes exactly the paths the model predicted (sample: every pinned port)
    net = ecmp_net()
    assert [pipeline_path(net, src, dst, p) for p in ports] == paths
    edge_up = {p[0] for p in paths}
    assert len(edge_up) == 2                               # both edge uplinks ...
    assert all(sum(p[0] == u for p in paths) == 2 for u in edge_up)  # ... twice each
    if len(paths[0]) == 5:                                 # inter-pod: edge, agg, core, ...
        assert len({p[1] for p in paths}) == 4             # 4 distinct agg->core uplinks
        assert len({p[2][0] for p in paths}) == 4          # = all four cores


def test_unpinned_random_ports_collide_qp_ports_do_not() -> None:
    """Hash luck: some random 4-port sets share an agg->core uplink (why Ethereal assigns
    paths; pinned sets never do, above). The agent's QP ports do not collide on this fabric:
    entropy_port is a CRC of consecutive QP numbers and the ECMP hash a CRC too, so the
    member choice is affine in the QP bits (traffic/policies.py docstring)."""
    spec, m = k4(), model()
    a, b = spec.hosts["h1"].ip, spec.hosts["h16"].ip
    rnd = PolicySpec("split", 4)
    qp = PolicySpec("split", 4, entropy_set="qp")
    collided = {"random": 0, "qp": 0}
    for flow in range(20):
        for key, pol in (("random", rnd), ("qp", qp)):
            paths = [m.path(a, b, p) for p in pol.ports(1, 0, flow)]
            collided[key] += len({p[1] for p in paths}) < 4
    assert collided["random"] > 5 and collided["qp"] == 0


def one_flow(src: str, dst: str, nbytes: int):  # noqa: ANN201
    s = from_rows([{"src": 0, "dst": 1, "bytes": nbytes}], ranks=2)
    s.placement = [src, dst]
    return s


def run_policy(policy: PolicySpec, nbytes: int = 140_000, ecn_threshold: int | None = 20,
               src: str = "h1", dst: str = "h16") -> tuple[SimNetwork, object]:
    net = SimNetwork(k4(), "ecmp", SimConfig(ecn_threshold=ecn_threshold,
                                             host=HostConfig(path_policy=policy)))
    res = net.run(one_flow(src, dst, nbytes), until_us=2e6)
    assert res.ok, [r.error for r in res.ranks]
    return net, res


def test_ce_marked_packets_come_back_echoed_end_to_end() -> None:
    """Threshold 0: fabric.p4 marks every ECT packet CE; the receiver echoes each one and the
    sender's policy sees every acknowledged packet marked. No marking: no echo."""
    _, res = run_policy(PolicySpec("reps", 8), ecn_threshold=0)
    f = res.ranks[0].flows[0]
    assert f.acked_packets == f.packets and f.ce_acked == f.packets
    _, res = run_policy(PolicySpec("reps", 8), ecn_threshold=None)
    assert res.ranks[0].flows[0].ce_acked == 0


FORWARD = ("edge1", "agg1", "agg2")
"""h1 -> h16: the switches whose LB groups the data packets cross (the ACKs from h16 cross the
groups of pod 4 and only single next hops in pod 1)."""


@pytest.mark.parametrize("policy, members", [
    (PolicySpec("single"), 2),                       # one edge uplink, one agg->core uplink
    (PolicySpec("split", 4, pin=True), 6),           # both edge uplinks, all 4 core uplinks
    (PolicySpec("split", 4), None),
    (PolicySpec("entropy-spray", 8), None),
    (PolicySpec("entropy-spray", 8, mode="random"), None),
    (PolicySpec("reps", 16), None),
    (PolicySpec("ecn-adaptive", 8), None),
])
def test_each_policy_moves_the_flow_over_the_predicted_members(policy: PolicySpec,
                                                               members: int | None) -> None:
    """The lb_member counters of the forward groups equal what the path model predicts from
    the packets the policy sent on each port (retransmissions included): same members, same
    counts. ``members``: the expected number where the policy fixes it."""
    net, res = run_policy(policy)
    f = res.ranks[0].flows[0]
    spec, m = k4(), model()
    a, b = spec.hosts["h1"].ip, spec.hosts["h16"].ip
    want: dict[tuple[str, int], int] = {}
    for sport, n in zip(f.sports, f.sport_packets, strict=True):
        if n == 0:                                    # an entropy the policy never drew
            continue
        for hop in m.path(a, b, sport)[:2]:           # the edge and agg choices
            want[hop] = want.get(hop, 0) + n
    c = member_counters(net)
    c = c[c["switch"].isin(FORWARD) & (c["packets"] > 0)]
    got = {(sw, int(p)): int(n) for sw, p, n in zip(c["switch"], c["port"], c["packets"],
                                                    strict=True)}
    assert got == want
    assert sum(f.sport_packets) == f.packets_sent
    if members is not None:
        assert len(got) == members
    if policy.name != "single":
        assert len(got) >= 3                          # the flow really spread


def test_a_spraying_host_survives_a_failed_link_the_fabric_never_routes_around() -> None:
    """The agg->core link of a single-path flow's path dies and is never rerouted: that flow
    never completes; a pinned split (one subflow per core, so one on the dead link) does —
    retransmissions rotate to the next entropy and ACKs carry the data's entropy (so they
    spread too)."""
    from sim.network import LinkFailure

    spec, m = k4(), model()
    a, b = spec.hosts["h1"].ip, spec.hosts["h16"].ip
    sched = one_flow("h1", "h16", 70_000)
    flow = next(iter(sched.flow_index()))
    agg, port = m.path(a, b, PolicySpec().ports(sched.job, 0, flow)[0])[1]
    cut = [LinkFailure(agg, spec.ports(agg)[port][0], 0.0, None)]
    pinned = pinned_flow_ports(m, sched.job, 0, flow, a, b, 4)
    assert sum((agg, port) in m.path(a, b, p) for p in pinned) == 1
    for policy, completes in ((PolicySpec("single"), False),
                              (PolicySpec("split", 4, pin=True), True)):
        net = SimNetwork(spec, "ecmp", SimConfig(host=HostConfig(path_policy=policy)))
        res = net.run(one_flow("h1", "h16", 70_000), until_us=20e3, failures=cut)
        assert res.ok == completes
        assert res.ranks[0].flows[0].retransmissions > 0
