"""DCQCN: the rate-based congestion control of RoCEv2 NICs.

Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015. The reaction
point (the sender) keeps a current rate R_C, a target rate R_T and α. A congestion
notification (CNP) — here: an ACK echoing CE, at most one per ``cnp_interval`` as the
notification point sends them — sets R_T ← R_C, R_C ← R_C·(1 − α/2), α ← (1 − g)·α + g. Without
notifications α decays every K: α ← (1 − g)·α. The rate recovers in increase events, one per
expiry of the timer T and one per B bytes sent (the byte counter); with i_T and i_B events
since the last cut: both below F → fast recovery R_C ← (R_T + R_C)/2; both at least F → hyper
increase R_T += (min(i_T, i_B) − F + 1)·R_HAI; otherwise additive increase R_T += R_AI; then
R_C ← (R_T + R_C)/2. The sender is paced at R_C; RoCE NICs have no window, so the window is the
transport's cap. Switches mark RED-style between K_min and K_max in the paper; fabric.p4 marks
on a step threshold (the K_min = K_max case, marking.py and p4src/README.md).

Timers run lazily: ``advance(now)`` applies every expiry up to ``now`` before a decision, which
equals firing them on time because nothing else reads the rate in between.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import CcContext, CongestionControl, register


@dataclass(frozen=True)
class DcqcnParams:
    """Names and defaults of the DCQCN paper's evaluation: ``g`` = 1/256; ``alpha_timer_us``
    K = 55 µs; ``cnp_interval_us`` N = 50 µs; ``rate_timer_us`` T = 55 µs; ``byte_counter`` B
    = 10 MB; ``f`` F = 5. ``r_ai`` and ``r_hai`` are fractions of the line rate (the paper's
    R_AI = 40 Mb/s at 40 Gb/s is 0.001; R_HAI ten times that), so a time-dilated fabric keeps
    the dynamics; ``min_rate`` likewise; ``window``: packets in flight (0: the transport's);
    ``alpha_init``: 1, as NICs start. Timers in µs (the ``_us`` suffix lets experiments
    dilate them with every other fabric time)."""

    g: float = 1.0 / 256
    alpha_init: float = 1.0
    alpha_timer_us: float = 55.0
    cnp_interval_us: float = 50.0
    rate_timer_us: float = 55.0
    byte_counter: float = 10e6
    f: int = 5
    r_ai: float = 0.001
    r_hai: float = 0.01
    min_rate: float = 0.001
    window: int = 0

    def check(self) -> None:
        if not 0 < self.g <= 1:
            raise ValueError(f"g: must be in (0, 1], got {self.g}")
        for name in ("alpha_timer_us", "rate_timer_us", "byte_counter"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}: must be > 0")
        if not 0 < self.min_rate <= 1:
            raise ValueError("min_rate: must be in (0, 1] (a fraction of the line rate)")


_MAX_CATCH_UP = 10_000
"""Timer expiries applied at most per call (an idle flow back after seconds)."""


@register
class Dcqcn(CongestionControl):
    name = "dcqcn"
    uses_ecn = True
    Params = DcqcnParams

    def __init__(self, params: DcqcnParams, ctx: CcContext) -> None:
        super().__init__(params, ctx)
        self.line = ctx.line_rate_bps
        self.rc = self.rt = self.line
        self.alpha = params.alpha_init
        self._w = float(min(params.window, ctx.max_window) if params.window else ctx.max_window)
        self._last_cnp: float | None = None
        self._alpha_at: float | None = None   # start of the current α period
        self._timer_at: float | None = None   # start of the current rate-increase period
        self.byte_budget = params.byte_counter   # bytes to the next byte-counter event
        self.pace_s_per_byte = 8 / self.rc
        self._i_t = self._i_b = 0
        self.cnps = 0
        self._k = params.alpha_timer_us * 1e-6
        self._t = params.rate_timer_us * 1e-6
        self._n = params.cnp_interval_us * 1e-6
        self._keep = 1 - params.g   # α's decay per K without a CNP
        self._aligned = self._k == self._t   # one count serves both timers (advance)
        # the per-event constants, premultiplied once (advance runs per expiry)
        self._f = params.f
        self._ai = params.r_ai * self.line
        self._hai = params.r_hai * self.line
        self._floor = params.min_rate * self.line
        self.due = -1.0   # before this time no timer can have expired (advance is a no-op)

    @property
    def window(self) -> float:
        return self._w

    @property
    def rate_bps(self) -> float:
        return self.rc

    def advance(self, now: float) -> None:
        # once per timer expiry, not per packet (callers check ``due`` first). Under steady
        # marking the rate sits near its floor and most sends find one expiry due, so this is
        # DCQCN's per-packet work there. With K = T (the default) both periods start together
        # and stay aligned, so one count serves both; the increase events run inline on locals
        # with the parameters premultiplied (``_increase``'s arithmetic, operation for
        # operation) and the pacing gap is recomputed once, from the last rate
        if now < self.due:
            return
        t_at = self._timer_at
        t = self._t
        if t_at is None:                     # the first decision starts both periods
            self._timer_at = self._alpha_at = now
            self.due = now + (t if t < self._k else self._k)
            return
        if self._aligned:
            n = int((now - t_at) / t)        # rate-timer (and α-timer) expiries
            if not n:                        # ``due`` rounded below the period's end
                return
            keep = self._keep
            self.alpha *= keep if n == 1 else keep ** (n if n < _MAX_CATCH_UP else _MAX_CATCH_UP)
            t_at += n * t
            self._timer_at = self._alpha_at = t_at
            self.due = t_at + t
        else:
            k, a_at = self._k, self._alpha_at
            assert a_at is not None
            if now - a_at >= k:
                m = int((now - a_at) / k)
                keep = self._keep
                self.alpha *= keep if m == 1 else keep ** (
                    m if m < _MAX_CATCH_UP else _MAX_CATCH_UP)
                a_at += m * k
                self._alpha_at = a_at
            n = int((now - t_at) / t) if now - t_at >= t else 0
            t_at += n * t
            self._timer_at = t_at
            a_at += k
            t_at += t
            self.due = a_at if a_at < t_at else t_at
            if not n:
                return
        line, rc, rt = self.line, self.rc, self.rt
        if rc >= line and rt >= line:
            return
        f, ai, hai = self._f, self._ai, self._hai
        i_t, i_b = self._i_t, self._i_b
        for _ in range(n if n < _MAX_CATCH_UP else _MAX_CATCH_UP):
            i_t += 1
            if i_t < f and i_b < f:
                pass                                  # fast recovery: towards R_T
            elif i_t >= f and i_b >= f:
                rt += ((i_t if i_t < i_b else i_b) - f + 1) * hai
            else:
                rt += ai
            if rt > line:
                rt = line
            rc = (rt + rc) / 2
            if rc >= line:
                rc = line
                if rt >= line:
                    break
        self._i_t, self.rt, self.rc = i_t, rt, rc
        self.pace_s_per_byte = 8 / rc

    def _increase(self) -> None:
        i_t, i_b, f = self._i_t, self._i_b, self._f
        line = self.line
        rt = self.rt
        if i_t < f and i_b < f:
            pass                                      # fast recovery: towards R_T
        elif i_t >= f and i_b >= f:
            rt += ((i_t if i_t < i_b else i_b) - f + 1) * self._hai
        else:
            rt += self._ai
        if rt > line:
            rt = line
        self.rt = rt
        rc = (rt + self.rc) / 2
        self.rc = rc = rc if rc < line else line
        self.pace_s_per_byte = 8 / rc

    def on_bytes(self, now: float) -> None:
        self.byte_budget += self.p.byte_counter   # the overshoot counts towards the next
        self._i_b += 1
        self._increase()

    def on_ack(self, now: float, acked: int, marked: int, rtt: float | None) -> None:
        if now >= self.due:
            self.advance(now)
        if marked <= 0:
            return
        if self._last_cnp is not None and now - self._last_cnp < self._n:
            return
        self._last_cnp = now
        self._cut(now)

    def _cut(self, now: float) -> None:
        self.cnps += 1
        # once per CNP, at most one per N: no builtins (max, min) on this path either
        rc = self.rt = self.rc
        floor = self._floor
        rc *= 1 - self.alpha / 2
        self.rc = rc = rc if rc > floor else floor
        self.alpha = self._keep * self.alpha + self.p.g
        self._alpha_at = self._timer_at = now
        k, t = self._k, self._t
        self.due = now + (k if k < t else t)
        self.byte_budget = self.p.byte_counter
        self.pace_s_per_byte = 8 / rc
        self._i_t = self._i_b = 0

    def on_timeout(self, now: float) -> None:
        self.advance(now)
        self._cut(now)
