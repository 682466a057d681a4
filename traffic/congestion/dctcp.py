"""DCTCP: a window cut in proportion to the fraction of CE-marked packets.

Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010, and RFC 8257. Once per window of
data the sender updates α ← (1 − g)·α + g·F, where F is the fraction of the packets acknowledged
in that window that were CE-marked; on the first marked ACK of a window it sets
cwnd ← cwnd·(1 − α/2) and does not cut again until that window is acknowledged (CWR). Switches
mark above a step threshold K on the instantaneous queue (fabric.p4's ``ecn_config``; the
paper's guideline K > C·RTT/7, marking.py). Otherwise it is standard TCP (RFC 5681): slow start
below ssthresh, +1 packet per window above it, halving on loss, one packet after a timeout.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import CcContext, WindowControl, check_window, register


@dataclass(frozen=True)
class DctcpParams:
    """``g``: α's EWMA gain (paper §3.1 and RFC 8257: 1/16); ``alpha_init``: α before any
    window was observed — 1, as RFC 8257 §3.3 and Linux's ``dctcp_alpha_on_init`` start, so
    the first marks halve the window. 0 (tried in 8454df8) let a 100 Gb/s ring's first steps
    run at full windows (1.31x instead of 1.42x the ideal bound) but left an incast with no
    brake: demo.yaml's 96 KB MoE AllToAll on the simulator went from 58-63 µs to 210 µs under
    every spraying scheme (14-23 retransmissions instead of 0), and back with 1;
    ``init_cwnd``: initial window, packets (RFC 6928 allows 10; 16 as the simulator's NIC
    started); ``min_cwnd``: floor, packets (at least the receiver's ACK coalescing, or no ACK
    is due until the delayed-ACK timer fires)."""

    g: float = 1.0 / 16
    alpha_init: float = 1.0
    init_cwnd: float = 16.0
    min_cwnd: float = 2.0

    def check(self) -> None:
        if not 0 < self.g <= 1:
            raise ValueError(f"g: must be in (0, 1], got {self.g}")
        if not 0 <= self.alpha_init <= 1:
            raise ValueError(f"alpha_init: must be in [0, 1], got {self.alpha_init}")
        check_window(self)


@register
class Dctcp(WindowControl):
    name = "dctcp"
    uses_ecn = True
    Params = DctcpParams

    def __init__(self, params: DctcpParams, ctx: CcContext) -> None:
        super().__init__(params, ctx)
        self.ssthresh = self.cap
        self.alpha = params.alpha_init
        self._win_acked = 0       # packets acknowledged in the current observation window
        self._win_marked = 0
        self._win_end = self.cwnd  # the observation window ends after this many packets

    def _cut(self, factor: float) -> bool:
        if super()._cut(factor):
            self.ssthresh = self.cwnd
            return True
        return False

    def on_ack(self, now: float, acked: int, marked: int, rtt: float | None) -> None:
        # hot path (every ACK): WindowControl's _acked/_cut inlined, same arithmetic
        if acked <= 0:
            return
        hold = self._hold_left - acked
        self._hold_left = hold = hold if hold > 0 else 0.0
        self._win_acked += acked
        cwnd = self.cwnd
        if marked:
            if marked > acked:
                marked = acked
            self._win_marked += marked
            if hold <= 0:        # one cut per window of data: the one in flight now (CWR)
                self._hold_left = cwnd
                cwnd *= 1 - self.alpha / 2
                if cwnd < self.floor:
                    cwnd = self.floor
                self.ssthresh = cwnd
                self.reductions += 1
        elif cwnd < self.ssthresh:
            cwnd += acked
        else:
            cwnd += acked / cwnd
        self.cwnd = cwnd if cwnd < self.cap else self.cap
        if self._win_acked >= self._win_end:
            g = self.p.g
            self.alpha = (1 - g) * self.alpha + g * self._win_marked / self._win_acked
            self._win_acked = self._win_marked = 0
            self._win_end = self.cwnd

    def on_nack(self, now: float) -> None:
        self._cut(0.5)

    def on_timeout(self, now: float) -> None:
        self.ssthresh = max(self.floor, self.cwnd / 2)
        self._collapse()
