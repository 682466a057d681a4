"""The unloaded bound (experiments.critical_path): worked by hand on small schedules, and
checked against the simulator — no run beats it, and an uncontended one comes close to it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from experiments import metrics as m
from experiments import runner
from experiments.config import from_dict
from experiments.critical_path import Framing, critical_path
from model.spec import fat_tree
from traffic.schedules import Schedule
from traffic.schedules.format import Collective, Recv, Send, Step
from traffic.schedules.ring import ring_allreduce

RATE = 10e9                       # 10 Gb/s links
PROP = 1e-6                       # 1 µs per link
FR = Framing(1400, m.FRAME_HEADER_BYTES, m.ACK_FRAME_BYTES)
PKT = (1400 + m.FRAME_HEADER_BYTES) * 8 / RATE      # a full frame's serialisation, s
ACK = m.ACK_FRAME_BYTES * 8 / RATE


def _tail(hops: int) -> float:
    """A full last packet from the sender's NIC to the receiver: H props, H - 1 hops of
    store-and-forward after the NIC."""
    return hops * PROP + (hops - 1) * PKT


def _ack(hops: int) -> float:
    return hops * (PROP + ACK)


def _one_send(dst: int, nbytes: int, wait_sends: bool) -> Schedule:
    return Schedule("one", 2, [[Step(sends=[Send(dst, nbytes, 0)], wait_sends=wait_sends)],
                               [Step(recvs=[Recv(0, 0)])]],
                    [Collective(0, "one", nbytes)]).validate()


@pytest.mark.parametrize(("peer", "hops"), [("h2", 2), ("h3", 4), ("h5", 6)])
def test_one_flow_pays_wire_time_tail_and_ack_trip(peer: str, hops: int) -> None:
    ft = fat_tree(4, bw_mbps=RATE / 1e6)
    wire = 10 * (1400 + m.FRAME_HEADER_BYTES) * 8 / RATE      # 10 full packets
    got = critical_path(ft, _one_send(1, 14000, wait_sends=True), ["h1", peer], FR, PROP)
    assert got[0] == pytest.approx(wire + _tail(hops) + _ack(hops))
    # without waiting for its ACK the step ends when the receiver has the last packet
    got = critical_path(ft, _one_send(1, 14000, wait_sends=False), ["h1", peer], FR, PROP)
    assert got[0] == pytest.approx(wire + _tail(hops))


def test_a_short_last_packet_is_serialised_at_its_own_size() -> None:
    ft = fat_tree(4, bw_mbps=RATE / 1e6)
    got = critical_path(ft, _one_send(1, 1400 + 100, wait_sends=False), ["h1", "h5"], FR,
                        PROP)[0]
    wire = (1500 + 2 * m.FRAME_HEADER_BYTES) * 8 / RATE
    assert got == pytest.approx(wire + 6 * PROP + 5 * (100 + m.FRAME_HEADER_BYTES) * 8 / RATE)


@pytest.mark.parametrize(("slots", "per_step"), [(0, "lockstep"), (8, "pipelined")])
def test_ring_one_rank_per_pod(slots: int, per_step: str) -> None:
    """Four ranks, one per pod: every ring hop is 6 links. Lock-step: each of the 6 steps
    waits for its own send's ACK; pipelined: only for the chunk it receives."""
    ft = fat_tree(4, bw_mbps=RATE / 1e6)
    s = ring_allreduce(4, 4 * 14000, slots=slots)
    wire = 10 * (1400 + m.FRAME_HEADER_BYTES) * 8 / RATE
    step = wire + _tail(6) + (_ack(6) if per_step == "lockstep" else 0.0)
    got = critical_path(ft, s, ["h1", "h5", "h9", "h13"], FR, PROP)[0]
    assert got == pytest.approx(6 * step)


def test_ranks_on_one_host_cost_nothing_and_a_receiving_nic_is_shared() -> None:
    ft = fat_tree(4, bw_mbps=RATE / 1e6)
    # ranks 0 and 1 on h1, rank 2 on h2: the h1-local send is free; 0 and 1 then both send
    # 10 packets to rank 2, whose one link must take 20 packets' wire time
    s = Schedule("incast", 3, [
        [Step(sends=[Send(1, 14000, 0)], wait_sends=False), Step(sends=[Send(2, 14000, 1)],
                                                                 wait_sends=False)],
        [Step(recvs=[Recv(0, 0)]), Step(sends=[Send(2, 14000, 2)], wait_sends=False)],
        [Step(recvs=[Recv(0, 1), Recv(1, 2)])]], [Collective(0, "incast", 0)]).validate()
    got = critical_path(ft, s, ["h1", "h1", "h2"], FR, PROP)[0]
    wire = 10 * (1400 + m.FRAME_HEADER_BYTES) * 8 / RATE
    assert got == pytest.approx(2 * wire)       # the receiver's NIC, > wire + the 2-hop tail
    assert 2 * wire > wire + _tail(2)


def test_each_collective_is_bounded_from_its_own_start() -> None:
    """A second collective after a long first one: its bound is its own span, not the job's."""
    ft = fat_tree(4, bw_mbps=RATE / 1e6)
    big, small = 140000, 14000
    s = Schedule("two", 2, [
        [Step(sends=[Send(1, big, 0)], collective=0), Step(sends=[Send(1, small, 1)],
                                                           collective=1)],
        [Step(recvs=[Recv(0, 0)], collective=0), Step(recvs=[Recv(0, 1)], collective=1)]],
        [Collective(0, "a", big), Collective(1, "b", small)]).validate()
    got = critical_path(ft, s, ["h1", "h5"], FR, PROP)
    one = critical_path(ft, _one_send(1, small, wait_sends=True), ["h1", "h5"], FR, PROP)[0]
    assert got[1] == pytest.approx(one)
    assert got[0] > got[1]


def test_ideal_bounds_report_both_bounds() -> None:
    ft = fat_tree(4, bw_mbps=RATE / 1e6)
    hosts = [f"h{i + 1}" for i in range(16)]
    b = m.ideal_bounds(ft, ring_allreduce(16, 16 * 14000), hosts, prop_delay_s=PROP).iloc[0]
    assert b["path_bound_s"] > b["ideal_s"]                   # 30 waits for chunk and ACK
    assert b["unloaded_s"] == max(b["path_bound_s"], b["ideal_s"])
    table = m.scheme_table(pd.DataFrame([{"workload": "w", "scheme": "x", "repetition": 0,
                                          "cct": 2 * b["unloaded_s"], "ok": True}]),
                           pd.DataFrame([{**b.to_dict(), "workload": "w"}]))
    assert table["vs_unloaded"].iloc[0] == pytest.approx(2.0)
    assert table["slowdown"].iloc[0] > 2.0


TINY = {"name": "tiny", "backend": "sim",
        "topology": {"kind": "fattree", "k": 4},
        "fabric": {"link_rate": "10G", "prop_delay_us": 1.0, "queue_packets": 64},
        "schemes": ["rotate"],
        "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "64KB",
                       "hosts": ["h1", "h5", "h9", "h13"], "timeout_s": 20}],
        "parameters": {"seed": 1}}


def test_the_simulator_never_beats_the_bound_and_an_uncontended_ring_comes_close(
        tmp_path: Path) -> None:
    """Four ranks, one per pod, rotation: no two flows share a link, so the lock-step ring
    runs at the bound plus what the transport adds (slow start, coalesced ACKs)."""
    run = runner.run_experiment(from_dict(TINY), tmp_path)
    ccts = pd.read_csv(run.root / "ccts.csv")
    bound = pd.read_csv(run.root / "ideal.csv")
    cct, unloaded = float(ccts["cct"].sum()), float(bound["unloaded_s"].sum())
    assert unloaded > float(bound["ideal_s"].sum())
    assert unloaded <= cct < 1.5 * unloaded, (cct, unloaded)


@pytest.mark.parametrize(("schedule", "options"), [
    ("ring_allreduce", {"slots": 4}), ("moe_alltoall", {"skew": "zipf", "alpha": 1.2}),
    ("halving_doubling_allreduce", {})])
def test_no_scheme_beats_the_bound_on_the_simulator(tmp_path: Path, schedule: str,
                                                    options: dict) -> None:
    cfg = {**TINY, "schemes": ["ecmp", "random"],
           "workloads": [{"name": "w", "schedule": schedule, "size": "32KB",
                          "placement": "random", "options": options, "timeout_s": 20}]}
    hosts = 8 if schedule == "halving_doubling_allreduce" else 16
    cfg["workloads"][0]["hosts"] = [f"h{i + 1}" for i in range(hosts)]
    del cfg["workloads"][0]["placement"]
    run = runner.run_experiment(from_dict(cfg), tmp_path)
    ccts = pd.read_csv(run.root / "ccts.csv")
    assert ccts["ok"].all()
    unloaded = float(pd.read_csv(run.root / "ideal.csv")["unloaded_s"].sum())
    assert (ccts.groupby("scheme")["cct"].sum() >= unloaded).all(), (ccts, unloaded)
