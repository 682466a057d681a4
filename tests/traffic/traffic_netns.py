"""Test helper: host namespaces joined by a Linux bridge (the fabric stand-in of the traffic
integration tests). Everything lives in namespaces created here (p4ft-<pid>-*) and is removed in
teardown, also when the test fails."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

PREFIX = f"p4ft-{os.getpid()}"
HOSTS = 4
SUBNET = "10.213.7"
HOST_IPS = ",".join(f"{SUBNET}.{i + 1}" for i in range(HOSTS))  # the agents' --hosts
ROOT = Path(__file__).resolve().parents[2]


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=10)


@pytest.fixture
def bridged_hosts():
    """Namespaces h0..h3 with 10.213.7.(i+1)/24, joined by a bridge in its own namespace."""
    br = f"{PREFIX}-br"
    names = [f"{PREFIX}-h{i}" for i in range(HOSTS)]
    created: list[str] = []
    try:
        for ns in [br, *names]:
            sh("ip", "netns", "add", ns)
            created.append(ns)
        sh("ip", "-n", br, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", br, "link", "set", "br0", "up")
        for i, ns in enumerate(names):
            # create the veth pair directly across the two namespaces: nothing in the root ns
            sh("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name",
               f"p{i}", "netns", br)
            sh("ip", "-n", br, "link", "set", f"p{i}", "master", "br0", "up")
            sh("ip", "-n", ns, "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield names
    finally:
        for ns in reversed(created):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def run_agents(namespaces: list[str], args: Callable[[int], list[str]]) -> list[str]:
    """Run one ``traffic.run`` agent in each namespace at once (``args(i)``: the i-th one's
    arguments), wait for all and assert each exited 0; any still running on the way out (a
    timeout, a failure) is killed. Returns each agent's standard output."""
    procs: list[subprocess.Popen] = []
    try:
        for i, ns in enumerate(namespaces):
            cmd = ["ip", "netns", "exec", ns, sys.executable, "-m", "traffic.run", *args(i)]
            procs.append(subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=120) for p in procs]   # a bound for a hung agent, not a timing test
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=5)
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, f"agent failed:\n{out}\n{err}"
        print(out)
    return [out for out, _ in outs]
