"""The fabric lock refuses a second holder and names the first; run-dir records let the
cleanup kill exactly the recorded process (never a recycled pid) and skip live fabrics."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from topo.lock import FabricBusy, FabricLock
from topo.rundir import RunDir, alive, proc_start_time, stop_leftovers


def test_lock_is_exclusive_and_names_holder(tmp_path) -> None:
    path = tmp_path / "fabric.lock"
    holder = subprocess.Popen([sys.executable, "-c", f"""
import time
from topo.lock import FabricLock
with FabricLock({str(path)!r}):
    print("held", flush=True)
    time.sleep(30)
"""], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(FabricBusy, match=rf"another fabric is running \(pid {holder.pid}\)"):
            FabricLock(path).acquire()
        t0 = time.monotonic()
        with pytest.raises(FabricBusy):
            FabricLock(path, timeout=0.5).acquire()
        assert time.monotonic() - t0 >= 0.4
    finally:
        holder.kill()
        holder.wait()
    # the kernel dropped the dead holder's lock
    with FabricLock(path, timeout=2) as lk:
        assert lk.held and lk.holder() == os.getpid()
    assert FabricLock(path).holder() is None


def test_stop_leftovers_kills_only_recorded_process(tmp_path) -> None:
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        rd = RunDir.create("t", tmp_path / "run1")
        rd.record_pid("edge1", victim.pid)
        # a record whose start time does not match is a recycled pid: must not be killed
        (rd.path / "pids" / "edge2.pid").write_text(
            f"{bystander.pid} {proc_start_time(bystander.pid) + 1}\n")
        (rd.path / "pids" / "launcher.pid").write_text("999999999 1\n")  # crashed launcher
        rd.record_intfs(["p4ft-none-eth9"])  # does not exist: nothing to delete
        logs: list[str] = []
        n = stop_leftovers(tmp_path, log=logs.append)
        assert n == 1, logs
        assert victim.wait(5) is not None
        assert bystander.poll() is None
        assert rd.pids() == {}
        assert not (rd.path / "intfs.txt").exists()
    finally:
        for p in (victim, bystander):
            p.kill()
            p.wait()


def test_stop_leftovers_skips_live_fabric(tmp_path) -> None:
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        rd = RunDir.create("live", tmp_path / "run2")  # launcher = this (live) process
        rd.record_pid("edge1", worker.pid)
        logs: list[str] = []
        assert stop_leftovers(tmp_path, log=logs.append) == 0
        assert "still running" in logs[0] and worker.poll() is None
        assert alive(*rd.pids()["edge1"])
    finally:
        worker.kill()
        worker.wait()
