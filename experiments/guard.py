"""The fidelity guard: is an emulated run a property of the scheme, or of the machine?

Per run, the Mininet backend measures what the emulation hides from the P4 program
(experiments/probes.py): frames dropped outside the pipeline (the switches' AF_PACKET
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
hidden queue           ingress lag p99 > max(25 % of the P4 egress delay p99,      LAG_RATIO,
                       1 frame time at the link rate)                              LAG_FLOOR_FRAMES
host pacing            send lag p99 > 4 frame times at the link rate               SEND_LAG_FRAMES
switch CPU             a switch process used > 90 % of a core over the run         SWITCH_CPU_MAX
=====================  ==========================================================  =========

Why these. A frame time is the serialisation of one MTU frame at the link rate the emulation
runs (fabric rate ÷ TDF). Frames reach a port at most one per frame time, so an ingress lag of
L holds at most L / frame time frames in the socket (Little's law): the hidden queue in frames,
next to the P4 egress queue's delay in the same units. It is small when it is under a quarter
of the egress delay the program does see, or under one frame time — the store-and-forward delay
every real switch adds before its pipeline sees a frame, so a lag below it cannot hold back or
reorder anything a hardware switch would not. The host's pacer may wake late by 4 frame times
at its p99 (a late wake delays that send and the next, the host's rate dips by < 1 %). Each
figure is a quantile over every frame (p4switch/hidden.py), within ``RELATIVE_ERROR`` (3.1 %)
of the true one; a verdict that close to its threshold is said to be marginal in the reason.
With the switches at real-time priority (experiments/priority.py) the demo's ring at 4 Mb/s
(TDF 25,000, load average 9) had an ingress lag p99 of 0.53 ms (0.17 frame times) against an
egress delay p99 of 7.0 ms, and a send lag p99 of 3.8 ms (1.2 frame times); at 8 Mb/s the hosts
could no longer pace (8.1 ms > 5.9 ms).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4switch.hidden import RELATIVE_ERROR, LogHistogram

HIDDEN_DROP_FRACTION = 0.001
LAG_RATIO = 0.25
LAG_FLOOR_FRAMES = 1.0
SEND_LAG_FRAMES = 4.0
SWITCH_CPU_MAX = 0.90


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
    send_lag_us: LogHistogram | None = None
    """None: the hosts' agents did not report their pacing lag."""
    switch_cpu: dict[str, float] = field(default_factory=dict)
    """Per switch process: CPU seconds over wall seconds (1.0 = a whole core)."""
    machine_busy: float | None = None
    """Share of all cores busy over the run (everything on the machine, for context)."""

    @property
    def hidden_drops(self) -> int:
        return self.socket_drops + self.qdisc_drops + self.veth_drops


@dataclass(frozen=True)
class Verdict:
    valid: bool
    reasons: tuple[str, ...]
    row: dict[str, Any]
    """The figures for runs.csv (fabric µs where a time, with the TDF applied)."""


def frame_time_us(link_bps: float, mtu: int = 1500) -> float:
    """Serialisation of one MTU frame (+ Ethernet header) at ``link_bps``, µs."""
    return (mtu + 14) * 8 / link_bps * 1e6


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
    if m.frames_switched and m.hidden_drops > drop_limit * m.frames_switched:
        reasons.append(f"{m.hidden_drops} frames dropped outside the P4 pipeline "
                       f"(socket {m.socket_drops}, qdisc {m.qdisc_drops}, veth {m.veth_drops}; "
                       f"> {drop_limit:.2%} of {m.frames_switched})")
    lag99 = m.ingress_lag_us.quantile(0.99)
    egress99 = m.egress_delay_us.quantile(0.99)
    allowed = max(LAG_RATIO * headroom * egress99, LAG_FLOOR_FRAMES * frame)
    if m.ingress_lag_us.n and lag99 > allowed:
        reasons.append(f"hidden queue: ingress lag p99 {lag99 / 1e3:.2f} ms > "
                       f"{allowed / 1e3:.2f} ms (P4 egress delay p99 {egress99 / 1e3:.2f} ms)"
                       + _marginal(lag99, allowed))
    send_lag = m.send_lag_us
    send99 = send_lag.quantile(0.99) if send_lag is not None else None
    if send_lag is not None and send99 is not None and send_lag.n \
            and send99 > SEND_LAG_FRAMES * frame:
        reasons.append(f"hosts cannot pace: send lag p99 {send99 / 1e3:.2f} ms > "
                       f"{SEND_LAG_FRAMES:g} frame times ({SEND_LAG_FRAMES * frame / 1e3:.2f} ms)"
                       + _marginal(send99, SEND_LAG_FRAMES * frame))
    cpu_max = SWITCH_CPU_MAX * headroom
    hot = {s: c for s, c in m.switch_cpu.items() if c > cpu_max}
    if hot:
        top = max(hot, key=hot.__getitem__)
        reasons.append(f"CPU-bound: {len(hot)} switch process(es) above "
                       f"{cpu_max:.0%} of a core ({top} {hot[top]:.0%})")

    def fab(us: float | None) -> float | None:
        return None if us is None else us / tdf

    row = {"valid": not reasons, "invalid_reason": "; ".join(reasons) or None,
           "hidden_drops": m.hidden_drops, "socket_drops": m.socket_drops,
           "qdisc_drops": m.qdisc_drops, "veth_drops": m.veth_drops,
           "frames_switched": m.frames_switched,
           "ingress_lag_p50_us": fab(m.ingress_lag_us.quantile(0.5)),
           "ingress_lag_p99_us": fab(lag99), "egress_delay_p99_us": fab(egress99),
           "send_lag_p99_us": fab(send99),
           "switch_cpu_max": max(m.switch_cpu.values()) if m.switch_cpu else None,
           "machine_busy": m.machine_busy}
    return Verdict(not reasons, tuple(reasons), row)
