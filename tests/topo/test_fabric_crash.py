"""`make stop` after a crash: a launcher killed with SIGKILL leaves its switch processes, host
shells and veths behind; stop_leftovers removes exactly those (from the run-dir records) and
a new fabric can then start on the same ports."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mininet.net", reason="needs Mininet (Debian package `mininet`)")

from topo.rundir import RunDir, alive, intf_exists, stop_leftovers  # noqa: E402

pytestmark = [pytest.mark.root, pytest.mark.mininet]

LAUNCHER = """
import sys, time
from topo.net import FabricNet
from model.spec import leaf_spine
net = FabricNet(leaf_spine(2, 1, 1, 1), run_dir=sys.argv[1], lock_timeout=240)
net.start()
print("up", flush=True)
time.sleep(600)
"""


def test_stop_removes_what_a_killed_launcher_left(tmp_path: Path) -> None:
    run = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(run)], stdout=subprocess.PIPE,
                         text=True, cwd=Path(__file__).resolve().parents[2])
    try:
        assert p.stdout.readline().strip() == "up"
        rd = RunDir(run)
        recs = {n: r for n, r in rd.pids().items() if n != "launcher"}
        intfs = rd.intfs()
        assert {"leaf1", "leaf2", "spine1"} <= set(recs)
        assert intfs and all(intf_exists(i) for i in intfs)
        p.send_signal(signal.SIGKILL)  # the crash: nothing of FabricNet.stop runs
        p.wait(10)
        assert all(alive(*recs[s]) for s in ("leaf1", "leaf2", "spine1"))  # left behind
        removed = stop_leftovers(tmp_path, log=lambda _m: None)
        assert removed >= 3  # the switches at least (helper shells may have died with it)
        deadline = time.monotonic() + 5
        while any(alive(*r) for r in recs.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(*r) for r in recs.values())
        assert not any(intf_exists(i) for i in intfs)
        assert rd.pids() == {}
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        stop_leftovers(tmp_path, force=True, log=lambda _m: None)
    assert os.path.isdir(run)  # logs stay for the post-mortem
