"""Integration: a 4-rank ring AllReduce over the TCP mode between network namespaces joined by
a Linux bridge (namespaces from the traffic_netns helper, removed also on failure)."""

from __future__ import annotations

import json
import os
import time

import pytest
from traffic_netns import HOST_IPS, HOSTS, bridged_hosts, run_agents  # noqa: F401 (fixture)

from traffic.metrics import summarize

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for netns")]


def test_tcp_ring_allreduce_across_bridge(bridged_hosts, tmp_path):  # noqa: F811
    size, qps = 400_000, 4
    start_at = time.time() + 1.0
    run_agents(bridged_hosts, lambda i: [
        "--schedule", "ring_allreduce", "--ranks", "4", "--size", str(size),
        "--hosts", HOST_IPS, "--transport", "tcp", "--qps", str(qps),
        "--rate", "500M", "--start-at", repr(start_at), "--timeout", "20",
        "--out", str(tmp_path)])
    ranks = [json.loads((tmp_path / f"rank{i}.json").read_text()) for i in range(HOSTS)]
    per_rank = 2 * (HOSTS - 1) * size // HOSTS
    for r, m in enumerate(ranks):
        assert m["completed"], m["error"]
        assert m["transport"] == "tcp"
        assert m["totals"]["bytes_sent"] == per_rank
        assert m["totals"]["bytes_received"] == per_rank
        assert len(m["steps"]) == 2 * (HOSTS - 1)
        for f in m["flows"]:
            assert f["dst"] == (r + 1) % HOSTS
            assert len(f["connections"]) == qps
            assert {c["dport"] for c in f["connections"]} == {4792}
            assert f["tcp"]["with_info"] == qps and f["tcp"]["total_retrans"] is not None
    # the ranks agree: what rank r sent to r+1 is exactly what r+1 received from r
    for r, m in enumerate(ranks):
        nxt = ranks[(r + 1) % HOSTS]
        assert {f["flow"]: f["bytes"] for f in m["flows"]} == \
            {f["flow"]: f["bytes"] for f in nxt["received"] if f["src"] == r}
    summ = summarize(tmp_path)
    assert summ.completed and summ.flows_mismatched == []
    assert summ.bytes_sent == summ.bytes_received == HOSTS * per_rank
    assert summ.tcp is not None and summ.tcp.total_retrans is not None
    print(summ)
