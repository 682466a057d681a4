"""The host agent's safety valve when it runs at real-time priority.

The launcher (topo/priority.py, ``prioritise_agent``) may put an agent's process under
SCHED_RR so that a woken agent does not queue behind the machine's other work, and sets its
RLIMIT_RTTIME: the CPU time it may use at that priority without blocking. A loop that never
sleeps would otherwise hold a core until the kernel's real-time throttling (5 % of each second
left to everything else). At the soft limit the kernel sends SIGXCPU; :func:`install_valve`'s
handler then moves every thread of the process back to the normal scheduler and says so on
stderr (the agent's log); :func:`rearm` gives the priority back at the agent's next
collective (one runaway run must not cost every later one its pacing). Under the normal
scheduler the signal never comes.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

demoted = False
"""The valve opened: this process left real-time scheduling (until :func:`rearm`)."""
_was: tuple[int, int] | None = None
"""(policy, priority) the valve took away."""


def to_normal() -> None:
    """Every thread of this process under SCHED_OTHER (what a real-time overrun gets)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
        except (OSError, ValueError):
            pass


def _overrun(_sig: int, _frame: FrameType | None) -> None:
    global demoted, _was
    if not demoted:
        demoted = True
        try:
            _was = os.sched_getscheduler(0), os.sched_getparam(0).sched_priority
        except OSError:
            _was = None
        to_normal()
        print("traffic agent: real-time CPU budget exceeded without blocking (RLIMIT_RTTIME): "
              "back to the normal scheduler", file=sys.stderr, flush=True)


def rearm() -> bool:
    """Give back the real-time priority the valve took (every thread); True if it did."""
    global demoted, _was
    if not demoted or _was is None:
        return False
    policy_, prio = _was
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setscheduler(int(tid), policy_, os.sched_param(prio))
        except (OSError, ValueError):
            return False
    demoted, _was = False, None
    return True


def install_valve() -> None:
    """Catch SIGXCPU (RLIMIT_RTTIME's soft limit) and demote instead of dying."""
    if hasattr(signal, "SIGXCPU"):
        signal.signal(signal.SIGXCPU, _overrun)


def policy() -> str:
    """This process's scheduling (``SCHED_RR 1``, ``normal``): for the agent's log."""
    try:
        pol = os.sched_getscheduler(0)
        prio = os.sched_getparam(0).sched_priority
    except OSError:
        return "unknown"
    return {os.SCHED_RR: f"SCHED_RR {prio}", os.SCHED_FIFO: f"SCHED_FIFO {prio}"}.get(
        pol, "normal")
