"""Reads what the fidelity guard judges (topo/guard.py) off a running Mininet fabric:
a snapshot before and after each run, and the difference as guard.Measures.

Sources: each p4switch's ``hidden_stats`` over its control socket (kernel socket drops,
ingress lag, egress queueing delay, refused sends, and its drop sites: egress tail drops,
pipeline drops, its own discards), the veths' drop counters in sysfs (switch ends in the root
namespace, host ends inside each host), each host's qdisc drops (``tc -s``) and IP/UDP stack
drops (/proc/net/snmp of its namespace: a full receive buffer, no socket on the port, bad
headers), the switch processes' CPU time (/proc/PID/stat) and the machine's (/proc/stat). A
probe that fails is recorded in ``errors`` and leaves its figure out, never the run.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.histogram import LogHistogram

from .guard import Measures

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_QDISC_DROPPED = re.compile(r"dropped (\d+)")
HOST_PROBE = ("cat /sys/class/net/eth0/statistics/rx_dropped "
              "/sys/class/net/eth0/statistics/tx_dropped; tc -s qdisc show dev eth0; "
              "cat /proc/net/snmp")
STACK_COUNTERS = {("Ip", "InHdrErrors"): "ip_in_hdr_errors",
                  ("Ip", "InAddrErrors"): "ip_in_addr_errors",
                  ("Ip", "InDiscards"): "ip_in_discards",
                  ("Ip", "OutDiscards"): "ip_out_discards",
                  ("Udp", "NoPorts"): "udp_no_port",
                  ("Udp", "RcvbufErrors"): "udp_rcvbuf",
                  ("Udp", "InErrors"): "udp_in_errors"}
"""A host's IP/UDP stack drops (/proc/net/snmp, RFC 4293 / RFC 4113 names): frames the host
kernel received and never handed to the agent. ``udp_in_errors`` includes ``udp_rcvbuf``
(the socket's buffer was full) and checksum errors; ``udp_no_port``: no socket listened (an
agent that had already exited)."""


@dataclass
class Snapshot:
    t: float
    hidden: dict[str, dict[str, Any]] = field(default_factory=dict)
    cpu_ticks: dict[str, int] = field(default_factory=dict)
    machine: tuple[int, int, int] | None = None
    """(busy, total, steal) jiffies of all cores; steal (proc(5)'s 8th field) is time a
    virtual machine's host gave the CPU to someone else."""
    veth_drops: int = 0
    qdisc_drops: int = 0
    host_stack: dict[str, int] = field(default_factory=dict)
    """STACK_COUNTERS summed over the run's hosts."""
    errors: list[str] = field(default_factory=list)


def process_ticks(pid: int) -> int | None:
    """utime + stime of a process, in clock ticks (None: gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[11]) + int(fields[12])   # fields 14 and 15 of proc(5), after comm


def machine_ticks() -> tuple[int, int, int] | None:
    """(busy, total, steal) jiffies of all cores since boot, from /proc/stat's cpu line."""
    try:
        vals = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return sum(vals) - idle, sum(vals), vals[7] if len(vals) > 7 else 0


def _sysfs_int(path: str) -> int:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return 0


def parse_host_probe(text: str) -> tuple[int, int]:
    """(veth drops, qdisc drops) from HOST_PROBE's output."""
    lines = text.split("\n")
    nums = [int(x) for x in lines[:2] if x.strip().isdigit()]
    return sum(nums), sum(int(x) for x in _QDISC_DROPPED.findall(text))


def parse_snmp(text: str) -> dict[str, int]:
    """STACK_COUNTERS from /proc/net/snmp's text (pairs of lines: ``Ip: names...`` then
    ``Ip: values...``); counters it does not hold are left out."""
    out: dict[str, int] = {}
    header: dict[str, list[str]] = {}
    for line in text.splitlines():
        proto, sep, rest = line.partition(":")
        if not sep or proto not in ("Ip", "Udp"):
            continue
        cols = rest.split()
        names = header.pop(proto, None)
        if names is None:   # the names line; the values line follows
            header[proto] = cols
            continue
        for name, value in zip(names, cols, strict=False):
            key = STACK_COUNTERS.get((proto, name))
            if key is not None and value.lstrip("-").isdigit():
                out[key] = int(value)
    return out


class FabricProbe:
    """Snapshots of one FabricNet's hidden figures for the hosts of a run."""

    def __init__(self, net: Any, hosts: list[str]) -> None:
        self.net = net
        self.hosts = hosts

    def snapshot(self) -> Snapshot:
        from p4switch import ControlClient, ControlError

        snap = Snapshot(t=time.monotonic(), machine=machine_ticks())
        for sw in self.net.switches:
            pid = getattr(sw, "proc_pid", None)
            if pid:
                ticks = process_ticks(pid)
                if ticks is not None:
                    snap.cpu_ticks[sw.name] = ticks
            sock = getattr(sw, "control_socket", None)
            if sock is None or type(sw).__name__ not in ("P4Switch", "EbpfP4Switch"):
                continue
            try:
                with ControlClient(str(sock)) as c:
                    snap.hidden[sw.name] = c.hidden_stats()
            except (ControlError, OSError) as e:
                snap.errors.append(f"{sw.name} hidden_stats: {e}")
            for intf in sw.port_intfs().values():
                base = f"/sys/class/net/{intf.name}/statistics"
                snap.veth_drops += _sysfs_int(f"{base}/rx_dropped") + \
                    _sysfs_int(f"{base}/tx_dropped")
        for h in self.hosts:
            try:
                text = self.net.get(h).cmd(HOST_PROBE)
                veth, qdisc = parse_host_probe(text)
            except Exception as e:  # noqa: BLE001 - a host that does not answer: noted
                snap.errors.append(f"{h} drops: {e}")
                continue
            snap.veth_drops += veth
            snap.qdisc_drops += qdisc
            for k, v in parse_snmp(text).items():
                snap.host_stack[k] = snap.host_stack.get(k, 0) + v
        return snap


def measures(before: Snapshot, after: Snapshot) -> Measures:
    """What happened between two snapshots."""
    m = Measures(veth_drops=max(0, after.veth_drops - before.veth_drops),
                 qdisc_drops=max(0, after.qdisc_drops - before.qdisc_drops),
                 host_stack={k: max(0, v - before.host_stack.get(k, 0))
                             for k, v in after.host_stack.items()})
    wall = max(after.t - before.t, 1e-9)
    for sw, a in after.hidden.items():
        b = before.hidden.get(sw, {"ports": {}, "egress_delay_us": [], "dequeued": 0})
        for port, pa in a["ports"].items():
            pb = b["ports"].get(port, {})
            m.frames_switched += pa["kernel_packets"] - pb.get("kernel_packets", 0)
            m.socket_drops += (pa["kernel_drops"] - pb.get("kernel_drops", 0)
                               + pa.get("tx_errors", 0) - pb.get("tx_errors", 0))
            m.ingress_lag_us.merge(_diff(pa["ingress_lag_us"], pb.get("ingress_lag_us")))
        sa, sb = a.get("drop_sites"), b.get("drop_sites") or {}
        if sa is not None:
            m.tail_drops += sa["tail_drops"] - sb.get("tail_drops", 0)
            m.trims += sa.get("trimmed", 0) - sb.get("trimmed", 0)
            _add_diff(m.pipeline_drops, sa["pipeline"], sb.get("pipeline", {}))
            _add_diff(m.switch_discards, sa["discards"], sb.get("discards", {}))
        delay = _diff(a["egress_delay_us"], b.get("egress_delay_us"))
        # packets that went straight through an empty queue waited 0 µs
        delay.counts[0] += max(0, a["dequeued"] - b.get("dequeued", 0) - delay.n)
        m.egress_delay_us.merge(delay)
    for sw, ticks in after.cpu_ticks.items():
        if sw in before.cpu_ticks:
            m.switch_cpu[sw] = (ticks - before.cpu_ticks[sw]) / CLK_TCK / wall
    if before.machine and after.machine and after.machine[1] > before.machine[1]:
        total = after.machine[1] - before.machine[1]
        m.machine_busy = (after.machine[0] - before.machine[0]) / total
        m.machine_steal = (after.machine[2] - before.machine[2]) / total
    return m


def _diff(a: Any, b: Any | None) -> LogHistogram:
    """What a histogram (sparse or dense, as ``hidden_stats`` ships it) gained since ``b``."""
    return LogHistogram.of(a).minus(LogHistogram.of(b))


def _add_diff(into: dict[str, int], after: dict[str, int], before: dict[str, int]) -> None:
    """Add what each counter of ``after`` gained since ``before`` to ``into``."""
    for k, v in after.items():
        into[k] = into.get(k, 0) + max(0, v - before.get(k, 0))
