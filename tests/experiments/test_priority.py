"""experiments/priority.py: every thread of a switch process is put ahead of normal processes
(SCHED_RR) as root, and a refusal falls back and says what it got instead of raising."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from experiments.priority import RT_PRIORITY, SwitchPriority, prioritise, threads

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
