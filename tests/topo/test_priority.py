"""topo/priority.py: every thread of a switch process is put ahead of normal processes
(SCHED_RR) as root, and a refusal falls back and says what it got instead of raising."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from topo.priority import RT_PRIORITY, SwitchPriority, prioritise, prioritise_all, threads

_CHILD = ("import threading, time\n"
          "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
          "print('up', flush=True)\ntime.sleep(30)\n")


@pytest.fixture
def child():
    p = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "up"
        deadline = time.monotonic() + 5
        while len(threads(p.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        yield p.pid
    finally:
        p.kill()
        p.wait()


def test_every_thread_gets_the_priority(child: int) -> None:
    assert len(threads(child)) >= 2
    got = prioritise(child, SwitchPriority.REALTIME)
    if os.geteuid() == 0:
        assert got == f"SCHED_RR {RT_PRIORITY}"
        for tid in threads(child):
            assert os.sched_getscheduler(tid) == os.SCHED_RR
            assert os.sched_getparam(tid).sched_priority == RT_PRIORITY
    else:   # neither real-time nor a negative nice level is allowed: said, not raised
        assert got.startswith("unchanged")


def test_none_and_a_missing_process_change_nothing(child: int) -> None:
    assert prioritise(child, "none") == "none"
    assert all(os.sched_getscheduler(t) == os.SCHED_OTHER for t in threads(child))
    assert prioritise(2 ** 22 + 12345, "realtime").endswith("no such process")
    with pytest.raises(ValueError):
        prioritise(child, "fastest")
    assert prioritise_all([child, child], "none") == {"none": 2}


def test_python_m_topo_runs_its_switches_at_real_time_unless_told_otherwise() -> None:
    from topo import __main__ as topo_cli

    assert topo_cli.parser().parse_args([]).switch_priority == "realtime"
    assert topo_cli.parser().parse_args(["--switch-priority", "none"]).switch_priority == "none"
    with pytest.raises(SystemExit):
        topo_cli.parser().parse_args(["--switch-priority", "fastest"])


@pytest.mark.root
@pytest.mark.mininet
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (Mininet)")
def test_topo_check_says_its_switches_ran_at_real_time() -> None:
    pytest.importorskip("mininet.net", reason="needs Mininet (Debian package `mininet`)")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run([sys.executable, "-m", "topo", "--topo", "leafspine", "--leaves", "2",
                        "--spines", "1", "--hosts-per-leaf", "1", "--bw", "10", "--check",
                        "--lock-wait", "600"], cwd=root, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"switches at SCHED_RR {RT_PRIORITY} (3)" in p.stdout, p.stdout


_VALVE_CHILD = ("import signal, sys, time\n"
                "from traffic import realtime\n"
                "realtime.install_valve()\n"
                "print('up', flush=True)\n"
                "sys.stdin.readline()\n"            # the test raised us and set the limit
                "t = time.process_time()\n"
                "while not realtime.demoted and time.process_time() - t < 20:\n"
                "    pass\n"                        # a runaway loop: never blocks
                "print(realtime.policy(), realtime.demoted, flush=True)\n"
                "print(realtime.rearm(), realtime.policy(), flush=True)\n")


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (real-time scheduling)")
def test_a_runaway_agent_leaves_real_time_instead_of_holding_a_core(monkeypatch) -> None:
    """RLIMIT_RTTIME's soft limit sends SIGXCPU; the agent's valve (traffic/realtime.py)
    demotes the process to the normal scheduler and it goes on living; the next collective
    re-arms it (agentd)."""
    from topo import priority

    monkeypatch.setattr(priority, "AGENT_RTTIME_US", (50_000, 5_000_000))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.Popen([sys.executable, "-c", _VALVE_CHILD], cwd=root, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert p.stdout is not None and p.stdin is not None
        assert p.stdout.readline().strip() == "up"
        assert priority.prioritise_agent(p.pid, "realtime") == \
            f"SCHED_RR {priority.AGENT_RT_PRIORITY}"
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.stdout.readline().split() == ["normal", "True"]
        assert p.stdout.readline().split() == ["True", "SCHED_RR",
                                               str(priority.AGENT_RT_PRIORITY)]
        assert p.wait(timeout=30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_agents_follow_the_switches_unless_told_otherwise(child: int, monkeypatch) -> None:
    from topo import priority

    assert priority.prioritise_agent(child, "none") == "none"
    monkeypatch.setattr(priority, "AGENTS_LIKE_SWITCHES", False)
    assert priority.prioritise_agent(child, "realtime") == "none"
    assert all(os.sched_getscheduler(t) == os.SCHED_OTHER for t in threads(child))
