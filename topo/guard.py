"""The fidelity guard: is an emulated run a property of the scheme, or of the machine?

Per run, the Mininet backend measures what the emulation hides from the P4 program
(topo/probes.py): frames dropped outside the pipeline (the switches' AF_PACKET
receive buffers, the hosts' qdiscs, the veths), the time frames wait in the kernel before the
pipeline sees them (ingress lag) next to the queueing delay the P4 egress queues do show, the
hosts' pacing lag, and how busy the switch processes were. :func:`judge` turns those figures
into ``valid`` and the reasons why not, against the thresholds below. Invalid runs stay on
disk and in the fidelity section of the report, but not in the rankings (unless asked).

Thresholds (docs/experiments.md, "Fidelity guard"):

=====================  ==========================================================  =========
check                  invalid when                                                constant
=====================  ==========================================================  =========
hidden drops           drops outside the pipeline > 0.1 % of the frames switched   HIDDEN_DROP_FRACTION
uncounted loss         data frames lost beyond every drop counted > 0.1 % of them   HIDDEN_DROP_FRACTION
host receive socket    any datagram dropped at an agent's receive socket            (none allowed)
hidden queue           ingress lag p99 > max(25 % of the P4 egress delay p99,      LAG_RATIO,
                       1 frame time at the link rate)                              LAG_FLOOR_FRAMES
host pacing            send lag p99 > 4 frame times at the link rate               SEND_LAG_FRAMES
switch CPU             a switch process used > 90 % of a core over the run         SWITCH_CPU_MAX
false link-down        the failure loop declared a link down that was not cut      (none allowed)
=====================  ==========================================================  =========

Drop sites (:class:`Measures`, :meth:`Measures.sites`): every place a frame can die between
one agent's send and another agent's receive is counted, and the run's data frames sent minus
those that arrived must not exceed them (the accounting closes). The P4 egress queues' tail
drops and the program's own drops are results — congestion and the program's decisions, what
a hardware switch with the same queues would do — and never invalidate a run; every other
site is hidden from the P4 program (the switches' sockets and their own discards, the veths,
the hosts' qdiscs, IP/UDP stacks and agents) and counts as hidden drops — except frames that
reach a host whose agent is not listening (yet: the start barrier's beacons to a peer that has
not opened its socket; or any more), which the run's protocol expects.

A drop at an agent's receive socket invalidates a run however few: its buffer (16 MiB) holds
thousands of frames, so one drop there means the agent fell that far behind its arrivals —
a hidden queue far longer than any P4 queue.

Why these. A frame time is the serialisation of one MTU frame at the link rate the emulation
runs (fabric rate ÷ TDF). Frames reach a port at most one per frame time, so an ingress lag of
L holds at most L / frame time frames in the socket (Little's law): the hidden queue in frames,
next to the P4 egress queue's delay in the same units. It is small when it is under a quarter
of the egress delay the program does see, or under one frame time — the store-and-forward delay
every real switch adds before its pipeline sees a frame, so a lag below it cannot hold back or
reorder anything a hardware switch would not. The host's pacer may wake late by 4 frame times
at its p99 (a late wake delays that send and the next, the host's rate dips by < 1 %). Each
figure is a quantile over every frame (common/histogram.py), within ``RELATIVE_ERROR`` (3.1 %)
of the true one; a verdict that close to its threshold is said to be marginal in the reason.
With the switches at real-time priority (topo/priority.py) the demo's ring at 4 Mb/s
(TDF 25,000, load average 9) had an ingress lag p99 of 0.53 ms (0.17 frame times) against an
egress delay p99 of 7.0 ms, and a send lag p99 of 3.8 ms (1.2 frame times); at 8 Mb/s the hosts
could no longer pace (8.1 ms > 5.9 ms).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from common.histogram import RELATIVE_ERROR, LogHistogram
from common.jsontypes import JsonObject

if TYPE_CHECKING:
    from controller.fabric import ControlEvent
    from traffic.metrics import RankMetrics

HIDDEN_DROP_FRACTION = 0.001
LAG_RATIO = 0.25
LAG_FLOOR_FRAMES = 1.0
SEND_LAG_FRAMES = 4.0
SWITCH_CPU_MAX = 0.90
STEAL_NOTE = 0.05
"""An invalid run's reason names the CPU steal over the run from this share up. On this
project's 2-core VM four of demo.yaml's MoE runs measured 0.6-4.8 % (all valid); during a
make demo whose vmstat showed the host taking 24-41 %, 7 of its 15 ring runs were invalid
(hosts cannot pace), and nothing in the run said why."""


@dataclass
class Measures:
    """One run's hidden figures on the emulation's clock (µs of wall time)."""

    frames_switched: int = 0
    """Frames the switch sockets received (the denominator of the drop fraction)."""
    socket_drops: int = 0
    qdisc_drops: int = 0
    veth_drops: int = 0
    ingress_lag_us: LogHistogram = field(default_factory=LogHistogram)
    egress_delay_us: LogHistogram = field(default_factory=LogHistogram)
    tail_drops: int = 0
    """Packets the P4 egress queues tail-dropped (full): congestion, a result of the run."""
    trims: int = 0
    """Packets the P4 egress queues trimmed to their headers (full, ``fabric.trim``): a
    result of the run, as tail drops; the receivers NACK them, nothing is lost."""
    pipeline_drops: dict[str, int] = field(default_factory=dict)
    """Drops the P4 pipeline reported, by reason (mark_to_drop, parser_error, ...): the
    program's decisions, a result."""
    switch_discards: dict[str, int] = field(default_factory=dict)
    """Frames the switches dropped around the program (too short/long, no program, no port,
    pipeline exceptions, flushes; p4switch.hidden.SwitchDropSites)."""
    host_stack: dict[str, int] = field(default_factory=dict)
    """The hosts' IP/UDP stack drops (topo.probes.STACK_COUNTERS)."""
    agent_drops: dict[str, int] | None = None
    """The agents' own counts summed (traffic.metrics.RankMetrics.agent_drops); None: not
    reported."""
    data_sent: int | None = None
    """Data frames the agents sent over the network (first transmissions and resends)."""
    data_arrived: int | None = None
    """Data frames that reached a receiving agent's flow (duplicates included)."""
    send_lag_us: LogHistogram | None = None
    """None: the hosts' agents did not report their pacing lag."""
    switch_cpu: dict[str, float] = field(default_factory=dict)
    """Per switch process: CPU seconds over wall seconds (1.0 = a whole core)."""
    machine_busy: float | None = None
    """Share of all cores busy over the run (everything on the machine, for context)."""
    machine_steal: float | None = None
    """Share of all cores' time over the run that a virtual machine's host gave to someone
    else (/proc/stat steal): the run lost it whatever the fabric did. Context, not a reason:
    what it costs shows up as lag, which the guard judges; an invalid run names it, so that
    a noisy host is not read as a fault of the emulation."""
    false_link_downs: list[str] = field(default_factory=list)
    """Links the controller's failure loop declared down during the run that the run did not
    cut (``a-b``): their probes came late, and the loop rerouted live links (runs.verdict)."""

    def sites(self) -> dict[str, int]:
        """Drops per site, each counted once (see SITES)."""
        stack = self.host_stack
        agent = self.agent_drops or {}
        return {
            "p4_queue": self.tail_drops,
            "p4_pipeline": sum(self.pipeline_drops.values()),
            "switch_socket": self.socket_drops,
            "switch_discard": sum(self.switch_discards.values()),
            "veth": self.veth_drops,
            # the qdisc's drops are refused sends of the agent too: the union is at least
            # the larger of the two
            "host_send": max(self.qdisc_drops, agent.get("tx_refused") or 0),
            # udp_in_errors holds udp_rcvbuf, which counts the agents' sockets' overflows
            "host_stack": sum(v for k, v in stack.items() if k.startswith("ip_"))
            + max(0, stack.get("udp_in_errors", 0) - stack.get("udp_rcvbuf", 0))
            + self.receive_socket_drops,
            "agent_malformed": agent.get("rx_malformed") or 0,
            "no_listener": stack.get("udp_no_port", 0),
        }

    @property
    def hidden_drops(self) -> int:
        """Drops at the sites that are fidelity faults (FAULT_SITES): hidden from the P4
        program and no part of the run's protocol."""
        return sum(v for k, v in self.sites().items() if k in FAULT_SITES)

    @property
    def receive_socket_drops(self) -> int:
        """Datagrams dropped at the agents' receive sockets (the kernel's UDP RcvbufErrors,
        or the sockets' own count: the larger)."""
        agent = self.agent_drops or {}
        return max(self.host_stack.get("udp_rcvbuf", 0), agent.get("udp_socket_drops") or 0)

    @property
    def uncounted(self) -> int | None:
        """Data frames lost beyond every drop counted anywhere (ACKs and beacons that died are
        among the counted drops, so a closed account has 0); None: not measured. A frame a
        switch trimmed reaches its receiver as headers only, which NACKs it rather than count
        it as an arrival: accounted by ``trims``."""
        if self.data_sent is None or self.data_arrived is None:
            return None
        lost = self.data_sent - self.data_arrived
        return max(0, lost - self.trims - sum(self.sites().values()))


SITES = {"p4_queue": "P4 egress queue full (tail drop): congestion",
         "p4_pipeline": "the P4 program dropped it (mark_to_drop, parser error, ...)",
         "switch_socket": "a switch's AF_PACKET socket: receive buffer full, or a send refused",
         "switch_discard": "a switch discarded it around the program (size, no program/port)",
         "veth": "a veth's rx/tx_dropped (a peer's backlog full)",
         "host_send": "a host's qdisc, or a send its kernel refused (the agent's count)",
         "host_stack": "a host's IP/UDP stack: receive buffer full, bad header or address",
         "agent_malformed": "the agent discarded it: too short, another wire version",
         "no_listener": "no agent listened on the host yet or any more (the start "
                        "barrier's beacons, resends after the receiver left)"}
"""Every drop site a run accounts, with what it means (runs.csv has ``drops_<site>``)."""
RESULT_SITES = frozenset({"p4_queue", "p4_pipeline"})
"""Sites the P4 program sees or decides: results of the run, not fidelity faults."""
FAULT_SITES = frozenset(SITES) - RESULT_SITES - {"no_listener"}
"""Sites hidden from the P4 program that lose what the run needed: they count against
validity. (A frame for an agent not listening is the start barrier at work — an agent beacons
peers that have not opened their socket yet — or a copy the receiver no longer needed.)"""


@dataclass(frozen=True, slots=True)
class GuardRow:
    """The guard's columns of one run, as runs.csv, a CollectiveRun and the calibration's
    probe rows carry them (fabric µs where a time, with the TDF applied). A backend with
    nothing hidden to measure (the simulator) has only the verdict and its queues' tail drops:
    ``measured`` False, and its row has no other columns."""

    valid: bool
    invalid_reason: str | None
    drops: dict[str, int] = field(default_factory=dict)
    """Drops by site (``SITES``; columns ``drops_<site>``)."""
    measured: bool = True
    hidden_drops: int | None = None
    socket_drops: int | None = None
    qdisc_drops: int | None = None
    veth_drops: int | None = None
    data_frames_sent: int | None = None
    data_frames_arrived: int | None = None
    data_frames_uncounted: int | None = None
    trims: int | None = None
    """Packets the switches trimmed (``Measures.trims``)."""
    drops_detail: str | None = None
    """The non-zero drop reasons by layer, JSON (None: none)."""
    frames_switched: int | None = None
    ingress_lag_p50_us: float | None = None
    ingress_lag_p99_us: float | None = None
    egress_delay_p99_us: float | None = None
    send_lag_p99_us: float | None = None
    switch_cpu_max: float | None = None
    machine_busy: float | None = None
    machine_steal: float | None = None
    false_link_downs: int | None = None

    @classmethod
    def unmeasured(cls, tail_drops: int | None = None) -> GuardRow:
        """A valid run of a backend that hides nothing (its tail drops are a result)."""
        return cls(True, None, {} if tail_drops is None else {"p4_queue": tail_drops},
                   measured=False)

    def figures(self) -> JsonObject:
        """The columns after ``valid`` and ``invalid_reason``, in runs.csv's order."""
        drops: JsonObject = {f"drops_{k}": v for k, v in self.drops.items()}
        if not self.measured:
            return drops
        return {"hidden_drops": self.hidden_drops, "socket_drops": self.socket_drops,
                "qdisc_drops": self.qdisc_drops, "veth_drops": self.veth_drops, **drops,
                "data_frames_sent": self.data_frames_sent,
                "data_frames_arrived": self.data_frames_arrived,
                "data_frames_uncounted": self.data_frames_uncounted, "trims": self.trims,
                "drops_detail": self.drops_detail, "frames_switched": self.frames_switched,
                "ingress_lag_p50_us": self.ingress_lag_p50_us,
                "ingress_lag_p99_us": self.ingress_lag_p99_us,
                "egress_delay_p99_us": self.egress_delay_p99_us,
                "send_lag_p99_us": self.send_lag_p99_us, "switch_cpu_max": self.switch_cpu_max,
                "machine_busy": self.machine_busy, "machine_steal": self.machine_steal,
                "false_link_downs": self.false_link_downs}

    def to_dict(self) -> JsonObject:
        return {"valid": self.valid, "invalid_reason": self.invalid_reason, **self.figures()}


@dataclass(frozen=True)
class Verdict:
    valid: bool
    reasons: tuple[str, ...]
    row: GuardRow


def frame_time_us(link_bps: float, mtu: int = 1500) -> float:
    """Serialisation of one MTU frame (+ Ethernet header) at ``link_bps``, µs."""
    return (mtu + 14) * 8 / link_bps * 1e6


def _fab(wall_us: float, tdf: float) -> str:
    """Wall µs of the emulation as the fabric's time, for a reason a user reads."""
    return f"{wall_us / tdf:.3g} µs"


def _marginal(value: float, threshold: float) -> str:
    """A note when a quantile is within the histogram's resolution of its threshold."""
    return " (marginal: within the histogram's resolution)" \
        if value <= threshold * (1 + RELATIVE_ERROR) else ""


def judge(m: Measures, link_bps: float, tdf: float = 1.0, mtu: int = 1500,
          headroom: float = 1.0) -> Verdict:
    """``valid`` and the reasons why not; ``link_bps`` is the emulated link rate (bits/s).
    ``headroom`` < 1 scales every threshold down (calibration asks for a margin, so that the
    experiment's runs at the rate it picks stay valid)."""
    frame = frame_time_us(link_bps, mtu) * headroom
    reasons = []
    drop_limit = HIDDEN_DROP_FRACTION * headroom
    sites = m.sites()
    hidden = m.hidden_drops
    if m.frames_switched and hidden > drop_limit * m.frames_switched:
        where = ", ".join(f"{k} {v}" for k, v in sites.items() if v and k in FAULT_SITES)
        reasons.append(f"{hidden} frames dropped outside the P4 pipeline "
                       f"({where}; > {drop_limit:.2%} of {m.frames_switched})")
    rcv = m.receive_socket_drops
    if rcv:
        reasons.append(f"{rcv} datagrams dropped at a host's receive socket (an agent fell a "
                       "whole socket buffer behind its arrivals: a hidden queue)")
    uncounted = m.uncounted
    if uncounted and m.data_sent and uncounted > drop_limit * m.data_sent:
        reasons.append(f"{uncounted} data frames lost where no drop was counted "
                       f"({m.data_sent - (m.data_arrived or 0)} lost, "
                       f"{sum(sites.values())} drops counted at any site)")
    lag99 = m.ingress_lag_us.quantile(0.99)
    egress99 = m.egress_delay_us.quantile(0.99)
    allowed = max(LAG_RATIO * headroom * egress99, LAG_FLOOR_FRAMES * frame)
    if m.ingress_lag_us.n and lag99 > allowed:
        reasons.append(f"hidden queue: ingress lag p99 {_fab(lag99, tdf)} > "
                       f"{_fab(allowed, tdf)} (fabric time; P4 egress delay p99 "
                       f"{_fab(egress99, tdf)})" + _marginal(lag99, allowed))
    send_lag = m.send_lag_us
    send99 = send_lag.quantile(0.99) if send_lag is not None else None
    if send_lag is not None and send99 is not None and send_lag.n \
            and send99 > SEND_LAG_FRAMES * frame:
        reasons.append(f"hosts cannot pace: send lag p99 {_fab(send99, tdf)} > "
                       f"{SEND_LAG_FRAMES:g} frame times ({_fab(SEND_LAG_FRAMES * frame, tdf)} "
                       "fabric time)" + _marginal(send99, SEND_LAG_FRAMES * frame))
    cpu_max = SWITCH_CPU_MAX * headroom
    hot = {s: c for s, c in m.switch_cpu.items() if c > cpu_max}
    if hot:
        top = max(hot, key=hot.__getitem__)
        reasons.append(f"CPU-bound: {len(hot)} switch process(es) above "
                       f"{cpu_max:.0%} of a core ({top} {hot[top]:.0%})")

    if m.false_link_downs:
        links = sorted(set(m.false_link_downs))
        reasons.append(f"control plane lagged: the failure loop declared {len(links)} live "
                       f"link(s) down and rerouted ({', '.join(links[:4])}"
                       f"{' ...' if len(links) > 4 else ''}): probes late by its miss periods")

    detail = {name: {k: v for k, v in d.items() if v} for name, d in
              (("pipeline", m.pipeline_drops), ("switch_discards", m.switch_discards),
               ("host_stack", m.host_stack), ("agents", m.agent_drops or {}))}
    detail = {k: d for k, d in detail.items() if d}

    def fab(us: float | None) -> float | None:
        return None if us is None else us / tdf

    why = "; ".join(reasons) or None
    steal = m.machine_steal
    if why and steal is not None and steal >= STEAL_NOTE:
        why += f" (CPU steal {steal:.0%}: the virtual machine's host took it)"
    row = GuardRow(not reasons, why, dict(sites), hidden_drops=hidden,
                   socket_drops=m.socket_drops, qdisc_drops=m.qdisc_drops,
                   veth_drops=m.veth_drops, data_frames_sent=m.data_sent,
                   data_frames_arrived=m.data_arrived, data_frames_uncounted=uncounted,
                   trims=m.trims,
                   drops_detail=json.dumps(detail, sort_keys=True) if detail else None,
                   frames_switched=m.frames_switched,
                   ingress_lag_p50_us=fab(m.ingress_lag_us.quantile(0.5)),
                   ingress_lag_p99_us=fab(lag99), egress_delay_p99_us=fab(egress99),
                   send_lag_p99_us=fab(send99),
                   switch_cpu_max=max(m.switch_cpu.values()) if m.switch_cpu else None,
                   machine_busy=m.machine_busy, machine_steal=steal,
                   false_link_downs=len(set(m.false_link_downs)))
    return Verdict(not reasons, tuple(reasons), row)


def judge_run(m: Measures, ranks: Sequence[RankMetrics], events: Sequence[ControlEvent],
              link_bps: float, tdf: float = 1.0, mtu: int = 1500,
              cut_link: tuple[str, str] | None = None, headroom: float = 1.0,
              down_links: Collection[tuple[str, str]] = ()) -> Verdict:
    """:func:`judge` on one run: ``m`` (the fabric's probes) completed with what the hosts'
    agents reported in their rank records (pacing lag, own drops, frames sent and arrived)
    and the failure loop's events (a live link declared down); ``link_bps`` is the emulated
    link rate, ``cut_link`` the link the run cut on purpose, ``down_links`` links cut before
    it (a session's ``cut``: not live, so the failure loop is right to find them down)."""
    lags = [r.send_lag_us for r in ranks if r.send_lag_us]
    if lags:
        m.send_lag_us = LogHistogram()
        for h in lags:
            m.send_lag_us.merge(h)
    account_agents(m, ranks)
    m.false_link_downs = false_link_downs(events, cut_link, down_links)
    return judge(m, link_bps, tdf, mtu, headroom)


_DOWN = re.compile(r"^link (\S+?):\d+-(\S+?):\d+ down\b")


def false_link_downs(events: Sequence[ControlEvent],
                     cut_link: tuple[str, str] | None = None,
                     down_links: Collection[tuple[str, str]] = ()) -> list[str]:
    """The links (``a-b``, sorted names) the failure loop declared down in a run's events
    other than the one the run cuts (``cut_link``; none when it cuts nothing) and those cut
    before it (``down_links``)."""
    cut = {frozenset(lk) for lk in down_links}
    if cut_link is not None:
        cut.add(frozenset(cut_link))
    out = []
    for e in events:
        if e.loop != "failure":
            continue
        mt = _DOWN.match(e.what)
        if mt and frozenset(mt.groups()) not in cut:
            out.append("-".join(sorted(mt.groups())))
    return out


def account_agents(m: Any, ranks: Sequence[RankMetrics]) -> None:
    """The agents' side of a run's drop accounting into ``m`` (guard.Measures): their own
    drop counts, and (UDP transport) the data frames they sent over the network and those
    that arrived."""
    agents = [r.agent_drops for r in ranks if r.agent_drops]
    if agents:
        m.agent_drops = {}
        for a in agents:
            for k, v in a.items():
                if v is not None:
                    m.agent_drops[k] = m.agent_drops.get(k, 0) + int(v)
    # the agent's own transport only: TCP's segment counts come from the kernel's TCP_INFO,
    # and its stack's own drops (TcpExt) are not among the sites
    if ranks and all(r.transport == "udp" for r in ranks):
        m.data_sent = sum(f.packets_sent for r in ranks for f in r.flows if not f.local)
        m.data_arrived = sum(x.arrivals for r in ranks for x in r.received)
