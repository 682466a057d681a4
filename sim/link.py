"""One direction of a fabric link: serialisation at the link rate, propagation, failure.

The sender side owns the queue (a switch port's p4switch.queues.EgressQueue, or a host's NIC);
the link only turns "the frame starts onto the wire at t" into "its last bit reaches the peer at
t + bits/rate + propagation". A link that is down loses every frame put on it while it is down (it is cut, not paused): the
transport above recovers, as on a real cut fibre. Frames already in flight when it goes down
still arrive: at most a propagation delay's worth (ns to µs), which the model ignores.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(eq=False)
class Link:
    """``src:src_port`` -> ``dst:dst_port`` at ``rate_bps`` (None: infinitely fast) with
    ``prop_us`` propagation delay."""

    src: str
    src_port: int
    dst: str
    dst_port: int
    rate_bps: float | None
    prop_us: float = 0.0
    up: bool = True
    down_since: float | None = None
    tx_packets: int = 0
    tx_bytes: int = 0
    lost_packets: int = 0

    def __post_init__(self) -> None:
        if self.rate_bps is not None and self.rate_bps <= 0:
            raise ValueError(f"link {self.src}-{self.dst}: rate must be > 0 bits/s")
        if self.prop_us < 0:
            raise ValueError(f"link {self.src}-{self.dst}: propagation delay must be >= 0")
        self.us_per_byte = 8e6 / self.rate_bps if self.rate_bps else 0.0

    def serialisation_us(self, nbytes: int) -> float:
        return nbytes * self.us_per_byte

    def arrival_us(self, start_us: float, nbytes: int) -> float | None:
        """When a frame of ``nbytes`` put on the wire at ``start_us`` arrives, None if lost.
        Counts it as sent (or lost)."""
        if not self.up:
            self.lost_packets += 1
            return None
        self.tx_packets += 1
        self.tx_bytes += nbytes
        return start_us + nbytes * self.us_per_byte + self.prop_us

    def fail(self, now_us: float) -> None:
        self.up = False
        self.down_since = now_us

    def restore(self) -> None:
        self.up = True
        self.down_since = None
