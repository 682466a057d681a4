"""Whole simulations: a 2-switch fabric and a k=4 fat-tree running fabric.p4.

Every flow completes, bytes are conserved end to end, and the per-member counters fabric.p4
kept in each switch equal the reference models replayed over the packets each switch saw.
Small messages and 10 Gb/s links keep each run well under a second of wall time."""

from __future__ import annotations

import functools

import pytest

from model.spec import FabricSpec, HostSpec, LinkSpec, SwitchSpec, fat_tree, host_mac
from sim.host import SIM_TRANSPORT, HostConfig
from sim.network import LinkFailure, SimConfig, SimNetwork
from sim.refcheck import compare_counters
from sim.results import SimResult
from traffic.schedules import alltoall, bsp_training, moe_alltoall, ring_allreduce

DETERMINISTIC = ("ecmp", "flowlet", "rotate", "wam")


def two_switches(parallel: int = 2, hosts: int = 2, bw_mbps: float = 10_000) -> FabricSpec:
    """s1 and s2 joined by ``parallel`` links (one LB group each way), ``hosts`` per switch."""
    spec = FabricSpec(name="two-switch")
    sws = [spec.add_switch(SwitchSpec(name=f"s{i + 1}", role="leaf", device_id=i + 1, index=i,
                                      ip=f"10.1.{i}.1", subnet=f"10.1.{i}.0/24"))
           for i in range(2)]
    n = 0
    for i, sw in enumerate(sws):
        for j in range(hosts):
            n += 1
            ip = f"10.1.{i}.{j + 2}"
            h = spec.add_host(HostSpec(name=f"h{n}", ip=ip, prefixlen=24, mac=host_mac(ip),
                                       switch=sw.name, switch_port=j + 1, gateway_ip=sw.ip,
                                       gateway_mac=sw.port_mac(j + 1), index=n - 1))
            spec.add_link(LinkSpec(h.name, 0, sw.name, j + 1, bw_mbps))
    for u in range(parallel):
        spec.add_link(LinkSpec("s1", hosts + 1 + u, "s2", hosts + 1 + u, bw_mbps))
    spec.validate()
    return spec


@functools.cache
def k4() -> FabricSpec:
    return fat_tree(4, bw_mbps=10_000)


def run(spec: FabricSpec, scheme: str, schedule, **cfg) -> tuple[SimNetwork, SimResult]:  # noqa: ANN001
    net = SimNetwork(spec, scheme, SimConfig(record_ingress=True, **cfg))
    return net, net.run(schedule, until_us=2e6)


def assert_complete_and_conserved(res: SimResult, schedule) -> None:  # noqa: ANN001
    assert res.ok, [r.error for r in res.ranks if not r.completed]
    sent = {f.flow: f.bytes for r in res.ranks for f in r.flows if not f.local}
    got = {x.flow: x.bytes for r in res.ranks for x in r.received}
    want = {s.flow: s.bytes for _, _, s in schedule.sends()}
    assert sent == got == {f: b for f, b in want.items() if f in sent}
    assert all(f.finish is not None for r in res.ranks for f in r.flows)
    assert res.cct_s is not None and res.cct_s > 0


@pytest.mark.parametrize("scheme", DETERMINISTIC)
def test_two_switch_counters_equal_reference(scheme: str) -> None:
    spec = two_switches()
    sched = alltoall(4, 4 * 20_000)
    net, res = run(spec, scheme, sched)
    assert_complete_and_conserved(res, sched)
    cmp = compare_counters(net)
    assert cmp["packets"].sum() > 0
    assert (cmp["packets"] == cmp["expected"]).all(), cmp[cmp["packets"] != cmp["expected"]]
    # every cross-switch packet (data and ACKs) went through exactly one LB group
    cross = sum(1 for sw, _t, port, _f in net.ingress_log if port <= 2)
    assert cmp["packets"].sum() == sum(
        1 for sw, _t, port, f in net.ingress_log if port <= 2 and _dst_remote(sw, f))
    assert cross >= cmp["packets"].sum()


def _dst_remote(sw: str, frame: bytes) -> bool:
    """A packet from a host of ``sw`` to a host of the other switch."""
    return frame[32] != (0 if sw == "s1" else 1)  # third byte of 10.1.<switch>.x


@pytest.mark.parametrize("scheme", DETERMINISTIC)
def test_k4_alltoall_counters_equal_reference(scheme: str) -> None:
    sched = alltoall(16, 16 * 6_000)
    net, res = run(k4(), scheme, sched)
    assert_complete_and_conserved(res, sched)
    cmp = compare_counters(net)
    assert cmp["packets"].sum() > 1000
    assert (cmp["packets"] == cmp["expected"]).all(), cmp[cmp["packets"] != cmp["expected"]]
    assert res.pipeline_drops == 0


def test_spraying_uses_every_member_hashing_may_not() -> None:
    """Whack-a-Mole splits each group's packets within log2(m) of evenly; ECMP need not."""
    sched = ring_allreduce(16, 16 * 20_000)
    counts = {}
    for scheme in ("ecmp", "wam"):
        net, res = run(k4(), scheme, sched)
        assert res.ok
        c = compare_counters(net)
        spread = c.groupby(["switch", "group"])["packets"].agg(["min", "max", "sum"])
        counts[scheme] = spread[spread["sum"] > 64]
    wam = counts["wam"]
    assert ((wam["max"] - wam["min"]) <= 8 + 2).all()  # log2 m = 8, plus ACK interleaving
    assert (counts["ecmp"]["max"] - counts["ecmp"]["min"]).max() > 10


@pytest.mark.parametrize("scheme, sched, cfg", [
    ("wam", moe_alltoall(16, 16 * 4_000, seed=3), {}),
    # short queues and big initial windows: tail drops, retransmissions, queues mostly busy
    ("ecmp", alltoall(16, 16 * 12_000), {"queue_depth": 8,
                                         "host": HostConfig(transport=SIM_TRANSPORT.with_cc(
                                             "dctcp", {"init_cwnd": 64}))}),
])
def test_fast_path_changes_nothing(scheme: str, sched, cfg: dict) -> None:  # noqa: ANN001
    """process_fast when the packet's possible egress ports are idle vs ingress + queue +
    egress always: the same run, packet for packet."""
    out = []
    for fast in (True, False):
        net, res = run(k4(), scheme, sched, fast_path=fast, **cfg)
        cmp = compare_counters(net)
        out.append((res.cct_s, res.packet_hops, res.tail_drops,
                    [(f.finish, f.retransmissions) for r in res.ranks for f in r.flows],
                    cmp["packets"].tolist(), [f for _s, _t, _p, f in net.ingress_log],
                    res.fast_hops))
    assert out[0][:6] == out[1][:6]
    assert out[0][6] > 0 and out[1][6] == 0
    if cfg:
        assert out[0][2] > 0  # the case with drops did drop


def test_bsp_with_stragglers_finishes_later_than_without() -> None:
    def job(stragglers):  # noqa: ANN001, ANN202
        return bsp_training(lambda: ring_allreduce(8, 8 * 4_000), iterations=2, compute_us=50,
                            stragglers=stragglers, straggler_factor=4.0)
    cct = {}
    for name, st in (("none", None), ("one", [3])):
        sched = job(st)
        _net, res = run(two_switches(hosts=4), "ecmp", sched)
        assert_complete_and_conserved(res, sched)
        cct[name] = res.cct_s
        assert len(res.collectives) == 2
    assert cct["one"] > cct["none"] + 2 * 150e-6  # 2 iterations x 150 µs more compute


def test_link_failure_is_routed_around_and_every_flow_still_completes() -> None:
    sched = alltoall(16, 16 * 40_000)
    net = SimNetwork(k4(), "ecmp", SimConfig())
    res = net.run(sched, until_us=2e6,
                  failures=[LinkFailure("agg1", "core1", at_us=20.0, reroute_after_us=100.0)])
    assert_complete_and_conserved(res, sched)
    assert res.link_losses > 0
    assert [e for _t, e in net.events][0] == "link agg1-core1 down"
    assert "rerouted around agg1-core1" in net.events[1][1]
    agg1_core1 = [d for pair in net.links for d in pair if {d.src, d.dst} == {"agg1", "core1"}]
    sent_before = sum(d.tx_packets for d in agg1_core1)
    assert all(not d.up for d in agg1_core1) and sent_before > 0


@pytest.mark.parametrize("pipeline", ["python", "native"])
def test_k4_results_equal_the_golden_fingerprints(pipeline: str) -> None:
    """Same seed, same results as the simulator had before its speed work (tests/sim/golden.py
    says what is hashed and how to regenerate golden_k4.json after an intended change) —
    with fabric.p4 run by the pipeline's Python or compiled to C (p4switch.native)."""
    import json

    # tests/sim/golden.py, importable as a sibling like tests/frontend/fe_helpers.py: the
    # package path tests.sim broke in a fresh checkout's full run (ModuleNotFoundError)
    from golden import GOLDEN, fingerprint

    if pipeline == "native":  # the switches do run the C code (no silent fallback)
        from p4switch import NativePipeline

        net = SimNetwork(k4(), "random", SimConfig(pipeline="native"))
        assert all(isinstance(s.pipe, NativePipeline) for s in net.switches.values())
    want = json.loads(GOLDEN.read_text())
    got = fingerprint(pipeline)
    assert set(got) == set(want)
    for name in got:
        assert got[name] == want[name], (
            f"{name}: {got[name]} != golden {want[name]} (if the change is meant to alter "
            "results: .venv/bin/python tests/sim/golden.py --write)")


def test_progress_reports_change_nothing_and_end_complete() -> None:
    """``run(progress=)`` slices the event loop; the results are those of one run."""
    sched = alltoall(16, 16 * 4_000)
    _, plain = run(k4(), "random", sched)
    net = SimNetwork(k4(), "random", SimConfig())
    seen: list = []
    res = net.run(sched, until_us=2e6, progress=seen.append, progress_every=500)
    assert (res.cct_s, res.packet_hops, res.events) == (plain.cct_s, plain.packet_hops,
                                                         plain.events)
    assert len(seen) > 3
    assert [p.events for p in seen] == sorted(p.events for p in seen)
    assert all(p.flows_total == 240 for p in seen)
    assert seen[-1].flows_done == 240 and seen[-1].packet_hops == res.packet_hops
    # the reports follow the run: hops, flows done and virtual time never go back
    for a, b in zip(seen, seen[1:], strict=False):
        assert b.packet_hops >= a.packet_hops and b.flows_done >= a.flows_done
        assert b.now_us >= a.now_us
    assert seen[0].flows_done < 240 and seen[0].packet_hops < res.packet_hops


@pytest.mark.parametrize("scheme", ["random", "rotate"])
def test_pipelined_ring_completes_and_delivers_every_byte(scheme: str) -> None:
    sched = ring_allreduce(16, 16 * 40_000, slots=4)
    _net, res = run(k4(), scheme, sched)
    assert_complete_and_conserved(res, sched)
    flows = sorted((f for r in res.ranks for f in r.flows if not f.local),
                   key=lambda f: (f.src, f.step))
    # some rank posted a step's send to its neighbour before its previous one was acknowledged:
    # the two messages shared one connection
    overlapped = [b for a, b in zip(flows, flows[1:], strict=False)
                  if a.src == b.src and b.posted < a.finish]
    assert overlapped
