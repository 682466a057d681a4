"""Propagation delay on the emulated fabric: with ``FabricNet(prop_delay_us=D)`` the p4switch
processes delay every link (this kernel has no netem), so a ping's round trip is at least
2 x links x D on every path — 4 links one way between leaves, 2 under one leaf. Lower bounds
only: a loaded machine adds latency, never removes it. Needs root and Mininet."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("mininet.net", reason="needs Mininet (Debian package `mininet`)")

from model.spec import leaf_spine  # noqa: E402

pytestmark = [pytest.mark.root, pytest.mark.mininet]

D_US = 25_000.0   # 25 ms a link: far above the switches' own per-hop latency


def _min_rtt_ms(out: str) -> float:
    m = re.search(r"= ([\d.]+)/", out)
    assert m, out
    return float(m.group(1))


def test_ping_round_trips_include_every_links_delay() -> None:
    from controller import FabricController
    from topo.net import FabricNet, TopoError

    spec = leaf_spine(2, 2, 2)
    leaf_of = {h: next(iter(spec.node_links(h))).other(h)[0] for h in ("h1", "h2", "h3")}
    assert leaf_of == {"h1": "leaf1", "h2": "leaf1", "h3": "leaf2"}
    with pytest.raises(TopoError, match="emulates no propagation delay"):
        FabricNet(spec, target="bmv2", prop_delay_us=D_US)
    net = FabricNet(spec, lock_timeout=600, prop_delay_us=D_US)
    ctl = None
    net.start()
    try:
        ctl = FabricController(spec, connect_timeout=120.0)
        ctl.start(scheme="ecmp", loops=())
        h1 = net.get("h1")
        same, other = spec.hosts["h2"].ip, spec.hosts["h3"].ip
        h1.cmd(f"ping -c2 -W5 {other}")   # ARP and first-packet set-up out of the way
        near = h1.cmd(f"ping -c4 -i0.3 -W5 {same}")
        far = h1.cmd(f"ping -c4 -i0.3 -W5 {other}")
        net.set_prop_delay(0.0)
        assert all(not sw.port_delays for sw in net.switches)
    finally:
        if ctl is not None:
            ctl.stop()
        net.stop()
    print(f"min RTT under one leaf {_min_rtt_ms(near)} ms, across {_min_rtt_ms(far)} ms")
    assert " 0% packet loss" in near and " 0% packet loss" in far, (near, far)
    assert _min_rtt_ms(near) >= 2 * 2 * D_US / 1000      # h1-leaf1-h2: 2 links each way
    assert _min_rtt_ms(far) >= 2 * 4 * D_US / 1000       # h1-leaf1-spine-leaf2-h3: 4
