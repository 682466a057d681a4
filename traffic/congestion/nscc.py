"""NSCC: a window driven by delay against a target, with ECN (UEC-NSCC / Swift-like).

Swift (Kumar et al., SIGCOMM 2020) keeps the RTT at a target delay: below it the window grows
additively (``ai`` packets per RTT), above it it shrinks by β·(delay − target)/delay, at most
``max_mdf``, once per RTT. The Ultra Ethernet transport's NSCC (UEC 1.0 specification,
network-signal congestion control) combines that delay signal with ECN in four quadrants; we
follow its logic: no mark and low delay → increase (additively, plus a part proportional to
how far below target the delay is); mark and high delay → multiplicative decrease; mark with
low delay (a queue starting) or high delay without marks (a queue draining) → hold.
The target is the fabric's base RTT plus ``target_qdelay_pkts`` packet times at line rate, so
it needs no per-fabric constant in seconds. The base RTT is the configuration's (CcContext,
from the topology, as UEC configures it); without one, the lowest RTT the flow has seen —
which a flow that starts into a standing queue overestimates and then never yields (the
latecomer advantage of delay-based control), hence the configured value.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import CcContext, WindowControl, check_window, register


@dataclass(frozen=True)
class NsccParams:
    """``target_qdelay_pkts``: queueing delay the flow aims for, in packet times at line rate
    (8: a few µs at 100 Gb/s, like Swift's fabric target); ``ai``: additive increase, packets
    per RTT (Swift: 1); ``pi``: proportional increase gain (UEC NSCC's proportional term,
    0: off); ``beta``: multiplicative-decrease gain (Swift: 0.8); ``max_mdf``: largest cut in
    one RTT (Swift: 0.5); ``init_cwnd``/``min_cwnd``: packets. With the fabric's base RTT
    known (CcContext.base_rtt), ``init_bdp`` > 0 starts at that many bandwidth-delay products
    instead of ``init_cwnd``, and ``target_qdelay_rtts`` > 0 sets the queueing target to that
    fraction of the base RTT instead of ``target_qdelay_pkts`` (``UEC_PRESET``)."""

    target_qdelay_pkts: float = 8.0
    ai: float = 1.0
    pi: float = 4.0
    beta: float = 0.8
    max_mdf: float = 0.5
    init_cwnd: float = 16.0
    min_cwnd: float = 2.0
    init_bdp: float = 0.0
    target_qdelay_rtts: float = 0.0

    def check(self) -> None:
        if not 0 < self.max_mdf < 1:
            raise ValueError(f"max_mdf: must be in (0, 1), got {self.max_mdf}")
        check_window(self)


UEC_PRESET: dict[str, float] = {"init_bdp": 1.5, "target_qdelay_rtts": 0.75}
"""htsim's UEC NSCC starting point with trimming on (uet-htsim's uec.cpp: a window of 1.5 BDP,
a queueing-delay target of 0.75 of the fabric's unloaded RTT); ``uec_preset`` for either case,
``python -m sim --cc-preset uec``. The rest of htsim's NSCC (fast, fair and proportional
increase, quick decrease, quick adapt) is not this Swift-like window's (docs/htsim.md)."""


def uec_preset(trimming: bool = True) -> dict[str, float]:
    """``UEC_PRESET`` for a fabric with or without trimming: htsim aims at 0.75 of the RTT when
    its switches trim and at the whole RTT when they drop (``-disable_trim``)."""
    return {**UEC_PRESET, "target_qdelay_rtts": 0.75 if trimming else 1.0}


@register
class Nscc(WindowControl):
    name = "nscc"
    uses_ecn = True
    Params = NsccParams

    def __init__(self, params: NsccParams, ctx: CcContext) -> None:
        super().__init__(params, ctx)
        self.base_rtt: float | None = ctx.base_rtt or None
        self._measure_base = not ctx.base_rtt
        self.delay: float | None = None   # the latest RTT sample
        self._qtarget = params.target_qdelay_pkts * ctx.packet_bytes * 8 / ctx.line_rate_bps
        if ctx.base_rtt and params.target_qdelay_rtts:
            self._qtarget = params.target_qdelay_rtts * ctx.base_rtt
        if ctx.base_rtt and params.init_bdp:
            bdp = ctx.line_rate_bps / 8 * ctx.base_rtt / ctx.packet_bytes
            self.cwnd = max(self.floor, min(params.init_bdp * bdp, self.cap))
        self._target: float | None = None if self.base_rtt is None else self.base_rtt + self._qtarget

    @property
    def target(self) -> float | None:
        """The delay the flow aims for: base RTT + the queueing target (None: no base yet)."""
        return self._target

    def on_ack(self, now: float, acked: int, marked: int, rtt: float | None) -> None:
        # hot path (every ACK): WindowControl's _acked inlined, the target kept, not derived
        if acked <= 0:
            return
        hold = self._hold_left - acked
        self._hold_left = hold if hold > 0 else 0.0
        if rtt is not None:
            if self._measure_base:
                b = rtt if self.base_rtt is None else min(self.base_rtt, rtt)
                self.base_rtt = b
                self._target = b + self._qtarget
            self.delay = rtt
        delay, target = self.delay, self._target
        if delay is None or target is None:
            return
        if delay <= target:
            if not marked:
                p = self.p
                cwnd = self.cwnd
                cwnd += (p.ai + p.pi * (target - delay) / target) * acked / cwnd
                self.cwnd = cwnd if cwnd < self.cap else self.cap
        elif marked:
            p = self.p
            self._cut(max(1 - p.beta * (delay - target) / delay, 1 - p.max_mdf))

    def on_nack(self, now: float) -> None:
        self._cut(1 - self.p.max_mdf)

    def on_trim_nack(self, now: float) -> None:
        """UEC NSCC's NACK decrease (uet-htsim's ``updateCwndOnNack_NSCC``): every trimmed
        packet takes one packet off the window, no cut held. A once-per-window cut left an
        incast's windows where they were until its first window was acknowledged, which under
        trimming took hundreds of µs, trimming all the while."""
        self.cwnd = max(self.floor, self.cwnd - 1)

    def on_timeout(self, now: float) -> None:
        self._collapse()
