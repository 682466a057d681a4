"""Metric functions on synthetic data whose answers are known by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from experiments import metrics as m
from model.spec import fat_tree, leaf_spine
from traffic.schedules import ring_allreduce


def test_cct_stats_over_repetitions_and_failed_runs() -> None:
    df = pd.DataFrame({"workload": "w", "scheme": "ecmp", "name": "c",
                       "cct": [1.0, 2.0, 3.0, 4.0, 99.0], "ok": [True] * 4 + [False]})
    s = m.cct_stats(df).iloc[0]
    assert (s["n"], s["failed"]) == (4, 1)
    assert s["mean"] == 2.5 and s["p50"] == 2.5 and s["max"] == 4.0
    assert s["p99"] == pytest.approx(3.97)
    assert s["std"] == pytest.approx(math.sqrt(1.25))


def test_scheme_table_sums_collectives_and_ranks_against_best() -> None:
    rows = []
    for scheme, t in (("ecmp", 3.0), ("random", 1.5)):
        for rep in range(2):
            for cid in range(2):                    # two collectives per job
                rows.append({"workload": "w", "scheme": scheme, "repetition": rep,
                             "collective": cid, "cct": t / 2, "ok": True})
    ideal = pd.DataFrame({"workload": ["w", "w"], "ideal_s": [0.5, 0.25]})
    t = m.scheme_table(pd.DataFrame(rows), ideal).set_index("scheme")
    assert t.loc["ecmp", "mean"] == 3.0 and t.loc["random", "mean"] == 1.5
    assert t.loc["ecmp", "vs_best"] == 2.0 and t.loc["random", "vs_best"] == 1.0
    assert t.loc["random", "slowdown"] == pytest.approx(2.0)
    w = m.winners(t.reset_index()).iloc[0]
    assert (w["best"], w["worst"], w["speedup"]) == ("random", "ecmp", 2.0)


def test_bisection_bandwidth_of_fat_tree_and_oversubscribed_leaf_spine() -> None:
    ft = fat_tree(4, bw_mbps=10)
    a, b = m.bisection(ft)
    assert len(a) == len(b) == 8 and all(ft.hosts[h].pod in (0, 1) for h in a)
    assert m.cut_capacity_bps(ft, a, b) == pytest.approx(8 * 10e6)   # 8 core links per half
    ls = leaf_spine(leaves=2, spines=1, hosts_per_leaf=4, bw_mbps=10)
    assert m.cut_capacity_bps(ls, *m.bisection(ls)) == pytest.approx(10e6)  # one uplink, 4:1


def test_ideal_bounds_of_a_ring() -> None:
    ft = fat_tree(4, bw_mbps=10)
    hosts = [f"h{i + 1}" for i in range(16)]
    chunk = 14000                                  # 10 full packets of 1400 B
    s = ring_allreduce(16, 16 * chunk)
    b = m.ideal_bounds(ft, s, hosts).iloc[0]
    per_host = 30 * (chunk + 10 * m.FRAME_HEADER_BYTES)   # 2(N-1) chunks sent per rank
    assert b["nic_bound_s"] == pytest.approx(per_host * 8 / 10e6)
    # only h8->h9 crosses A->B (and h16->h1 B->A): one ring flow over 8 core links' worth
    assert b["bisection_bytes"] == per_host
    assert b["bisection_bound_s"] == pytest.approx(per_host * 8 / 80e6)
    assert b["ideal_s"] == b["nic_bound_s"]
    assert m.inter_edge_wire_bytes(ft, s, hosts) == 8 * per_host   # h2->h3, h4->h5, ...


def _links(times: list[float], per_link: dict[tuple[str, str], list[int]]) -> pd.DataFrame:
    rows = []
    for (src, dst), vals in per_link.items():
        for t, v in zip(times, vals, strict=True):
            rows.append({"t": t, "src": src, "src_port": 3, "dst": dst, "dst_port": 1,
                         "tx_packets": v // 1000, "tx_bytes": v, "up": True})
    return pd.DataFrame(rows)


def test_link_utilisation_and_imbalance() -> None:
    ft = fat_tree(4, bw_mbps=10)
    # edge1's two uplinks: one full (1.25 MB/s = 10 Mb/s), one idle; then both half full
    samples = _links([0.0, 1.0, 2.0], {("edge1", "agg1"): [0, 1_250_000, 1_875_000],
                                       ("edge1", "agg2"): [0, 0, 625_000],
                                       ("agg1", "edge1"): [0, 5, 10]})
    u = m.link_utilisation(samples, ft)
    up = u[u["uplink"]].set_index(["t", "dst"])
    assert up.loc[(1.0, "agg1"), "util"] == pytest.approx(1.0)
    assert up.loc[(2.0, "agg2"), "util"] == pytest.approx(0.5)
    assert set(u.loc[~u["uplink"], "tier"]) == {"agg->edge"}
    imb = m.imbalance(u).set_index("t")["imbalance"]
    assert imb[1.0] == pytest.approx(2.0) and imb[2.0] == pytest.approx(1.0)
    tot = m.total_imbalance(u).iloc[0]
    assert tot["tier"] == "edge->agg" and tot["imbalance"] == pytest.approx(1.875 / 1.25)


def test_counter_reset_counts_from_zero() -> None:
    ft = fat_tree(4, bw_mbps=10)
    u = m.link_utilisation(_links([0.0, 1.0], {("edge1", "agg1"): [900, 100]}), ft)
    assert u["bytes"].tolist() == [100]


def test_queue_depth_counter_delta_and_drops() -> None:
    q = pd.DataFrame({"scheme": ["a", "a", "b"], "switch": ["s1", "s2", "s1"],
                      "port": [1, 2, 1], "peer": ["x", "y", "x"], "qdepth_max": [3, 9, 4],
                      "qdepth_last": [0, 0, 0]})
    mq = m.max_queue_depth(q).set_index("scheme")
    assert mq.loc["a", "qdepth_max"] == 9 and mq.loc["a", "switch"] == "s2"
    nan = np.nan
    cols = ["switch", "counter", "index", "port", "group", "member", "reason", "packets",
            "bytes"]
    before = pd.DataFrame([["s1", "drops", 5, nan, nan, nan, "route_miss", 2, 200],
                           ["s1", "port_tx", 1, 1, nan, nan, nan, 10, 1000]], columns=cols)
    after = pd.DataFrame([["s1", "drops", 5, nan, nan, nan, "route_miss", 7, 700],
                          ["s1", "port_tx", 1, 1, nan, nan, nan, 30, 3000],
                          ["s2", "drops", 1, nan, nan, nan, "ttl_expired", 1, 64]],
                         columns=cols)
    d = m.counter_delta(before, after)
    assert d["packets"].tolist() == [5, 20, 1]
    assert m.drops(d) == 6


def test_fct_table_and_cdf() -> None:
    flows = pd.DataFrame({"direction": ["send", "recv", "send"], "fct": [0.2, 0.1, None]})
    assert m.fct_table(flows)["fct"].tolist() == [0.2]
    x, y = m.cdf([3.0, 1.0, 2.0])
    assert x.tolist() == [1.0, 2.0, 3.0] and y.tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_host_port_bytes_drop_reasons_and_data_wire_bytes() -> None:
    ft = fat_tree(4, bw_mbps=10)
    nan = np.nan
    delta = pd.DataFrame({
        "switch": ["edge1", "edge1", "edge1", "edge2", "edge1"],
        "counter": ["port_rx_ctr", "port_rx_ctr", "port_tx_ctr", "port_rx_ctr", "drop_ctr"],
        "port": [1, 3, 1, 1, nan], "reason": [nan, nan, nan, nan, "route_miss"],
        "packets": [10, 5, 7, 2, 4], "bytes": [1000, 500, 700, 200, 0]})
    # h1 is edge1 port 1, h3 is edge2 port 1; edge1 port 3 faces agg1, tx is not rx
    assert m.host_port_bytes(delta, ft, ["h1"]) == 1000
    assert m.host_port_bytes(delta, ft, ["h1", "h3"]) == 1200
    assert m.drop_reasons(delta) == {"route_miss": 4}
    s = ring_allreduce(4, 4 * 1500)                 # chunks of 1500 B = 2 packets each
    hosts = ["h1", "h2", "h3", "h4"]
    assert m.data_wire_bytes(s, hosts) == 4 * 6 * (1500 + 2 * m.FRAME_HEADER_BYTES)
    assert m.data_wire_bytes(s, ["h1", "h1", "h2", "h2"]) == 2 * 6 * (1500 + 140)
