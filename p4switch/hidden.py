"""What a software switch hides from its P4 program, measured: the kernel's socket queue in
front of the pipeline (drops and delay) next to the egress queueing the program does see.

A frame that waits in an AF_PACKET receive buffer, or is dropped there, never shows up in
``enq_qdepth``/``deq_timedelta``: ECN marking, Whack-a-Mole and queue plots cannot react to it.
The fidelity guard of the experiments (topo/guard.py) reads these figures per run
through the control socket (``hidden_stats``) and calls a run invalid when the hidden part is
not small next to the visible one.

* ``PACKET_STATISTICS`` (packet(7)): frames the socket received and dropped (buffer full) since
  the last read — the read resets them, so a port accumulates them here.
* ``SO_TIMESTAMPNS``: the kernel's receive time of every frame; when a receive batch goes to
  the pipeline the switch records now − that time (the ingress lag) of each of its frames.
  (Sampling one frame per batch would weigh a batch of 64 like a lone frame and pick the one
  that waited longest.)

Every frame the switch had and did not send is counted at the site that lost it
(:class:`SwitchDropSites`): the P4 egress queue's tail drops — congestion, a result of the
scheme, which a v1model program cannot count itself —, the pipeline's drops by reason
(mark_to_drop, parser or run-time errors), and the switch's own discards (frames too short or
too long, no program, no port behind an output, a program swap's flush). The kernel's drops
(above) and these together are every loss a switch can cause.

Every delay goes into a ``common.histogram.LogHistogram`` (quantiles within 3.1 %).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Protocol

from common.histogram import LogHistogram, bucket_of

SOL_PACKET = 263
PACKET_STATISTICS = 6
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TPACKET_STATS = struct.Struct("II")   # struct tpacket_stats {tp_packets, tp_drops}
_TIMESPEC = struct.Struct("qq")
ANCILLARY = socket.CMSG_SPACE(_TIMESPEC.size)


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


def rx_time_ns(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    """The kernel's receive time (ns since the epoch) in a recvmsg's ancillary data."""
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and \
                len(payload) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(payload)
            return sec * 1_000_000_000 + nsec
    return None


@dataclass
class HiddenStats:
    """One port's hidden figures (the switch loop writes, the control thread reads)."""

    kernel_packets: int = 0
    kernel_drops: int = 0
    ingress_lag_us: LogHistogram = field(default_factory=LogHistogram)

    def add_lags(self, received_ns: Iterable[int], now_ns: int) -> None:
        """Record the ingress lag of frames the kernel received at ``received_ns`` and the
        pipeline gets at ``now_ns``."""
        counts = self.ingress_lag_us.counts
        for t in received_ns:
            counts[bucket_of((now_ns - t) // 1000)] += 1

    def as_dict(self) -> dict[str, object]:
        return {"kernel_packets": self.kernel_packets, "kernel_drops": self.kernel_drops,
                "ingress_lag_us": self.ingress_lag_us.sparse()}


class _QueueCounts(Protocol):
    tail_drops: int
    trimmed: int


class _PortCounts(Protocol):
    rx_too_short: int
    rx_oversized: int


class _SwitchCounts(Protocol):
    no_program: int
    pipeline_errors: int
    tx_no_port: int
    flushed: int
    packet_out_dropped: int

    @property
    def drops(self) -> Mapping[str, int]: ...


@dataclass
class SwitchDropSites:
    """Frames one switch lost after its sockets had them, by site (monotonic counts).

    ``tail_drops``: the P4 egress queues were full (congestion: what a real switch with the
    same queues would drop too). ``pipeline``: drops the P4 program decided (mark_to_drop) or
    the pipeline reported (parser/run-time error, no egress port), by reason. ``discards``:
    frames the switch dropped around the program — a fidelity fault or a bug, never a
    property of the scheme. ``trimmed``: packets a full queue cut to their headers (trimming,
    ``--trim-bytes``): delivered, not lost, and a result like ``tail_drops``."""

    tail_drops: int = 0
    trimmed: int = 0
    pipeline: dict[str, int] = field(default_factory=dict)
    discards: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def switch_drop_sites(queues: Iterable[_QueueCounts], ports: Iterable[_PortCounts],
                      counters: _SwitchCounts) -> SwitchDropSites:
    """A switch's drop sites from its queues', ports' and switch-wide counters (read under
    the switch lock)."""
    too_short = oversized = 0
    for p in ports:
        too_short += p.rx_too_short
        oversized += p.rx_oversized
    discards = {"rx_too_short": too_short, "rx_oversized": oversized,
                "no_program": counters.no_program, "pipeline_errors": counters.pipeline_errors,
                "tx_no_port": counters.tx_no_port, "flushed": counters.flushed,
                "packet_out_dropped": counters.packet_out_dropped}
    queues = list(queues)
    return SwitchDropSites(tail_drops=sum(q.tail_drops for q in queues),
                           trimmed=sum(q.trimmed for q in queues),
                           pipeline={k: v for k, v in counters.drops.items() if v},
                           discards=discards)
