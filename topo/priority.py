"""The switch processes and the host agents first on the CPU: a hardware switch never waits
for a core, and a NIC never waits to pace.

On a 2-core machine the 20 p4switch processes share the cores with the 8–16 host agents, the
controller and its sampler. Under the default scheduler a switch woken by an arriving frame
waits behind whatever runs — measured on the demo's ring (TDF 50,000, load average 12–14):
ingress lag p99 40 ms, more than the P4 egress delay p99 (38 ms), so the queueing happened in
the kernel's socket buffers where no P4 program sees it (topo/guard.py: "hidden
queue"). With every switch thread at the lowest real-time priority (SCHED_RR 1) the same run
had an ingress lag p99 of 0.85 ms against an egress delay p99 of 12.5 ms.

The agents then waited instead: bench/capacity.py on the demo's k=4 fabric (load average
20–27 from other work on the machine) found each agent runnable but not running for 16–54 %
of the wall time (/proc/PID/schedstat) while it used 1–2 % of a core, behind the real-time
switches and every normal process; its send lag p99 (0.08–1.8 fabric µs at TDF 100,000–25,000)
crossed the guard's 4 frame times (0.48 µs) from TDF 50,000 on. At the switches' own priority
(SCHED_RR 1, first come first served among them) the agents waited 1–20 % and the send lag p99
fell 4–12x (0.009–0.15 µs); with the agents above the switches (SCHED_RR 2) the switches' ingress
lag grew instead. The python switches themselves use 200–400 µs of CPU per frame and hop, ~1.2
cores at 1 Mb/s for the ring: they, not the agents, bound the rate now.

:func:`prioritise` applies it to every thread of a process (threads created later inherit it
from the thread that creates them); where real-time scheduling is refused (no CAP_SYS_NICE)
it falls back to the highest nice level it may set, and says what it got. FabricNet applies
it to every switch it starts (``switch_priority``): the experiments' Mininet backend with
``parameters.switch_priority``, ``make topo`` / ``python -m topo`` with ``--switch-priority``
(both real-time by default), and the same way to every host agent (:func:`prioritise_agent`,
with RLIMIT_RTTIME as its safety valve: traffic/realtime.py, an agent that does not block
leaves real-time scheduling). The kernel's real-time throttling keeps 5 % of each second for
everything else in any case.
"""

from __future__ import annotations

import os
import resource
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
AGENT_RT_PRIORITY = 1
"""The host agents' SCHED_RR priority: the switches' (:func:`prioritise_agent`)."""
AGENTS_LIKE_SWITCHES = True
"""False: agents stay under the normal scheduler whatever the switches get (bench/capacity.py
``--agents-normal`` measures the difference)."""
AGENT_RTTIME_US = (200_000, 1_000_000)
"""RLIMIT_RTTIME of an agent (soft, hard): CPU µs it may use at real-time priority without
blocking. Past the soft limit the kernel sends SIGXCPU and the agent demotes itself to the
normal scheduler (traffic.realtime); past the hard one it is killed. An agent blocks in
``select`` between paced sends, so only a runaway loop reaches either."""


def threads(pid: int) -> list[int]:
    try:
        return [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
    except (OSError, ValueError):
        return []


def prioritise(pid: int, how: SwitchPriority | str, rt_priority: int | None = None) -> str:
    """Give every thread of ``pid`` the priority ``how`` asks for (real-time: at
    ``rt_priority``, RT_PRIORITY by default); returns what was applied (``"SCHED_RR 1"``,
    ``"nice -10"``, ``"none"``, or why nothing could be)."""
    how = SwitchPriority(how)
    rt_priority = RT_PRIORITY if rt_priority is None else rt_priority
    tids = threads(pid)
    if how is SwitchPriority.NONE or not tids:
        return "none" if tids or how is SwitchPriority.NONE else f"pid {pid}: no such process"
    if how is SwitchPriority.REALTIME:
        try:
            for tid in tids:
                os.sched_setscheduler(tid, os.SCHED_RR, os.sched_param(rt_priority))
            return f"SCHED_RR {rt_priority}"
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


def prioritise_agent(pid: int, how: SwitchPriority | str) -> str:
    """A host agent's process (traffic.agentd) scheduled like the switches: real-time
    (``AGENT_RT_PRIORITY``) with ``AGENT_RTTIME_US`` as its safety valve, or the fallback
    :func:`prioritise` gives. Returns what was applied."""
    if not AGENTS_LIKE_SWITCHES:
        return prioritise(pid, SwitchPriority.NONE)
    if SwitchPriority(how) is SwitchPriority.REALTIME:
        try:
            resource.prlimit(pid, resource.RLIMIT_RTTIME, AGENT_RTTIME_US)
        except (OSError, ValueError, AttributeError):
            return prioritise(pid, SwitchPriority.NICE)   # no valve: no real-time either
    return prioritise(pid, how, AGENT_RT_PRIORITY)
