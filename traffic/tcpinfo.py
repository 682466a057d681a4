"""TCP's own view of a connection: the fields of Linux `struct tcp_info` the TCP mode reports.

`getsockopt(IPPROTO_TCP, TCP_INFO)` copies min(buffer, sizeof(struct tcp_info) of the running
kernel) bytes; the struct only ever grows at its end, so a field exists iff the returned length
covers it. Offsets below follow the layout of include/uapi/linux/tcp.h (native byte order, the
u64 fields 8-aligned); the kernel version is the one that appended the field. A field the kernel
did not return is None, never 0, so "not measured" stays distinguishable from "none happened".
"""

from __future__ import annotations

import socket
import struct
from dataclasses import asdict, dataclass, fields
from typing import Any

#: name -> (byte offset, struct format, first kernel that returns it)
LAYOUT: dict[str, tuple[int, str, str]] = {
    "state": (0, "B", "2.6"),
    "ca_state": (1, "B", "2.6"),
    "snd_mss": (16, "I", "2.6"),
    "lost": (32, "I", "2.6"),
    "rtt": (68, "I", "2.6"),            # smoothed RTT, microseconds
    "rttvar": (72, "I", "2.6"),         # microseconds
    "snd_cwnd": (80, "I", "2.6"),       # segments
    "reordering": (88, "I", "2.6"),     # current reordering degree (dupthresh), default 3
    "total_retrans": (100, "I", "2.6"),  # segments retransmitted over the connection's life
    "min_rtt": (148, "I", "4.6"),       # microseconds
    "data_segs_in": (152, "I", "4.6"),
    "data_segs_out": (156, "I", "4.6"),
    "bytes_sent": (200, "Q", "4.19"),   # data bytes sent, retransmissions included
    "bytes_retrans": (208, "Q", "4.19"),
    "dsack_dups": (216, "I", "4.19"),   # D-SACK blocks received: spurious retransmissions
    "reord_seen": (220, "I", "4.19"),   # reordering events the sender detected
    "rcv_ooopack": (224, "I", "5.4"),   # out-of-order segments the receiver queued
    "total_rto": (240, "H", "6.7"),     # retransmission timeouts
}

#: bytes to ask for: more than any kernel returns today (6.18 returns 280)
REQUEST = 512


@dataclass
class TcpInfo:
    """The fields read from one `struct tcp_info`; None = not returned by this kernel."""

    state: int | None = None
    ca_state: int | None = None
    snd_mss: int | None = None
    lost: int | None = None
    rtt: int | None = None
    rttvar: int | None = None
    snd_cwnd: int | None = None
    reordering: int | None = None
    total_retrans: int | None = None
    min_rtt: int | None = None
    data_segs_in: int | None = None
    data_segs_out: int | None = None
    bytes_sent: int | None = None
    bytes_retrans: int | None = None
    dsack_dups: int | None = None
    reord_seen: int | None = None
    rcv_ooopack: int | None = None
    total_rto: int | None = None
    length: int = 0            # bytes the kernel returned

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


assert {f.name for f in fields(TcpInfo)} - {"length"} == set(LAYOUT)

_STRUCTS = {name: struct.Struct("=" + fmt) for name, (_off, fmt, _k) in LAYOUT.items()}


def parse(buf: bytes) -> TcpInfo:
    """Decode what `getsockopt(TCP_INFO)` returned; fields beyond a short buffer stay None."""
    info = TcpInfo(length=len(buf))
    for name, (off, _fmt, _k) in LAYOUT.items():
        st = _STRUCTS[name]
        if off + st.size <= len(buf):
            setattr(info, name, st.unpack_from(buf, off)[0])
    return info


def read(sock: socket.socket) -> TcpInfo | None:
    """TCP_INFO of `sock`, or None if the socket cannot answer (closed, not TCP)."""
    try:
        return parse(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, REQUEST))
    except OSError:
        return None


#: per-flow aggregation over the flow's connections: counters add, gauges take the max
SUMMED = ("total_retrans", "lost", "dsack_dups", "reord_seen", "rcv_ooopack", "total_rto",
          "data_segs_out", "data_segs_in", "bytes_sent", "bytes_retrans")
MAXED = ("reordering", "rtt", "min_rtt")


def aggregate(infos: list[TcpInfo | None]) -> dict[str, Any]:
    """One flow's view over its connections (QPs): sums of counters, max of `reordering` and
    RTTs; a field is None when no connection reported it."""
    got = [i for i in infos if i is not None]
    out: dict[str, Any] = {"connections": len(infos), "with_info": len(got)}
    for name in SUMMED:
        vals = [getattr(i, name) for i in got if getattr(i, name) is not None]
        out[name] = sum(vals) if vals else None
    for name in MAXED:
        vals = [getattr(i, name) for i in got if getattr(i, name) is not None]
        out[name + "_max"] = max(vals) if vals else None
    rtts = [i.rtt for i in got if i.rtt is not None]
    out["rtt_mean"] = sum(rtts) / len(rtts) if rtts else None
    return out
