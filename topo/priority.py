"""The switch processes first on the CPU: a hardware switch never waits for a core.

On a 2-core machine the 20 p4switch processes share the cores with the 8–16 host agents, the
controller and its sampler. Under the default scheduler a switch woken by an arriving frame
waits behind whatever runs — measured on the demo's ring (TDF 50,000, load average 12–14):
ingress lag p99 40 ms, more than the P4 egress delay p99 (38 ms), so the queueing happened in
the kernel's socket buffers where no P4 program sees it (topo/guard.py: "hidden
queue"). With every switch thread at the lowest real-time priority (SCHED_RR 1) the same run
had an ingress lag p99 of 0.85 ms against an egress delay p99 of 12.5 ms. The switches use a
few per cent of a core each, so they cannot starve the rest (and the kernel's real-time
throttling keeps 5 % of each second for everything else in any case).

:func:`prioritise` applies it to every thread of a process (threads created later inherit it
from the thread that creates them); where real-time scheduling is refused (no CAP_SYS_NICE)
it falls back to the highest nice level it may set, and says what it got. FabricNet applies
it to every switch it starts (``switch_priority``): the experiments' Mininet backend with
``parameters.switch_priority``, ``make topo`` / ``python -m topo`` with ``--switch-priority``
(both real-time by default).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path


class SwitchPriority(StrEnum):
    REALTIME = "realtime"
    """SCHED_RR at priority 1: above every normal process, below the kernel's own RT threads."""
    NICE = "nice"
    """nice -10 (CFS weight ~9x a default process)."""
    NONE = "none"
    """Leave the scheduler alone (to measure what it does)."""


RT_PRIORITY = 1
NICE = -10


def threads(pid: int) -> list[int]:
    try:
        return [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
    except (OSError, ValueError):
        return []


def prioritise(pid: int, how: SwitchPriority | str) -> str:
    """Give every thread of ``pid`` the priority ``how`` asks for; returns what was applied
    (``"SCHED_RR 1"``, ``"nice -10"``, ``"none"``, or why nothing could be)."""
    how = SwitchPriority(how)
    tids = threads(pid)
    if how is SwitchPriority.NONE or not tids:
        return "none" if tids or how is SwitchPriority.NONE else f"pid {pid}: no such process"
    if how is SwitchPriority.REALTIME:
        try:
            for tid in tids:
                os.sched_setscheduler(tid, os.SCHED_RR, os.sched_param(RT_PRIORITY))
            return f"SCHED_RR {RT_PRIORITY}"
        except (PermissionError, OSError, AttributeError):
            pass   # e.g. a container without CAP_SYS_NICE or RT bandwidth: try nice
    try:
        for tid in tids:
            os.setpriority(os.PRIO_PROCESS, tid, NICE)
        return f"nice {NICE}"
    except OSError as e:
        return f"unchanged ({e.strerror})"


def prioritise_all(pids: Iterable[int], how: SwitchPriority | str) -> dict[str, int]:
    """:func:`prioritise` for every process of ``pids``; how many got what
    (``{"SCHED_RR 1": 20}``)."""
    got: dict[str, int] = {}
    for pid in pids:
        what = prioritise(pid, how)
        got[what] = got.get(what, 0) + 1
    return got
