"""Host agents once per fabric (topo.agents): collectives on a small fabric reuse the agents
started for the first one; an agent killed mid-collective is reported for its host within the
run's bounds (and replaced at the next one); the fabric's stop stops every agent by PID.
Needs root and Mininet; holds the fabric lock while it runs."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

pytest.importorskip("mininet.net", reason="needs Mininet (Debian package `mininet`)")

from model.spec import leaf_spine  # noqa: E402
from topo.rundir import alive, proc_start_time  # noqa: E402

pytestmark = [pytest.mark.root, pytest.mark.mininet]


def test_agents_start_once_report_a_death_and_stop_with_the_fabric(tmp_path) -> None:  # noqa: ANN001
    from controller import FabricController
    from topo.collective import run_collective
    from topo.net import FabricNet

    spec = leaf_spine(2, 1, 1, 1)
    hosts = sorted(spec.hosts)
    net = FabricNet(spec, lock_timeout=600, run_dir=tmp_path / "run")
    ctl = None
    net.start()
    try:
        ctl = FabricController(spec, connect_timeout=120.0)
        ctl.start(scheme="ecmp", loops=())
        first = run_collective(net, "ring_allreduce", "32KB", hosts=hosts, timeout=30,
                               out_dir=tmp_path / "c1", rate="50M")
        assert first.ok, first.summary()
        pids = net.agents.pids()
        assert sorted(pids) == hosts and net.agents.started == 2
        recorded = net.run.pids()
        assert {f"agent-{h}" for h in hosts} <= set(recorded)
        second = run_collective(net, "alltoall", "32KB", hosts=hosts, timeout=30,
                                out_dir=tmp_path / "c2", rate="50M")
        assert second.ok, second.summary()
        assert net.agents.pids() == pids and net.agents.started == 2   # the same processes
        assert second.metrics[0].schedule != first.metrics[0].schedule

        # h2's agent dies while the job runs: reported for h2, the call returns (h1 gives up
        # at its own timeout), nothing hangs
        victim = pids[hosts[1]]
        killer = threading.Timer(1.5, os.kill, (victim, signal.SIGKILL))
        t0 = time.monotonic()
        killer.start()
        try:
            dead = run_collective(net, "ring_allreduce", "4MB", hosts=hosts, timeout=8,
                                  out_dir=tmp_path / "c3", rate="1M")
        finally:
            killer.cancel()
        assert time.monotonic() - t0 < 8 + 1 + 30
        assert not dead.ok and dead.returncodes[hosts[1]] is None
        assert any(e.startswith(f"{hosts[1]}: ") and "died" in e for e in dead.errors), \
            dead.errors
        assert f"agent-{hosts[1]}" not in net.run.pids()

        again = run_collective(net, "ring_allreduce", "32KB", hosts=hosts, timeout=30,
                               out_dir=tmp_path / "c4", rate="50M")
        assert again.ok, again.summary()
        assert net.agents.started == 3 and net.agents.pids()[hosts[0]] == pids[hosts[0]]
        final = [(p, proc_start_time(p)) for p in net.agents.pids().values()]
    finally:
        if ctl is not None:
            ctl.stop()
        net.stop()
    assert not any(alive(*rec) for rec in final)
    assert not [n for n in net.run.pids() if n.startswith("agent-")]
