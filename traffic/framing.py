"""Message framing of the TCP mode: a fixed header, then `length` payload bytes.

TCP is a byte stream; the receiver needs to know which flow a connection carries and when that
flow's bytes are complete. Each connection (one per flow and QP) therefore starts with a HELLO
(who we are, sent at set-up, before the start barrier); each send is one DATA message whose
header carries its length; the receiver answers each completed DATA message with an ACK message
on the same connection, which is what ends the flow at the sender (as the last ACK does in the
UDP mode). READY (both directions, at set-up) is the start barrier: "all my connections are up". The decoder consumes arbitrary chunks of the stream and never keeps payload bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = b"P4FT"
VERSION = 1
HELLO, DATA, ACK, READY = 1, 2, 3, 4
KINDS = {HELLO: "HELLO", DATA: "DATA", ACK: "ACK", READY: "READY"}

#: magic, version, kind, job, src_rank, dst_rank, qp, nqps, flow, length
MSG = struct.Struct("!4sBBHHHHHIQ")


class FramingError(ValueError):
    """The stream does not carry our messages (bad magic, version or kind)."""


@dataclass(frozen=True)
class Header:
    kind: int
    job: int
    src: int
    dst: int
    qp: int
    nqps: int
    flow: int
    length: int = 0    # DATA: payload bytes that follow; ACK: payload bytes received

    def pack(self) -> bytes:
        return MSG.pack(MAGIC, VERSION, self.kind, self.job, self.src, self.dst, self.qp,
                        self.nqps, self.flow, self.length)


def unpack(buf: bytes | bytearray | memoryview) -> Header:
    magic, ver, kind, job, src, dst, qp, nqps, flow, length = MSG.unpack(buf)
    if magic != MAGIC:
        raise FramingError(f"bad magic {bytes(magic)!r}")
    if ver != VERSION:
        raise FramingError(f"unsupported version {ver}")
    if kind not in KINDS:
        raise FramingError(f"unknown message kind {kind}")
    if kind != DATA and kind != ACK and length:
        raise FramingError(f"{KINDS[kind]} with length {length}")
    return Header(kind, job, src, dst, qp, nqps, flow, length)


@dataclass(frozen=True)
class Event:
    """What one chunk of stream told us: a header began (`header`), `payload` bytes of the
    current DATA message arrived, or the current message ended (`end`)."""

    header: Header | None = None
    payload: int = 0
    end: Header | None = None


class Decoder:
    """Incremental parser of one connection's byte stream (any chunking)."""

    def __init__(self) -> None:
        self._hdr = bytearray()
        self.current: Header | None = None
        self.remaining = 0
        self.messages = 0

    @property
    def idle(self) -> bool:
        """Between messages, with no partial header buffered."""
        return self.current is None and not self._hdr

    def feed(self, data: bytes | bytearray | memoryview) -> list[Event]:
        mv = memoryview(data)
        events: list[Event] = []
        i, n = 0, len(mv)
        while i < n:
            if self.current is None:
                take = min(MSG.size - len(self._hdr), n - i)
                self._hdr += mv[i:i + take]
                i += take
                if len(self._hdr) < MSG.size:
                    break
                h = unpack(self._hdr)
                self._hdr.clear()
                events.append(Event(header=h))
                if h.kind == DATA and h.length:
                    self.current, self.remaining = h, h.length
                else:
                    self.messages += 1
                    events.append(Event(end=h))
            else:
                take = min(self.remaining, n - i)
                i += take
                self.remaining -= take
                events.append(Event(payload=take))
                if self.remaining == 0:
                    events.append(Event(end=self.current))
                    self.current = None
                    self.messages += 1
        return events
