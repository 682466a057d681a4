"""Link rate and queue of an eBPF switch port in the kernel: the program redirects a frame to
its egress interface, whose root qdisc serves it — HTB at the link rate with one pfifo of the
port's depth (tail drop), or a bare pfifo without a rate. Statistics come back as the tc
command's JSON (iproute2 is a dependency already; one short subprocess per read, so readers
sample, they do not poll per packet). What differs from the Python target's queues is in
docs/p4switch-ebpf.md: the P4 program sees no queue (enq_qdepth/deq_qdepth read 0), and the
qdisc marks no ECN."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

HTB_QUANTUM = 1514


class QdiscError(RuntimeError):
    """tc refused a qdisc change (its message)."""


def _tc(*args: str) -> str:
    r = subprocess.run(["tc", *args], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise QdiscError(f"tc {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def configure(ifname: str, rate_bps: float | None, depth: int) -> None:
    """Serve ``ifname``'s egress at ``rate_bps`` (None: line rate) from a FIFO of ``depth``
    packets."""
    _tc("qdisc", "del", "dev", ifname, "root") if _has_root(ifname) else None
    if rate_bps:
        rate = f"{int(rate_bps)}bit"
        _tc("qdisc", "add", "dev", ifname, "root", "handle", "1:", "htb", "default", "1")
        _tc("class", "add", "dev", ifname, "parent", "1:", "classid", "1:1", "htb", "rate",
            rate, "ceil", rate, "burst", str(HTB_QUANTUM), "cburst", str(HTB_QUANTUM),
            "quantum", str(HTB_QUANTUM))
        _tc("qdisc", "add", "dev", ifname, "parent", "1:1", "handle", "10:", "pfifo", "limit",
            str(depth))
    else:
        _tc("qdisc", "add", "dev", ifname, "root", "handle", "10:", "pfifo", "limit",
            str(depth))


def _has_root(ifname: str) -> bool:
    try:
        qs = json.loads(_tc("-j", "qdisc", "show", "dev", ifname) or "[]")
    except (QdiscError, json.JSONDecodeError):
        return False
    return any(q.get("root") and q.get("kind") not in ("noqueue", "") for q in qs)


@dataclass
class QueueReading:
    """The port's FIFO (handle 10:) now: packets queued, sent, dropped at the tail."""

    backlog_packets: int = 0
    backlog_bytes: int = 0
    sent_packets: int = 0
    drops: int = 0


def read(ifname: str) -> QueueReading:
    try:
        qs = json.loads(_tc("-j", "-s", "qdisc", "show", "dev", ifname) or "[]")
    except (QdiscError, json.JSONDecodeError):
        return QueueReading()
    for q in qs:
        if q.get("handle") == "10:":
            return QueueReading(int(q.get("qlen", 0)), int(q.get("backlog", 0)),
                                int(q.get("packets", 0)), int(q.get("drops", 0)))
    return QueueReading()
