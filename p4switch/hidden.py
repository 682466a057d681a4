"""What a software switch hides from its P4 program, measured: the kernel's socket queue in
front of the pipeline (drops and delay) next to the egress queueing the program does see.

A frame that waits in an AF_PACKET receive buffer, or is dropped there, never shows up in
``enq_qdepth``/``deq_timedelta``: ECN marking, Whack-a-Mole and queue plots cannot react to it.
The fidelity guard of the experiments (experiments/guard.py) reads these figures per run
through the control socket (``hidden_stats``) and calls a run invalid when the hidden part is
not small next to the visible one.

* ``PACKET_STATISTICS`` (packet(7)): frames the socket received and dropped (buffer full) since
  the last read — the read resets them, so a port accumulates them here.
* ``SO_TIMESTAMPNS``: the kernel's receive time of a frame; the switch samples the first frame
  of each receive batch and records now − that time (the ingress lag) in a log2 histogram.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field

SOL_PACKET = 263
PACKET_STATISTICS = 6
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TPACKET_STATS = struct.Struct("II")   # struct tpacket_stats {tp_packets, tp_drops}
_TIMESPEC = struct.Struct("qq")
ANCILLARY = socket.CMSG_SPACE(_TIMESPEC.size)
BUCKETS = 32
"""Histogram bucket i holds values v (µs) with v.bit_length() == i: 0, 1, 2-3, 4-7, ..."""


@dataclass
class LogHistogram:
    """Microsecond values in power-of-two buckets: cheap to add to on the packet path, small
    to ship, quantiles to within a factor of two (enough to tell 20 µs from 20 ms)."""

    counts: list[int] = field(default_factory=lambda: [0] * BUCKETS)

    def add(self, us: int) -> None:
        self.counts[min(max(us, 0).bit_length(), BUCKETS - 1)] += 1

    @property
    def n(self) -> int:
        return sum(self.counts)

    def merge(self, other: LogHistogram | list[int]) -> None:
        for i, c in enumerate(other.counts if isinstance(other, LogHistogram) else other):
            self.counts[i] += c

    def quantile(self, q: float) -> float:
        """The upper edge (µs) of the bucket holding the q-quantile (0 when empty)."""
        n = self.n
        if not n:
            return 0.0
        rank = q * n
        seen = 0
        for i, c in enumerate(self.counts):
            seen += c
            if seen >= rank and c:
                return float((1 << i) - 1) if i else 0.0
        return float((1 << (BUCKETS - 1)) - 1)


def read_packet_statistics(sock: socket.socket) -> tuple[int, int]:
    """(received, dropped) of an AF_PACKET socket since the last call (the kernel resets
    them on read); (0, 0) where the option is not available."""
    try:
        raw = sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, _TPACKET_STATS.size)
    except OSError:
        return 0, 0
    packets, drops = _TPACKET_STATS.unpack(raw)
    return packets, drops


def enable_rx_timestamps(sock: socket.socket) -> bool:
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


def recv_timestamped(sock: socket.socket, bufsize: int) -> tuple[bytes, int | None]:
    """One frame and its ingress lag in µs (None: no timestamp came with it). Raises
    BlockingIOError as ``recv`` does."""
    data, anc, _flags, _addr = sock.recvmsg(bufsize, ANCILLARY)
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and \
                len(payload) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(payload)
            lag_ns = time.time_ns() - (sec * 1_000_000_000 + nsec)
            return data, max(0, lag_ns // 1000)
    return data, None


@dataclass
class HiddenStats:
    """One port's hidden figures (the switch loop writes, the control thread reads)."""

    kernel_packets: int = 0
    kernel_drops: int = 0
    ingress_lag_us: LogHistogram = field(default_factory=LogHistogram)

    def as_dict(self) -> dict[str, object]:
        return {"kernel_packets": self.kernel_packets, "kernel_drops": self.kernel_drops,
                "ingress_lag_us": list(self.ingress_lag_us.counts)}
