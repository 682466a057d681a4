"""Frames for another part of a split run as one object: what the C core hands over.

At a window's end a part sends every frame it put on a link into another part's process
(sim.parallel). One tuple and one ``Link.accept`` per frame cost a part more than its C
core's run once the hosts were in C too (k=16 permutation, two parts: ~4.5 CPU s each of
~10), and each data frame travelled with its zero payload. The C core packs a window's
frames for one part into a ``FrameBlob`` (headers and the bytes each frame holds up to its
last non-zero one) and the receiving C core puts them on their wires in one call, in order;
a part on the Python loop reads it frame by frame (``frames``). Results do not change:
tests/sim/test_parallel.py and test_core.py compare split runs with one loop."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from .events import Key

HEAD = struct.Struct("<iddqqII")
"""One frame's header: link index, arrival time, ticket (time, id, child), length, bytes
held (sim/core_c.py's ``core_box_take``)."""


@dataclass(frozen=True, slots=True)
class FrameBlob:
    """``n`` frames in sending order; ``first_t``: the earliest arrival among them."""

    n: int
    first_t: float
    head: bytes
    data: bytes

    def frames(self) -> Iterator[tuple[int, float, Key, bytes]]:
        """(link index, arrival, ticket, the whole frame), as a Python outbox holds them."""
        off = 0
        data = self.data
        for link, t, kt, kid, kc, n, held in HEAD.iter_unpack(self.head):
            frame = data[off:off + held]
            off += held
            yield link, t, (kt, kid, kc), frame + bytes(n - held)


Outgoing = tuple[int, float, Key, bytes] | FrameBlob
"""What an outbox holds (``Link.outbox``): a frame sent by the Python loop as (link index,
arrival, ticket, frame), or the C core's frames packed."""
