"""Batched socket I/O (traffic.batchio) over loopback UDP: what sendmmsg writes recvmmsg reads
back with the right lengths, bytes, source and TOS; the fallbacks behave the same."""

from __future__ import annotations

import socket
import time

import pytest

from traffic import batchio

pytestmark = pytest.mark.skipif(not batchio.AVAILABLE, reason="libc lacks sendmmsg/recvmmsg")


@pytest.fixture
def pair():
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    rx.setsockopt(socket.IPPROTO_IP, getattr(socket, "IP_RECVTOS", 13), 1)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.bind(("127.0.0.1", 0))
    tx.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0x02)
    tx.connect(rx.getsockname())
    yield tx, rx
    tx.close()
    rx.close()


def _drain(r: batchio.BatchReceiver, want: int) -> list[tuple[bytes, tuple[str, int], int]]:
    got: list[tuple[bytes, tuple[str, int], int]] = []
    deadline = time.monotonic() + 10
    while len(got) < want and time.monotonic() < deadline:
        k = r.recv()
        for i in range(k):
            o = i * r.slot_size
            got.append((bytes(r.buf[o:o + r.length(i)]), r.source(i), r.tos(i)))
        if not k:
            time.sleep(0.01)
    return got


def test_batches_round_trip(pair) -> None:  # noqa: ANN001
    tx, rx = pair
    s = batchio.sender(tx, slots=16)
    assert isinstance(s, batchio.BatchSender)
    frames = [bytes([i % 251]) * (1 + 37 * i % 1400) for i in range(100)]
    template = bytearray(1500)
    for f in frames:
        template[:len(f)] = f          # the caller patches one buffer again and again
        s.send(memoryview(template)[:len(f)])
    s.flush()
    assert s.sent == 100 and s.dropped == 0 and s.calls < 100
    r = batchio.receiver(rx, slots=32)
    assert isinstance(r, batchio.BatchReceiver)
    got = _drain(r, 100)
    assert [g[0] for g in got] == frames
    assert {g[1] for g in got} == {tx.getsockname()}
    assert {g[2] for g in got} == {0x02}
    assert r.calls < 50
    assert r.recv() == 0      # nothing waiting: no block, no error


def test_plain_fallback_sends_at_once() -> None:
    class Fake:
        def __init__(self) -> None:
            self.sent: list[bytes] = []

        def send(self, b: bytes) -> int:
            self.sent.append(bytes(b))
            return len(b)

    f = Fake()
    s = batchio.sender(f)
    assert isinstance(s, batchio.PlainSender)
    s.send(b"abc")
    assert f.sent == [b"abc"] and s.flush() == 0
    assert batchio.receiver(f) is None


def test_kernel_receive_stamps_come_with_the_tos_byte(pair) -> None:  # noqa: ANN001
    tx, rx = pair
    rx.setsockopt(socket.SOL_SOCKET, batchio.SO_TIMESTAMPNS, 1)
    r = batchio.receiver(rx, slots=8)
    assert isinstance(r, batchio.BatchReceiver)
    # The kernel turns arrival stamping on a moment after the first socket asks for it (a
    # deferred static-key switch); until then a datagram is stamped when read. An agent asks
    # long before its first datagram; here, wait until a warm-up datagram comes stamped early.
    deadline = time.monotonic() + 5
    while True:
        tx.send(b"w")
        time.sleep(0.05)
        read_at = time.time()
        assert r.recv() == 1
        early = r.stamp(0)
        if early is not None and early < read_at - 0.02 or time.monotonic() > deadline:
            break
    before = time.time()
    for i in range(5):
        tx.send(bytes([i]) * 100)
    time.sleep(0.2)               # they wait in the socket: the stamp is their arrival
    read_at = time.time()
    k = r.recv()
    assert k == 5
    stamps = [r.stamp(i) for i in range(k)]
    assert all(s is not None and before - 0.01 <= s <= read_at - 0.15 for s in stamps), \
        (before, stamps, read_at)
    assert stamps == sorted(stamps)
    assert [r.tos(i) for i in range(k)] == [0x02] * 5      # found behind the stamp
    # the plain path's ancillary data reads the same
    tx.send(b"x")
    time.sleep(0.05)
    _n, anc, _fl, _addr = rx.recvmsg_into([bytearray(64)], batchio.CTRL)
    ts = batchio.timespec_stamp(anc)
    assert ts is not None and before <= ts <= time.time()
    assert batchio.timespec_stamp([]) is None


def test_no_stamp_without_the_socket_option(pair) -> None:  # noqa: ANN001
    tx, rx = pair
    r = batchio.receiver(rx, slots=4)
    assert isinstance(r, batchio.BatchReceiver)
    tx.send(b"y")
    got = _drain(r, 1)
    assert got and r.stamp(0) is None and r.tos(0) == 0x02
