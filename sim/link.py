"""One direction of a fabric link: serialisation at the link rate, propagation, failure.

The sender side owns the queue (a switch port's p4switch.queues.EgressQueue, or a host's NIC);
the link only turns "the frame starts onto the wire at t" into "its last bit reaches the peer at
t + bits/rate + propagation". A link that is down loses every frame put on it while it is down (it is cut, not paused): the
transport above recovers, as on a real cut fibre. Frames already in flight when it goes down
still arrive: at most a propagation delay's worth (ns to µs), which the model ignores.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .events import EventLoop, Key
from .frameblob import Outgoing


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
    _loop: EventLoop | None = field(default=None, repr=False)
    _peer: Callable[[float, Any], None] | None = field(default=None, repr=False)
    _peer_port: int = field(default=0, repr=False)
    # frames on the wire, in arrival order: (arrival µs, event ticket, frame)
    _wire: deque[tuple[float, Key, bytes]] = field(default_factory=deque, repr=False)
    _outbox: list[Outgoing] | None = field(default=None, repr=False,
                                                               init=False)
    index: int = field(default=-1, repr=False)
    _core: Any = field(default=None, repr=False)
    """The C core (sim.core.CoreLoop) once it runs this link; ``_ci``: its index there."""
    _ci: int = field(default=-1, repr=False)

    def __post_init__(self) -> None:
        if self.rate_bps is not None and self.rate_bps <= 0:
            raise ValueError(f"link {self.src}-{self.dst}: rate must be > 0 bits/s")
        if self.prop_us < 0:
            raise ValueError(f"link {self.src}-{self.dst}: propagation delay must be >= 0")
        self.us_per_byte = 8e6 / self.rate_bps if self.rate_bps else 0.0

    @property
    def outbox(self) -> list[Outgoing] | None:
        """Set when the receiving end is simulated by another process (sim.parallel): frames
        are collected here as (``index``, arrival, ticket, frame) for it, not delivered."""
        return self._outbox

    @outbox.setter
    def outbox(self, box: list[Outgoing] | None) -> None:
        self._outbox = box
        if self._core is not None:
            self._core.link_state(self)

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

    def attach(self, loop: EventLoop, peer_receive: Callable[[float, Any], None],
               peer_port: int) -> None:
        """Deliver through ``loop`` to ``peer_receive(t, (peer_port, frame))``."""
        self._loop, self._peer, self._peer_port = loop, peer_receive, peer_port

    def send(self, start_us: float, frame: bytes) -> None:
        """Put ``frame`` on the wire at ``start_us`` (lost if the link is down).

        Frames leave a direction in order and arrive in order, so only the first frame on the
        wire has an event in the loop; each delivery pushes the next. The event heap then
        holds one entry per busy link instead of one per frame in flight (measured at k=16
        with every wire busy: ~13k events instead of ~384k), and each frame keeps the ticket
        it took when it was sent, so same-time events run in exactly the order one event per
        frame gave them."""
        if self._core is not None:
            self._core.link_send(self._ci, start_us, frame)
            return
        t = self.arrival_us(start_us, len(frame))
        if t is None:
            return
        loop = self._loop
        assert loop is not None, "send on a link that was never attached"
        ticket = loop.ticket()
        if self._outbox is not None:
            self._outbox.append((self.index, t, ticket, frame))
            return
        # accept(), inlined: this runs once per packet-hop
        wire = self._wire
        if wire:
            if t < wire[-1][0]:
                self.accept(t, ticket, frame)  # raises
            wire.append((t, ticket, frame))
        else:
            wire.append((t, ticket, frame))
            loop.push(t, ticket, self._deliver)

    def accept(self, t: float, ticket: Key, frame: bytes) -> None:
        """Put a frame that arrives at ``t`` on the wire, behind those already on it."""
        if self._core is not None:
            self._core.link_accept(self._ci, t, ticket, frame)
            return
        wire = self._wire
        if wire and t < wire[-1][0]:
            raise ValueError(f"link {self.src}-{self.dst}: a frame would arrive at {t} µs, "
                             f"before the one sent ahead of it ({wire[-1][0]} µs)")
        wire.append((t, ticket, frame))
        if len(wire) == 1:
            self._loop.push(t, ticket, self._deliver)  # type: ignore[union-attr]  # _loop is set by attach() before the first send

    def _deliver(self, now: float, _: Any) -> None:
        wire = self._wire
        frame = wire.popleft()[2]
        if wire:
            t, ticket, _f = wire[0]
            self._loop.push(t, ticket, self._deliver)  # type: ignore[union-attr]  # as above
        self._peer(now, (self._peer_port, frame))  # type: ignore[misc]  # _peer is set by attach() before the first send

    def fail(self, now_us: float) -> None:
        self.up = False
        self.down_since = now_us
        if self._core is not None:
            self._core.link_state(self)

    def restore(self) -> None:
        self.up = True
        self.down_since = None
        if self._core is not None:
            self._core.link_state(self)
