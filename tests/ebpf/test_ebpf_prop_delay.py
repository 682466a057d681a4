"""Propagation delay on the eBPF target's fabric, added where it can be: at the receiving
hosts (traffic/delayline.py; this kernel has no netem, fq or etf qdisc). A collective between
two hosts four links apart on a small leaf-spine whose switches are all in the kernel: every
flow's smoothed RTT carries the modelled delay of both directions (a floor: the behaviour), and
stays within the stated tolerance of the fabric's base RTT (the modelled delay plus one frame's
and one ACK's serialisation per link). The switches measured the ingress lag the guard judges
(frames between switches carry when they were due)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4switch.ebpf import toolchain

pytest.importorskip("mininet.net", reason="needs Mininet (Debian package `mininet`)")

REASON = toolchain.unavailable_reason()
pytestmark = [pytest.mark.root, pytest.mark.mininet,
              pytest.mark.skipif(REASON is not None, reason=REASON or "")]

TDF = 1000.0
PROP_US = 2.0          # fabric µs per link: 2 ms of wall time per link at TDF 1000
LINKS = 4              # h1 - leaf1 - spine1 - leaf2 - h2
TOLERANCE = 3.0
"""The smoothed RTT may exceed the base RTT by this factor: it also holds the queueing of a
window of packets and the agents' own lateness on a loaded 2-core machine."""


def test_a_round_trip_carries_the_delay_of_every_link_both_ways(tmp_path: Path) -> None:
    from common.histogram import LogHistogram
    from p4switch import ControlClient
    from topo.session import FabricSession

    with FabricSession("leafspine", leaves=2, spines=1, hosts_per_leaf=1, link_rate="10G",
                       prop_delay_us=PROP_US, tdf=TDF, target="ebpf", lock_timeout_s=600,
                       run_dir=tmp_path / "run") as s:
        assert s.prop_delay_us == 0 and s.host_prop_delay_us == PROP_US * TDF
        assert any("added at the receiving hosts" in line for line in s.describe())
        base = s.base_rtt_s()
        hosts = sorted(s.spec.hosts, key=lambda h: s.spec.hosts[h].index)
        r = s.collective("ring_allreduce", "32KB", hosts=hosts, out_dir=tmp_path / "c")
        # the spine's frames all come from the leaves' queue models, stamped with when
        # their last bit was due: the guard's ingress lag was measured on them
        with ControlClient(str(s.net.get("spine1").control_socket)) as c:
            lag = LogHistogram.of(c.hidden_stats()["ports"]["kernel"]["ingress_lag_us"])
    assert r.ok, r.summary()
    assert lag.n > 0
    assert r.agent_args["prop_delay_us"] == PROP_US * TDF
    floor = 2 * LINKS * PROP_US * TDF * 1e-6        # wall seconds
    assert floor < base
    srtts = [f["srtt"] for p in (tmp_path / "c" / "traffic").rglob("rank*.json")
             for f in json.loads(p.read_text())["flows"] if not f["local"] and f["srtt"]]
    print("base RTT", base, "srtt", srtts, "guard", r.guard)   # pytest -s shows it
    assert len(srtts) == 4       # two ranks, each sending in both halves of the ring
    assert all(floor <= x <= TOLERANCE * base for x in srtts), (floor, base, srtts)
