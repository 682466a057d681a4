"""The eBPF switch's egress ports in the kernel. The program itself models each port's queue
(``cgen``: a packet departs when the link is free; it finds the queue ahead of it as
``enq_qdepth``, is tail-dropped beyond the port's depth, and the P4 program sees the queueing
metadata and marks ECN as on the Python target). The frames are then served at the link rate
by the interface's HTB qdisc, whose own FIFO is larger than any depth the model lets through,
so the model's drops are the only drops. This kernel has no fq/etf qdisc to release frames at
a departure time the program stamps, so HTB (from the same rate) is what paces them. The tc
command sets it up (iproute2 is a dependency already)."""

from __future__ import annotations

import json
import subprocess

HTB_QUANTUM = 1514


class QdiscError(RuntimeError):
    """tc refused a qdisc change (its message)."""


def _tc(*args: str) -> str:
    r = subprocess.run(["tc", *args], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise QdiscError(f"tc {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def serve_at(ifname: str, rate_bps: float, depth: int, priorities: int = 1) -> None:
    """Root HTB on ``ifname`` at ``rate_bps``, one class, a pfifo well above ``depth``. With
    ``priorities`` > 1 the class has one leaf per priority, ``1:(0x10 + priority)``, which the
    program picks through ``skb->priority``: the highest priority has the link's rate and HTB
    priority 0, the others a token rate and lower HTB priorities, all with the link as ceiling
    (so they borrow only what the higher ones leave: strict priority; this kernel has no
    ``prio`` qdisc)."""
    clear(ifname)
    rate = f"{int(rate_bps)}bit"
    limit = str(4 * depth + 64)
    burst = ("burst", str(HTB_QUANTUM), "cburst", str(HTB_QUANTUM), "quantum", str(HTB_QUANTUM))
    _tc("qdisc", "add", "dev", ifname, "root", "handle", "1:", "htb", "default", "1")
    _tc("class", "add", "dev", ifname, "parent", "1:", "classid", "1:1", "htb", "rate", rate,
        "ceil", rate, *burst)
    if priorities <= 1:
        _tc("qdisc", "add", "dev", ifname, "parent", "1:1", "handle", "10:", "pfifo", "limit",
            limit)
        return
    low = f"{max(8000, int(rate_bps / 1000))}bit"
    for p in range(priorities):
        leaf = f"1:{0x10 + p:x}"
        _tc("class", "add", "dev", ifname, "parent", "1:1", "classid", leaf, "htb", "rate",
            rate if p == priorities - 1 else low, "ceil", rate, "prio",
            str(priorities - 1 - p), *burst)
        _tc("qdisc", "add", "dev", ifname, "parent", leaf, "handle", f"{0x20 + p:x}:",
            "pfifo", "limit", limit)


def clear(ifname: str) -> None:
    subprocess.run(["tc", "qdisc", "del", "dev", ifname, "root"], capture_output=True,
                   check=False)


def drops(ifnames: set[str] | frozenset[str]) -> int:
    """Frames the root qdiscs of ``ifnames`` dropped (their leaves' included: HTB counts them
    at the root), from one ``tc`` call; 0 for an interface without one or when tc cannot
    say."""
    if not ifnames:
        return 0
    r = subprocess.run(["tc", "-s", "-j", "qdisc", "show"], capture_output=True, text=True,
                       check=False)
    try:
        return sum(int(q.get("drops", 0)) for q in json.loads(r.stdout or "[]")
                   if q.get("root") and q.get("dev") in ifnames)
    except (ValueError, TypeError, AttributeError):
        return 0
