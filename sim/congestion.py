"""A DCTCP-style window (Alizadeh et al. 2010) driven by ECN echoes: the simulated transport's
response to congestion.

traffic/transport.py is reliable but has a fixed window; alone it would keep every queue full,
and hashing vs spraying would differ only in drops. Here each flow's window shrinks in proportion
to the fraction of its packets that came back CE-marked (fabric.p4's egress marks above the
port's threshold), and grows by one packet per window of ACKed packets otherwise, so a scheme
that spreads load over more paths keeps queues shorter and finishes sooner.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DctcpWindow:
    """cwnd in packets within [min_window, max_window]; ``g`` is DCTCP's EWMA gain (1/16).
    ``min_window`` should be at least the receiver's ACK coalescing (``ack_every``): with fewer
    packets in flight no ACK is due until the delayed-ACK timer fires."""

    max_window: int
    cwnd: float = 0.0
    min_window: int = 2
    g: float = 1.0 / 16
    alpha: float = 1.0  # as Linux DCTCP starts: the first marks halve the window
    _acked: int = 0
    _marked: int = 0
    reductions: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.min_window <= self.max_window:
            raise ValueError("need 1 <= min_window <= max_window")
        if self.cwnd <= 0:
            self.cwnd = float(self.max_window)
        self.cwnd = min(self.cwnd, float(self.max_window))

    @property
    def window(self) -> int:
        return max(self.min_window, int(self.cwnd))

    def on_ack(self, acked: int, marked: int) -> None:
        """``acked`` packets newly acknowledged, ``marked`` of the data they cover were CE."""
        if acked <= 0 and marked <= 0:
            return
        self._acked += acked
        self._marked += min(marked, acked) if acked > 0 else 0
        if self._marked == 0:
            self.cwnd = min(float(self.max_window), self.cwnd + acked / self.cwnd)
        if self._acked >= self.window:
            frac = self._marked / self._acked
            self.alpha = (1 - self.g) * self.alpha + self.g * frac
            if self._marked:
                self.cwnd = max(float(self.min_window), self.cwnd * (1 - self.alpha / 2))
                self.reductions += 1
            self._acked = self._marked = 0
