"""ECN echo end to end: a packet a P4 switch CE-marks comes back as an ACK with its echo set.

Two host namespaces joined through a third in which ``p4switch`` runs ``p4/ecn_mark.p4``: a wire
that CE-marks ECN-capable packets entering on port 1 (from h1) only. Two real agents run a
2-rank ring AllReduce with REPS (which sends ECT(0) and reads each datagram's TOS): every packet
rank 0 sent must come back echoed CE, none of rank 1's. Everything lives in namespaces named
p4ft-<pid>-ecn* and is removed, and the switch stopped by PID, also on failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from traffic_netns import ROOT, run_agents, sh

from tests.netutil import spawn_logged

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for netns")]

PROGRAM = Path(__file__).resolve().parent / "p4" / "ecn_mark.p4"
PREFIX = f"p4ft-{os.getpid()}-ecn"
IPS = ["10.213.9.1", "10.213.9.2"]


@pytest.fixture
def wire():
    """(host namespaces, switch namespace): h1 -- s1 [p4switch] s2 -- h2."""
    sw, hosts = f"{PREFIX}sw", [f"{PREFIX}1", f"{PREFIX}2"]
    created: list[str] = []
    try:
        for ns in [sw, *hosts]:
            sh("ip", "netns", "add", ns)
            created.append(ns)
        sh("ip", "-n", sw, "link", "set", "lo", "up")
        for i, ns in enumerate(hosts):
            port = f"s{i + 1}"
            sh("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port,
               "netns", sw)
            sh("ip", "-n", ns, "addr", "add", f"{IPS[i]}/24", "dev", "eth0")
            for n, dev in ((ns, "eth0"), (ns, "lo"), (sw, port)):
                sh("ip", "-n", n, "link", "set", dev, "up")
            if shutil.which("ethtool"):  # a software switch forwards partial checksums unfixed
                for n, dev in ((ns, "eth0"), (sw, port)):
                    subprocess.run(["ip", "netns", "exec", n, "ethtool", "-K", dev, "tx", "off",
                                    "rx", "off", "tso", "off", "gso", "off", "gro", "off"],
                                   capture_output=True, timeout=10)
        yield hosts, sw
    finally:
        for ns in reversed(created):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


@pytest.fixture
def ecn_switch(wire):  # noqa: ANN001
    hosts, sw = wire
    cmd = ["ip", "netns", "exec", sw, sys.executable, "-m", "p4switch", str(PROGRAM),
           "--grpc-server-addr", "127.0.0.1:50151",  # the namespace's own loopback
           "-i", "1@s1", "-i", "2@s2"]
    run = spawn_logged(cmd, "started", cwd=ROOT)
    try:
        assert run.ready.wait(120), "p4switch did not start:\n" + "\n".join(run.log[-30:])
        yield hosts
    finally:
        run.stop()


def test_ce_marked_by_the_switch_comes_back_echoed(ecn_switch, tmp_path):  # noqa: ANN001
    start_at = time.time() + 1.5
    run_agents(ecn_switch, lambda i: [
        "--schedule", "ring_allreduce", "--ranks", "2", "--size", "40000",
        "--hosts", ",".join(IPS), "--rate", "50M", "--path-policy", "reps(8)",
        "--rto-ms", "100", "--start-at", repr(start_at), "--timeout", "25",
        "--out", str(tmp_path / f"h{i}")])
    ranks = [json.loads((tmp_path / f"h{i}" / f"rank{i}.json").read_text()) for i in (0, 1)]
    for m in ranks:
        assert m["completed"], m["error"]
    marked = ranks[0]["flows"]     # h1 -> h2: through port 1, every packet CE-marked
    clean = ranks[1]["flows"]      # h2 -> h1: through port 2, never marked
    assert marked and clean
    for f in marked:
        assert f["acked_packets"] == f["packets"] > 0
        assert f["ce_acked"] == f["packets"]
    for f in clean:
        assert f["acked_packets"] == f["packets"] > 0
        assert f["ce_acked"] == 0
