"""RTT estimation and the retransmission timeout, as RFC 6298 specifies them.

First sample R: SRTT ← R, RTTVAR ← R/2. Later samples R': RTTVAR ← (1 − β)·RTTVAR + β·|SRTT − R'|,
then SRTT ← (1 − α)·SRTT + α·R' (α = 1/8, β = 1/4). RTO ← SRTT + max(G, K·RTTVAR) with K = 4 and
G the clock granularity, clamped to [min_rto, max_rto] (RFC 6298 §2.4 says at least 1 s;
data-centre transports configure far less, hence a value). Before any sample the RTO is the
initial one. Each expiry doubles it (§5.5, "back off the timer"), up to max_rto, until a new
sample recomputes it. Karn's algorithm (§3): samples come only from packets sent once — the
sender decides that, this class only takes the samples it is given.

A collective opens a new flow per step to the same peers, and a flow's first packets would
wait for the initial RTO — which is either too long for the fabric (RFC 6298's 1 s) or too
short for a slow or loaded one (every first window resent spuriously). ``RttCache`` keeps the
estimate per destination, as Linux's TCP metrics cache does, so a flow starts from what the
last flow to the same peer measured.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

ALPHA = 1 / 8
BETA = 1 / 4
K = 4
_KEEP_VAR = 1 - BETA
_KEEP_SRTT = 1 - ALPHA


@dataclass
class RttEstimator:
    """All times in seconds. ``min_rto == max_rto`` pins the RTO (a fixed timer)."""

    initial_rto: float = 1.0
    min_rto: float = 1.0
    max_rto: float = 60.0
    granularity: float = 0.0
    srtt: float | None = None
    rttvar: float | None = None
    rto: float = 0.0
    samples: int = 0
    backoffs: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.min_rto <= self.max_rto:
            raise ValueError(f"need 0 < min_rto ({self.min_rto}) <= max_rto ({self.max_rto})")
        self.rto = self._clamp(self.initial_rto)

    def _clamp(self, rto: float) -> float:
        return min(self.max_rto, max(self.min_rto, rto))

    def sample(self, r: float) -> None:
        """One measurement ``r`` (seconds) from a packet that was transmitted once."""
        if r < 0:
            return
        srtt, rttvar = self.srtt, self.rttvar
        if srtt is None or rttvar is None:
            srtt, rttvar = r, r / 2
        else:   # every ACK: no builtin calls
            d = srtt - r
            rttvar = _KEEP_VAR * rttvar + BETA * (d if d >= 0 else -d)
            srtt = _KEEP_SRTT * srtt + ALPHA * r
        self.srtt, self.rttvar = srtt, rttvar
        self.samples += 1
        v = K * rttvar
        rto = srtt + (v if v > self.granularity else self.granularity)
        self.rto = self.min_rto if rto < self.min_rto else \
            (self.max_rto if rto > self.max_rto else rto)

    def backoff(self) -> None:
        """The timer expired: double the RTO (up to max_rto)."""
        self.backoffs += 1
        self.rto = min(self.max_rto, 2 * self.rto)

    def seed(self, other: RttEstimator) -> None:
        """Start from ``other``'s SRTT and RTTVAR (its backoff not included)."""
        if other.srtt is not None and other.rttvar is not None:
            self.srtt, self.rttvar = other.srtt, other.rttvar
            self.rto = self._clamp(self.srtt + max(self.granularity, K * self.rttvar))


@dataclass
class RttCache:
    """The latest RTT estimate per destination (any hashable key)."""

    _last: dict[Hashable, RttEstimator] = field(default_factory=dict)

    def estimator(self, key: Hashable, initial_rto: float, min_rto: float,
                  max_rto: float) -> RttEstimator:
        """A new flow's estimator, seeded from the last one to ``key`` that had samples."""
        e = RttEstimator(initial_rto, min_rto, max_rto)
        prev = self._last.get(key)
        if prev is not None:
            e.seed(prev)
        if prev is None or e.srtt is not None or prev.srtt is None:
            self._last[key] = e
        return e
