"""Propagation delay of a link: frames in flight on the wire after they leave the egress queue.

The kernel here has no netem, so a link's delay is the switch's to emulate: an egress port with
a delay hands each frame its egress pipeline produced to a ``DelayLine`` and writes it to the
socket ``delay_us`` later. The frame has left the P4 queue (``deq_timedelta``, the queue depth
and the tail-drop decision do not see it), exactly as on a real link, where a frame being
propagated occupies neither the queue nor the transmitter. One delay per port makes the line a
FIFO: the order of the frames on a port is the order they left its queue.

A frame leaves the queue when its first bit starts onto the wire, and the far end has it when
its last bit is in: ``serialise_us`` (its length at the port's rate) plus the delay later.
Without that term every switch would act on a frame before it had received it — cut-through
at every hop, where the simulator (sim/link.py) and real store-and-forward switches take one
frame time per hop: the demo's 6-hop path lost ~0.6 µs of its ~2 µs RTT, and window-bound
DCTCP flows sharing an ECMP uplink ran ~25 % faster than on the simulator
(docs/experiments.md, "Emulation beside simulation").

Pure code: the switch loop passes ``now`` (µs, its own clock) and sends what is due.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class DelayLine:
    """The frames on one port's wire, each with the time it reaches the far end's socket."""

    port: int
    delay_us: float
    _wire: deque[tuple[float, bytes]] = field(default_factory=deque, repr=False)
    max_in_flight: int = 0   # the most frames on the wire at once (a link's bandwidth-delay)
    _tx_end_us: float = field(default=float("-inf"), repr=False)  # the last frame's last bit out

    def __post_init__(self) -> None:
        if not self.delay_us > 0:
            raise ValueError(f"port {self.port}: a propagation delay is > 0 µs, "
                             f"got {self.delay_us!r}")

    def push(self, now_us: float, data: bytes, serialise_us: float = 0.0,
             extra_us: float = 0.0) -> None:
        """``data`` left the egress queue at ``now_us`` and takes ``serialise_us`` to put on
        the wire: it arrives ``serialise_us + delay_us`` later, and never before the frame ahead
        of it is out plus its own serialisation (a loop that served two departures late sends
        them back to back, not at once). ``extra_us``: a further fixed delay of this frame
        that does not hold the wire (a host uplink's serialisation, carried by the switch)."""
        end = max(now_us, self._tx_end_us) + serialise_us
        self._tx_end_us = end
        wire = self._wire
        wire.append((end + self.delay_us + extra_us, data))
        if len(wire) > self.max_in_flight:
            self.max_in_flight = len(wire)

    def next_due_us(self) -> float | None:
        """When the oldest frame in flight arrives (None: the wire is empty)."""
        return self._wire[0][0] if self._wire else None

    def pop_due(self, now_us: float) -> list[bytes]:
        """The frames that have arrived by ``now_us``, oldest first, taken off the wire."""
        wire = self._wire
        out: list[bytes] = []
        while wire and wire[0][0] <= now_us:
            out.append(wire.popleft()[1])
        return out

    def __len__(self) -> int:
        return len(self._wire)
