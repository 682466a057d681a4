"""Switch ports: Linux interfaces through AF_PACKET raw sockets, and in-memory / pcap-file ports.

Every port offers the same small surface to the switch loop: a pollable ``fileno()``, a batched
non-blocking ``recv_batch(n)`` and ``send(data)``, plus per-port counters. In-memory ports make
the whole switch testable without root and without a kernel; pcap-file ports replay a capture as
the port's input and record its output.

AF_PACKET details that matter:
* the socket is created with protocol 0 (receives nothing) and only then bound with ETH_P_ALL to
  one interface, so no frame of another interface ever slips in before ``bind``;
* frames the switch itself sent out of the interface would come back as PACKET_OUTGOING copies;
  PACKET_IGNORE_OUTGOING (Linux >= 4.20) stops them in the kernel, and on older kernels they
  are filtered by the pkttype ``recvfrom`` reports;
* per-socket promiscuous membership (PACKET_MR_PROMISC) so frames for other MACs arrive on real
  NICs; it ends with the socket, leaving the interface as it was;
* large socket buffers (SO_RCVBUFFORCE/SO_SNDBUFFORCE as root) absorb bursts while the Python
  pipeline catches up — the reason p4switch does not lose bursts below its capacity.
"""

from __future__ import annotations

import errno
import os
import select
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path

from p4switch.hidden import (
    ANCILLARY,
    HiddenStats,
    enable_rx_timestamps,
    read_packet_statistics,
    rx_time_ns,
)
from p4switch.pcap import PcapWriter, read_pcap

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
SO_RCVBUFFORCE = 33
SO_SNDBUFFORCE = 32

ETH_HEADER_LEN = 14
VLAN_TAG_LEN = 4
MIN_FRAME = ETH_HEADER_LEN
"""Shorter frames cannot even hold an Ethernet header: counted ``rx_too_short`` and dropped."""

DEFAULT_SOCKET_BUFFER = 8 << 20


class PcapNaming(StrEnum):
    """How ``--pcap`` names a port's files: by port number (p4switch) or by interface name
    (BMv2, so ``p4switch-ss`` writes what a BMv2 harness looks for)."""

    PORT = "port"
    INTERFACE = "interface"


@dataclass
class PortStats:
    """Per-port counters, readable from any thread (plain ints; the switch loop is the writer)."""

    rx_packets: int = 0
    rx_bytes: int = 0
    tx_packets: int = 0
    tx_bytes: int = 0
    rx_too_short: int = 0  # < 14 bytes: no Ethernet header
    rx_oversized: int = 0  # > MTU + Ethernet header + one VLAN tag
    rx_malformed: int = 0  # parser_error / run-time "error" drops reported by the pipeline
    rx_errors: int = 0  # the pipeline raised on it (a bug, never a crash)
    rx_dropped: int = 0  # dropped by the program (mark_to_drop, no egress port, ...)
    tx_errors: int = 0  # the kernel refused the send (ENOBUFS, ENETDOWN, EMSGSIZE, ...)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class Port:
    """Base of all ports. ``max_frame`` bounds accepted frame sizes (oversized -> counted)."""

    kind = "port"
    raw_send: Callable[[bytes], object] | None = None
    """The transmit primitive the switch's inline path may call directly (no pcap, no counters:
    the switch counts per batch); it raises OSError when the frame was not taken, and the
    switch then falls back to ``send``. None: always use ``send``."""
    hidden: HiddenStats | None = None
    """Kernel-side drops and ingress lag (p4switch/hidden.py); None: the port has no kernel
    queue in front of it."""

    def __init__(self, number: int, name: str, max_frame: int = 1500 + 18) -> None:
        if not 0 <= number < 512:
            raise ValueError(f"port number {number} out of range 0..511 (9-bit ports)")
        self.number = number
        self.name = name
        self.max_frame = max_frame
        self.stats = PortStats()
        self.pcap_in: PcapWriter | None = None
        self.pcap_out: PcapWriter | None = None

    def fileno(self) -> int:
        raise NotImplementedError

    def recv_batch(self, max_frames: int) -> list[bytes]:
        """Up to ``max_frames`` frames that are ready now (never blocks)."""
        raise NotImplementedError

    def _send(self, data: bytes) -> None:
        raise NotImplementedError

    def send(self, data: bytes) -> bool:
        """Transmit one frame; a refused send is counted in ``tx_errors``, never raised."""
        try:
            self._send(data)
        except OSError:
            self.stats.tx_errors += 1
            return False
        st = self.stats
        st.tx_packets += 1
        st.tx_bytes += len(data)
        if self.pcap_out is not None:
            self.pcap_out.write(data)
        return True

    def capture(self, directory: str | Path, naming: PcapNaming | None = None) -> None:
        """Record this port's input and output as ``<dir>/<port>_in.pcap`` / ``_out.pcap``
        (``PcapNaming.INTERFACE``: ``<interface>_in.pcap``, as BMv2 names them)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        stem = self.name if naming == PcapNaming.INTERFACE else str(self.number)
        self.pcap_in = PcapWriter(d / f"{stem}_in.pcap")
        if self.pcap_out is None:
            self.pcap_out = PcapWriter(d / f"{stem}_out.pcap")

    def flush(self) -> None:
        for w in (self.pcap_in, self.pcap_out):
            if w is not None:
                w.flush()

    def close(self) -> None:
        for w in (self.pcap_in, self.pcap_out):
            if w is not None:
                w.close()

    def describe(self) -> str:
        return f"{self.number}@{self.name}"

    def refresh_hidden(self) -> None:
        """Fold the kernel's counters into ``hidden`` (they reset when read)."""


# --------------------------------------------------------------------------------------------
# AF_PACKET
# --------------------------------------------------------------------------------------------


def interface_mtu(ifname: str) -> int:
    """The interface's MTU from sysfs (1500 if it cannot be read)."""
    try:
        return int(Path(f"/sys/class/net/{ifname}/mtu").read_text().strip())
    except (OSError, ValueError):
        return 1500


class RawPort(Port):
    """A Linux interface through an AF_PACKET/SOCK_RAW socket (needs CAP_NET_RAW)."""

    kind = "raw"

    def __init__(
        self, number: int, ifname: str, *, socket_buffer: int = DEFAULT_SOCKET_BUFFER
    ) -> None:
        super().__init__(number, ifname, interface_mtu(ifname) + ETH_HEADER_LEN + VLAN_TAG_LEN)
        try:
            ifindex = socket.if_nametoindex(ifname)
        except OSError as e:
            raise OSError(errno.ENODEV, f"no such interface: {ifname}") from e
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        try:
            for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
                try:
                    sock.setsockopt(socket.SOL_SOCKET, force, socket_buffer)
                except OSError:
                    sock.setsockopt(socket.SOL_SOCKET, plain, socket_buffer)
            try:
                sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
                self._filter_outgoing = False
            except OSError:
                self._filter_outgoing = True
            mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
            try:
                sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            except OSError:
                pass  # promiscuity is a nicety (veths deliver every frame anyway)
            sock.bind((ifname, ETH_P_ALL))
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.ifindex = ifindex
        self.hidden: HiddenStats = HiddenStats()  # always: a raw socket has a kernel queue
        self._stamped = enable_rx_timestamps(sock)
        # a buffer one byte larger than anything acceptable: a frame that fills it is oversized
        self._bufsize = max(self.max_frame + 1, 2048)
        self.raw_send = sock.send

    def fileno(self) -> int:
        return self.sock.fileno()

    def recv_batch(self, max_frames: int) -> list[bytes]:
        out: list[bytes] = []
        bufsize = self._bufsize
        if self._filter_outgoing:
            recvfrom = self.sock.recvfrom
            while len(out) < max_frames:
                try:
                    data, addr = recvfrom(bufsize)
                except (BlockingIOError, InterruptedError):
                    break
                if addr[2] != PACKET_OUTGOING:
                    out.append(data)
            return out
        append = out.append
        if self._stamped:   # every frame's kernel receive time; its lag when the batch is read
            recvmsg = self.sock.recvmsg
            stamps: list[int] = []
            stamp = stamps.append
            for _ in range(max_frames):  # until EAGAIN, bounded
                try:
                    data, anc, _flags, _addr = recvmsg(bufsize, ANCILLARY)
                except (BlockingIOError, InterruptedError):
                    break
                append(data)
                t = rx_time_ns(anc)
                if t is not None:
                    stamp(t)
            if stamps:
                self.hidden.add_lags(stamps, time.time_ns())
            return out
        recv = self.sock.recv
        for _ in range(max_frames):  # until EAGAIN, bounded
            try:
                append(recv(bufsize))
            except (BlockingIOError, InterruptedError):
                break
        return out

    def _send(self, data: bytes) -> None:
        while True:
            try:
                self.sock.send(data)
                return
            except BlockingIOError:
                # the socket buffer is full: wait for room rather than drop (back-pressure,
                # as a real egress port would); bounded so a wedged interface cannot hang us
                _, w, _ = select.select([], [self.sock], [], 0.05)
                if not w:
                    raise

    def refresh_hidden(self) -> None:
        packets, drops = read_packet_statistics(self.sock)
        self.hidden.kernel_packets += packets
        self.hidden.kernel_drops += drops

    def close(self) -> None:
        super().close()
        self.sock.close()


# --------------------------------------------------------------------------------------------
# In-memory and pcap-file ports
# --------------------------------------------------------------------------------------------


class MemoryPort(Port):
    """A port fed from Python (``feed``) whose output is kept in ``sent`` (and optionally
    passed to ``on_send``). Pollable through an eventfd, so it wakes the switch loop like a
    socket does. Used by tests, the pcap-file mode and anything that wants a switch without
    interfaces."""

    kind = "memory"

    def __init__(
        self,
        number: int,
        name: str | None = None,
        *,
        max_frame: int = 1500 + 18,
        keep_sent: bool = True,
        on_send: Callable[[bytes], None] | None = None,
    ) -> None:
        super().__init__(number, name or f"mem{number}", max_frame)
        self._rx: deque[bytes] = deque()
        self._efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._keep_sent = keep_sent
        self._on_send = on_send
        self.sent: list[bytes] = []
        self._cv = threading.Condition()
        self.raw_send = self._send

    def fileno(self) -> int:
        return self._efd

    def feed(self, frames: bytes | Iterable[bytes]) -> None:
        """Queue frames as if they arrived on the wire (thread-safe)."""
        if isinstance(frames, bytes | bytearray):
            self._rx.append(bytes(frames))
        else:
            self._rx.extend(bytes(f) for f in frames)
        os.eventfd_write(self._efd, 1)

    @property
    def rx_pending(self) -> int:
        return len(self._rx)

    def recv_batch(self, max_frames: int) -> list[bytes]:
        try:
            os.eventfd_read(self._efd)
        except BlockingIOError:
            pass
        rx = self._rx
        out: list[bytes] = []
        while rx and len(out) < max_frames:
            out.append(rx.popleft())
        if rx:  # more than one batch waiting: stay readable so the loop comes back
            os.eventfd_write(self._efd, 1)
        return out

    def _send(self, data: bytes) -> None:
        if self._keep_sent:
            with self._cv:
                self.sent.append(data)
                self._cv.notify_all()
        if self._on_send is not None:
            self._on_send(data)

    def wait_sent(self, n: int, timeout: float = 5.0) -> list[bytes]:
        """Block until at least ``n`` frames were sent (or timeout); returns a copy of them."""
        with self._cv:
            self._cv.wait_for(lambda: len(self.sent) >= n, timeout)
            return list(self.sent)

    def close(self) -> None:
        super().close()
        try:
            os.close(self._efd)
        except OSError:
            pass


class PcapFilePort(MemoryPort):
    """A port whose input is a pcap file (replayed once, as fast as the switch takes it) and
    whose output goes to a pcap file. Either may be omitted."""

    kind = "pcap"

    def __init__(
        self,
        number: int,
        in_path: str | Path | None = None,
        out_path: str | Path | None = None,
        *,
        max_frame: int = 1500 + 18,
    ) -> None:
        super().__init__(number, f"pcap:{in_path or ''}", max_frame=max_frame, keep_sent=False)
        self.in_path = Path(in_path) if in_path else None
        if out_path is not None:
            self.pcap_out = PcapWriter(out_path)
        if self.in_path is not None:
            self.feed([data for _ts, data in read_pcap(self.in_path)])
        self.input_total = self.rx_pending
