"""Batched socket I/O for the host agent: sendmmsg(2) and recvmmsg(2) through ctypes.

One ``socket.send``/``recvfrom_into`` per packet costs a Python-to-C call and a system call
each; at the agent's packet rates that was a third of its per-packet time. ``BatchSender``
copies frames into preallocated slots and writes up to ``slots`` of them with one sendmmsg;
``BatchReceiver`` reads up to ``slots`` datagrams (with their source address and, for ECN, the
IP TOS byte of each) with one recvmmsg. The message headers are built once; per call only
the lengths change (written with struct into the headers' memory, no ctypes objects per
packet).

Where libc has no sendmmsg/recvmmsg (or the socket is not a real one, as in tests that hand
the agent a fake), ``sender()``/``receiver()`` return the plain per-packet fallbacks with the
same interface, so the agent's logic is the same either way.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import socket
import struct
from typing import Any, Protocol

MSG_DONTWAIT = 0x40
_IP_TOS = getattr(socket, "IP_TOS", 1)


class _Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [("msg_name", ctypes.c_void_p), ("msg_namelen", ctypes.c_uint32),
                ("msg_iov", ctypes.c_void_p), ("msg_iovlen", ctypes.c_size_t),
                ("msg_control", ctypes.c_void_p), ("msg_controllen", ctypes.c_size_t),
                ("msg_flags", ctypes.c_int)]


class _Mmsghdr(ctypes.Structure):
    _fields_ = [("msg_hdr", _Msghdr), ("msg_len", ctypes.c_uint)]


MMSG = ctypes.sizeof(_Mmsghdr)
IOV = ctypes.sizeof(_Iovec)
_LEN_AT = _Mmsghdr.msg_len.offset
_CTRL_LEN_AT = _Msghdr.msg_controllen.offset
_IOV_LEN = struct.Struct("@N")     # a size_t
_U32 = struct.Struct("=I")
_SIN = struct.Struct("!HH4s")       # sockaddr_in: family (host order, ignored), port, address
_CMSG_HDR = ctypes.sizeof(ctypes.c_size_t) + 8   # CMSG_DATA's offset
_ALIGN = ctypes.sizeof(ctypes.c_size_t)           # CMSG_ALIGN
_CMSG = struct.Struct("@Nii")      # cmsg_len, cmsg_level, cmsg_type
_TIMESPEC = struct.Struct("@qq")   # tv_sec, tv_nsec
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)   # its cmsg is SCM_TIMESTAMPNS, the same
CTRL = 64      # control bytes per message: an SCM_TIMESTAMPNS (32) and an IP_TOS (24) cmsg


def _libc() -> Any:
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        send, recv = lib.sendmmsg, lib.recvmmsg
    except (OSError, AttributeError):
        return None
    send.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int]
    send.restype = ctypes.c_int
    recv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int,
                     ctypes.c_void_p]
    recv.restype = ctypes.c_int
    return lib


LIBC = _libc()
AVAILABLE = LIBC is not None and os.environ.get("P4FABRIC_BATCHIO", "1") != "0"
"""sendmmsg and recvmmsg are there (Linux's glibc/musl) and not switched off with
P4FABRIC_BATCHIO=0 (bench/agent_bench.py compares both); otherwise the fallbacks serve."""


class Sender(Protocol):
    n: int
    dropped: int

    def send(self, frame: bytes | bytearray) -> None: ...
    def flush(self) -> int: ...


def _addr(buf: bytearray) -> tuple[Any, int]:
    """(the ctypes view keeping ``buf`` exported, its address)."""
    view = (ctypes.c_char * len(buf)).from_buffer(buf)
    return view, ctypes.addressof(view)


class _Slots:
    """``slots`` buffers of ``slot_size`` bytes, an iovec on each and an mmsghdr on each iovec,
    in memory that stays put (the kernel reads and writes it at every call)."""

    def __init__(self, sock: socket.socket, slots: int, slot_size: int, iov_len: int) -> None:
        assert LIBC is not None
        self.sock = sock
        self.fd = sock.fileno()
        self.slots, self.slot_size = slots, slot_size
        self.buf = bytearray(slots * slot_size)
        self.iov = bytearray(slots * IOV)
        self.msgs = bytearray(slots * MMSG)
        self._views = [_addr(self.buf), _addr(self.iov), _addr(self.msgs)]
        base, iov, self._msgs_at = (a for _, a in self._views)
        for i in range(slots):
            v = _Iovec.from_buffer(self.iov, i * IOV)
            v.iov_base, v.iov_len = base + i * slot_size, iov_len
            m = _Mmsghdr.from_buffer(self.msgs, i * MMSG)
            m.msg_hdr.msg_iov, m.msg_hdr.msg_iovlen = iov + i * IOV, 1
        self.calls = 0

    def _hdr(self, i: int) -> _Msghdr:
        return _Mmsghdr.from_buffer(self.msgs, i * MMSG).msg_hdr


class BatchSender(_Slots):
    """Frames queued in ``slots`` preallocated buffers of ``slot_size`` bytes, written to a
    connected/bound socket (the agent's AF_PACKET socket) by one sendmmsg per ``flush``
    (also when the slots are full). A frame the kernel refuses for lack of buffer space
    (ENOBUFS/EAGAIN) is dropped and counted, as a lost packet the transport recovers."""

    def __init__(self, sock: socket.socket, slots: int = 64, slot_size: int = 9216) -> None:
        super().__init__(sock, slots, slot_size, 0)
        self._len_at = [i * IOV + _Iovec.iov_len.offset for i in range(slots)]
        self.n = 0
        self.dropped = 0
        self.sent = 0

    def send(self, frame: bytes | bytearray) -> None:
        """Queue ``frame`` (copied: the caller may patch its template again at once)."""
        n = self.n
        o = n * self.slot_size
        k = len(frame)
        self.buf[o:o + k] = frame
        _IOV_LEN.pack_into(self.iov, self._len_at[n], k)
        self.n = n + 1
        if n + 1 == self.slots:
            self.flush()

    def flush(self) -> int:
        """Write every queued frame; how many the kernel took."""
        n, i = self.n, 0
        self.n = 0
        while i < n:
            r = LIBC.sendmmsg(self.fd, self._msgs_at + i * MMSG, n - i, 0)
            self.calls += 1
            if r > 0:
                i += r
                continue
            e = ctypes.get_errno()
            if e == errno.EINTR:
                continue
            if e not in (errno.ENOBUFS, errno.EAGAIN, errno.ENETDOWN, errno.ENXIO):
                raise OSError(e, f"sendmmsg: {errno.errorcode.get(e, e)}")
            self.dropped += 1   # dropped here; the transport's timer resends it
            i += 1
        self.sent += n
        return n


class PlainSender:
    """The fallback: one ``send`` per frame, at once (``flush`` has nothing to do)."""

    n = 0   # frames queued: never any

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.dropped = 0

    def send(self, frame: bytes | bytearray) -> None:
        try:
            self.sock.send(frame)
        except OSError as e:
            if e.errno not in (errno.ENOBUFS, errno.EAGAIN):
                raise
            self.dropped += 1

    def flush(self) -> int:
        return 0


def sender(sock: Any, slots: int = 64) -> BatchSender | PlainSender:
    """A batching sender for a real socket when sendmmsg exists, else the plain one."""
    if AVAILABLE and isinstance(sock, socket.socket):
        return BatchSender(sock, slots)
    return PlainSender(sock)


class BatchReceiver(_Slots):
    """Up to ``slots`` datagrams per recvmmsg from a UDP socket (non-blocking): after
    ``recv()`` returned k, datagram i of k is ``buf[i * slot_size:][:length(i)]`` from
    ``source(i)``, and ``tos(i)`` is its IP TOS byte when the socket has IP_RECVTOS on."""

    def __init__(self, sock: socket.socket, slots: int = 64, slot_size: int = 9216) -> None:
        super().__init__(sock, slots, slot_size, slot_size)
        self.names = bytearray(slots * 16)
        self.ctrl = bytearray(slots * CTRL)
        self._views += [_addr(self.names), _addr(self.ctrl)]
        names, ctrl = self._views[-2][1], self._views[-1][1]
        for i in range(slots):
            m = self._hdr(i)
            m.msg_name, m.msg_namelen = names + i * 16, 16
            m.msg_control, m.msg_controllen = ctrl + i * CTRL, CTRL
        self._pristine = bytes(self.msgs)   # the kernel rewrites name/control lengths
        self._ips: dict[bytes, str] = {}

    def recv(self) -> int:
        """Datagrams waiting now (0: none), at most ``slots``."""
        self.msgs[:] = self._pristine
        r = LIBC.recvmmsg(self.fd, self._msgs_at, self.slots, MSG_DONTWAIT, None)
        self.calls += 1
        if r < 0:
            e = ctypes.get_errno()
            if e in (errno.EAGAIN, errno.EINTR):
                return 0
            raise OSError(e, f"recvmmsg: {errno.errorcode.get(e, e)}")
        return r

    def length(self, i: int) -> int:
        return _U32.unpack_from(self.msgs, i * MMSG + _LEN_AT)[0]

    def source(self, i: int) -> tuple[str, int]:
        _fam, port, raw = _SIN.unpack_from(self.names, i * 16)
        ip = self._ips.get(raw)
        if ip is None:
            ip = self._ips[raw] = socket.inet_ntoa(raw)
        return ip, port

    def _cmsg(self, i: int, level: int, kind: int, size: int) -> int:
        """Where in ``ctrl`` datagram i's control message (level, kind) with at least
        ``size`` data bytes starts its data (-1: the kernel attached none)."""
        end = i * CTRL + min(CTRL, _IOV_LEN.unpack_from(self.msgs, i * MMSG + _CTRL_LEN_AT)[0])
        o = i * CTRL
        while o + _CMSG_HDR <= end:
            ln, lv, kd = _CMSG.unpack_from(self.ctrl, o)
            if ln < _CMSG_HDR:
                return -1
            if lv == level and kd == kind and ln >= _CMSG_HDR + size:
                return o + _CMSG_HDR
            o += (ln + _ALIGN - 1) & ~(_ALIGN - 1)
        return -1

    def tos(self, i: int) -> int:
        """The TOS byte of datagram i (0 if the kernel attached none)."""
        at = self._cmsg(i, socket.IPPROTO_IP, _IP_TOS, 1)
        return self.ctrl[at] if at >= 0 else 0

    def stamp(self, i: int) -> float | None:
        """When the kernel received datagram i (CLOCK_REALTIME seconds) when the socket has
        SO_TIMESTAMPNS on; else None."""
        at = self._cmsg(i, socket.SOL_SOCKET, SO_TIMESTAMPNS, _TIMESPEC.size)
        if at < 0:
            return None
        sec, ns = _TIMESPEC.unpack_from(self.ctrl, at)
        return sec + ns * 1e-9


def timespec_stamp(ancillary: list[tuple[int, int, bytes]]) -> float | None:
    """The SCM_TIMESTAMPNS of a ``recvmsg`` result's ancillary data (seconds), else None."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            sec, ns = _TIMESPEC.unpack_from(data)
            return sec + ns * 1e-9
    return None


def receiver(sock: Any, slots: int = 64) -> BatchReceiver | None:
    """A batching receiver for a real socket when recvmmsg exists, else None (the caller
    reads one datagram at a time)."""
    if AVAILABLE and isinstance(sock, socket.socket):
        return BatchReceiver(sock, slots)
    return None
