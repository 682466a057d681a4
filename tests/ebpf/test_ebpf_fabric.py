"""The k=4 fat-tree with every switch on the eBPF target (``FabricNet(target="ebpf")``),
programmed by the same FabricController: the Python fabric's own integration tests run against
it unchanged — every pair reachable, counters over P4Runtime equal to the traffic sent, a link
taken down mid-traffic routed around by the failure loop (probes through the CPU port)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from p4switch.ebpf import toolchain

pytest.importorskip("mininet.net", reason="needs Mininet (Debian package `mininet`)")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "topo"))

from test_fabric_k4 import (  # noqa: E402,F401 - collected here, against this module's fabric
    PERIOD,
    controlled_fabric,
    test_counters_match_traffic_sent,
    test_every_host_reaches_every_other,
    test_link_down_mid_traffic_is_rerouted,
)

REASON = toolchain.unavailable_reason()
pytestmark = [pytest.mark.root, pytest.mark.mininet,
              pytest.mark.skipif(REASON is not None, reason=REASON or "")]


@pytest.fixture(scope="module")
def fabric():
    yield from controlled_fabric(target="ebpf")
