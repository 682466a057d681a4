"""Integration (issue 33): a host agent keeps its pacing on a loaded machine.

Two namespaces joined by a veth pair, each shaped by HTB at the link rate as a fabric's host
link is; a traffic agent server (traffic.agentd, started and scheduled the way the fabric's
launcher does it: topo.agents.HostAgents) in each; HOGS_PER_CORE CPU hogs per core beside
them. A 2-rank ring AllReduce paced at the calibrated link rate must keep the hosts' send lag
p99 under the fidelity guard's threshold (topo/guard.py: 4 frame times). Everything this test starts —
namespaces, veths, agents, hogs — is removed by PID or name on the way out, also on failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from common.histogram import LogHistogram
from topo.agents import HostAgents
from topo.calibration import lookup, topology_key
from topo.guard import SEND_LAG_FRAMES, frame_time_us
from topo.priority import SwitchPriority
from topo.rundir import RunDir

pytestmark = [pytest.mark.root, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, "
                                 "real-time scheduling)")]

PREFIX = f"p4pl-{os.getpid()}"
IPS = ["10.213.9.1", "10.213.9.2"]
ROOT = Path(__file__).resolve().parents[2]
HOGS_PER_CORE = 8
"""A machine as loaded as the shared 2-core one (load average ~20). Measured at 10 Mb/s with
16 hogs: send lag p99 7.6 ms with the agents under the normal scheduler (the guard's threshold
is 4.8 ms), 0.16 ms at the real-time priority the launcher gives them."""
DEFAULT_MBPS = 10.0
"""The link rate when nothing is calibrated: issue 33's target (TDF 10,000 at 100 Gb/s)."""


def calibrated_mbps() -> float:
    """The emulated link rate ``make calibrate`` cached for the demo's fabric, else 10."""
    entry = lookup(topology_key("fattree", 4), "p4switch")
    mbps = entry.get("emulated_mbps") if entry else None
    return float(mbps) if mbps else DEFAULT_MBPS


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=10)


class _NsHost:
    """What HostAgents needs of a Mininet host: ``popen`` inside its namespace."""

    def __init__(self, ns: str) -> None:
        self.ns = ns

    def popen(self, args: list[str], **kw: Any) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", self.ns, *args], **kw)


@pytest.fixture
def shaped_pair():
    """Namespaces h0, h1 joined by one veth pair, each end shaped by HTB at the rate."""
    mbps = calibrated_mbps()
    names = [f"{PREFIX}-h{i}" for i in range(2)]
    created: list[str] = []
    try:
        for ns in names:
            sh("ip", "netns", "add", ns)
            created.append(ns)
        sh("ip", "-n", names[0], "link", "add", "eth0", "type", "veth", "peer", "name", "eth0",
           "netns", names[1])
        for ns, ip in zip(names, IPS, strict=True):
            sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root",
               "handle", "5:", "htb", "default", "1")
            sh("ip", "netns", "exec", ns, "tc", "class", "add", "dev", "eth0", "parent", "5:",
               "classid", "5:1", "htb", "rate", f"{mbps * 1000:g}kbit")
        yield names, mbps
    finally:
        for ns in reversed(created):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


@pytest.fixture
def cpu_hogs():
    """Busy processes (normal scheduler, like any neighbour's), killed by PID."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(HOGS_PER_CORE * (os.cpu_count() or 1))]
    try:
        yield hogs
    finally:
        for p in hogs:
            p.kill()
            p.wait(timeout=10)


def test_send_lag_under_cpu_hogs(shaped_pair, cpu_hogs, tmp_path):
    names, mbps = shaped_pair
    agents = HostAgents(RunDir.create("pacing", tmp_path / "run"), lambda h: _NsHost(h),
                        priority=SwitchPriority.REALTIME)
    size = int(mbps * 1e6 / 8 * 1.5)   # ~1.5 s of the link per direction
    start_at = time.time() + 2.0
    try:
        replies = agents.run({ns: [
            "--schedule", "ring_allreduce", "--ranks", "2", "--size", str(2 * size),
            "--hosts", ",".join(IPS), "--rank", str(i), "--rate", f"{mbps:g}M",
            "--rto-ms", "200", "--start-at", repr(start_at), "--timeout", "60",
            "--out", str(tmp_path / f"h{i}")] for i, ns in enumerate(names)}, timeout=90)
        applied = dict(agents.applied)
    finally:
        agents.stop()
    lag = LogHistogram()
    for ns in names:
        r = replies[ns]
        assert r.error is None and r.rc == 0, f"{ns}: {r.error or r.log}"
        for m in r.ranks.values():
            assert m.completed, m.error
            lag.merge(LogHistogram.of(m.send_lag_us))
    assert lag.n > 100, f"only {lag.n} paced wake-ups measured"
    threshold = SEND_LAG_FRAMES * frame_time_us(mbps * 1e6)
    p99 = lag.quantile(0.99)
    assert p99 is not None and p99 <= threshold, (
        f"send lag p99 {p99:.0f} µs > {threshold:.0f} µs at {mbps:g} Mb/s with "
        f"{len(cpu_hogs)} CPU hogs (agents: {applied}, load {os.getloadavg()[0]:.1f})")
