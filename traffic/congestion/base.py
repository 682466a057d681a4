"""The one interface every congestion-control algorithm implements, and their registry.

A sender asks its algorithm two things before each packet — how many packets may be in flight
(``window``) and how fast it may put them on the wire (``rate_bps``, None: at line rate) — and
tells it what happened: an ACK (packets newly acknowledged, how many of those came back
CE-marked, an RTT sample when one was taken), a NACK (a loss the receiver saw), a timeout, and
each transmission (a byte counter, for DCQCN). Time is an argument, never read: the host
agent, the simulator and the tests drive the same objects with their own clocks, so "the same
transport on both sides" holds by construction.

Adding an algorithm is one class with a ``Params`` dataclass, decorated ``@register``.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, cast


class CcName(StrEnum):
    """The registered algorithms (``transport.cc`` in an experiment file)."""

    DCTCP = "dctcp"
    DCQCN = "dcqcn"
    NSCC = "nscc"
    NONE = "none"


DEFAULT_CC = CcName.DCTCP


@dataclass(frozen=True)
class CcContext:
    """What an algorithm may know about where it runs: the sender's line rate (bits/s), the
    wire bytes of a full packet, the transport's window cap in packets, and the fabric's
    unloaded RTT in seconds when the configuration knows it (0: unknown)."""

    line_rate_bps: float
    packet_bytes: int
    max_window: int
    base_rtt: float = 0.0


class CongestionControl(ABC):
    """One flow's congestion state. Subclasses set ``name``, ``uses_ecn``, ``Params``."""

    name: ClassVar[str]
    uses_ecn: ClassVar[bool] = True
    """Send ECT(0), so switches CE-mark instead of only queueing."""
    Params: ClassVar[type]

    due: float = math.inf
    """``advance(now)`` changes nothing before this time (its next timer expiry): a sender
    calls it only once ``now >= due``, so an algorithm without timers costs nothing per send."""
    byte_budget: float = math.inf
    """Wire bytes the algorithm lets go before it wants to hear of them (DCQCN's byte
    counter): a sender subtracts each packet and calls ``on_bytes`` when it reaches 0."""
    pace_s_per_byte: float = 0.0
    """Seconds per wire byte at the pacing rate (8 / ``rate_bps``; 0: not paced), kept by the
    algorithm whenever the rate changes, so a paced send costs a multiplication."""

    def __init__(self, params: Any, ctx: CcContext) -> None:
        self.p = params
        self.ctx = ctx

    @property
    @abstractmethod
    def window(self) -> float:
        """Packets the flow may have unacknowledged (math.inf: no window limit)."""

    @property
    def rate_bps(self) -> float | None:
        """Pacing rate in bits/s on the wire; None: the sender's line rate."""
        return None

    def on_ack(self, now: float, acked: int, marked: int, rtt: float | None) -> None:  # noqa: B027 - optional hook
        """``acked`` packets newly acknowledged, ``marked`` of them CE-echoed; ``rtt`` a sample
        (seconds) from a packet sent once, or None."""

    def on_nack(self, now: float) -> None:  # noqa: B027 - optional hook
        """The receiver reported a hole (a loss)."""

    def on_trim_nack(self, now: float) -> None:
        """The receiver NACKed a packet a switch trimmed (a full queue on the path, for
        sure): by default a NACK like any other."""
        self.on_nack(now)

    def on_timeout(self, now: float) -> None:  # noqa: B027 - optional hook
        """The retransmission timer fired for at least one packet."""

    def on_send(self, now: float, nbytes: int) -> None:
        """A packet of ``nbytes`` wire bytes left (what a sender does inline with
        ``byte_budget``)."""
        self.byte_budget -= nbytes
        if self.byte_budget <= 0:
            self.on_bytes(now)

    def on_bytes(self, now: float) -> None:  # noqa: B027 - optional hook
        """``byte_budget`` wire bytes were sent since it was set: the algorithm's byte event;
        it sets the next budget (adding to the overshoot it finds there)."""

    def advance(self, now: float) -> None:  # noqa: B027 - optional hook
        """Let timer-driven state (DCQCN's rate increase, α decay) catch up to ``now``; needed
        only once ``now >= due`` and before the rate is read, so evaluating lazily on events
        (a send, an ACK) equals firing the timers on time."""


def check_window(p: Any) -> None:
    """Validate a window algorithm's ``init_cwnd`` / ``min_cwnd`` (packets)."""
    if p.min_cwnd < 1:
        raise ValueError(f"min_cwnd: must be >= 1, got {p.min_cwnd}")
    if p.init_cwnd < p.min_cwnd:
        raise ValueError(f"init_cwnd: must be >= min_cwnd ({p.min_cwnd})")


class WindowControl(CongestionControl):
    """A window algorithm: cwnd in packets within [``min_cwnd``, the transport's cap],
    starting at ``init_cwnd``, cut at most once per window of data: the data outstanding when
    it cut — the window before the cut, for a window-limited sender — must be acknowledged
    before the next (RFC 3168 §6.1.2, Linux's CWR until snd_una passes the cut's snd_nxt,
    Swift's once-per-RTT). Holding only for the window after the cut let marks on packets
    sent before it, the same congestion, cut again."""

    def __init__(self, params: Any, ctx: CcContext) -> None:
        super().__init__(params, ctx)
        self.cap = float(ctx.max_window)
        self.floor = min(params.min_cwnd, self.cap)
        self.cwnd = max(self.floor, min(params.init_cwnd, self.cap))
        self._hold_left = 0.0   # packets still to be acknowledged before the next cut
        self.reductions = 0

    @property
    def window(self) -> float:
        return self.cwnd

    def _acked(self, n: int) -> None:
        self._hold_left = max(0.0, self._hold_left - n)

    def _cut(self, factor: float) -> bool:
        """cwnd ·= factor unless a cut is held; True if it cut."""
        if self._hold_left > 0:
            return False
        self._hold_left = self.cwnd   # in flight at the cut: held until it is acknowledged
        self.cwnd = max(self.floor, self.cwnd * factor)
        self.reductions += 1
        return True

    def _collapse(self) -> None:
        """A timeout: back to the floor (RFC 5681's loss window), no cut held."""
        self.cwnd = self.floor
        self._hold_left = 0.0
        self.reductions += 1


REGISTRY: dict[str, type[CongestionControl]] = {}


def register(cls: type[CongestionControl]) -> type[CongestionControl]:
    """Class decorator: make ``cls`` available by ``cls.name``."""
    if cls.name in REGISTRY:
        raise ValueError(f"congestion control {cls.name!r} registered twice")
    REGISTRY[cls.name] = cls
    return cls


def cc_params(name: str, values: dict[str, Any] | None = None) -> Any:
    """The ``Params`` of algorithm ``name`` with ``values`` set; ValueError naming the bad
    key (an unknown algorithm, an unknown parameter, a value of the wrong type or range)."""
    cls = REGISTRY.get(str(name))
    if cls is None:
        raise ValueError(f"unknown congestion control {name!r}, choose from "
                         f"{', '.join(REGISTRY)}")
    values = dict(values or {})
    fields = {f.name: f for f in dataclasses.fields(cls.Params)}
    for k, v in values.items():
        if k not in fields:
            raise ValueError(f"{k}: not a parameter of {name} (its parameters: "
                             f"{', '.join(fields) or 'none'})")
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError(f"{k}: {v!r} is not a number")
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{k}: must be a finite number >= 0, got {v}")
    # each value as its field's type (the default's: int or float)
    as_field = {k: cast("Callable[[float], object]", type(f.default)) for k, f in fields.items()}
    params = cls.Params(**{k: as_field[k](v) for k, v in values.items()})
    check = getattr(params, "check", None)
    if check is not None:
        check()
    return params


def make_cc(name: str, ctx: CcContext, params: Any = None) -> CongestionControl:
    """A new flow's algorithm ``name`` (``params``: its Params, a dict of them, or None)."""
    if params is None or isinstance(params, dict):
        params = cc_params(name, params)
    return REGISTRY[str(name)](params, ctx)
