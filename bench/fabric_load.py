"""Load generator of bench/fabric_bench.py: a paced UDP sender and a counting sink, run inside
Mininet hosts, both batched so that 16 of them on 2 cores offer and count well over 100 Mbit/s
per host; the per-datagram Python loops of tests/topo/fabric_traffic.py were the limit of an
earlier eBPF run (64 Mbit/s, 0 % loss).

    python bench/fabric_load.py send DST SPORT COUNT SIZE PPS START_AT [MODE [PERIOD_MS]]
    python bench/fabric_load.py sink IDLE_S FIRST_S       # prints "ready", then one JSON line

The sender writes ``COUNT`` datagrams of ``SIZE`` bytes (a 4-byte sequence number first) at
``PPS`` from wall-clock ``START_AT``, one batch every ``PERIOD_MS`` (1 ms by default), and
prints one JSON line (what it did, its CPU seconds, how late it finished). ``MODE``:

- ``gso`` (default): UDP GSO — one ``send`` per batch of up to 64 datagrams with the socket's
  ``UDP_SEGMENT`` = ``SIZE``; the batch's buffer holds one sequence number at the start of
  every ``SIZE``-byte slice, and the kernel cuts it into separate datagrams at the host's own
  transmit (the hosts' interfaces have GSO, TSO and checksum offload off, so no super-packet
  leaves the host: the switches' counters count datagrams, which fabric_bench checks). A
  kernel that refuses UDP_SEGMENT makes it fall back to ``mmsg``.
- ``mmsg``: one ``sendmmsg`` per batch (traffic.batchio), a Python copy per datagram.

The sink reads up to 256 datagrams per recvmmsg and counts distinct sequence numbers per
source (a numpy bitmap per source, one vectorised update per batch: no Python per datagram)
until ``IDLE_S`` pass without a datagram (``FIRST_S`` before the first) and prints
{"got": N, "first": t, "last": t, "cpu_s": s, "user_s": s, "calls": n}.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SINK_PORT = 9999
SOL_UDP = 17
UDP_SEGMENT = 103          # linux/udp.h
GSO_MAX_SEGMENTS = 64      # UDP_MAX_SEGMENTS of kernels before 6.x raised it (128 now)
MAX_UDP_PAYLOAD = 65507    # 65535 - IPv4 and UDP headers
SINK_SLOTS = 256
SINK_SLOT_SIZE = 2048      # the bench's datagrams are <= 1400 bytes; a longer one is cut
_SEQ = struct.Struct(">I")


def gso_segments(size: int) -> int:
    """Datagrams of ``size`` payload bytes one GSO send may carry."""
    return max(1, min(GSO_MAX_SEGMENTS, MAX_UDP_PAYLOAD // max(1, size)))


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def _user_s() -> float:
    return os.times().user


def send(dst: str, sport: int, count: int, size: int, pps: float, start_at: float,
         mode: str = "gso", period_s: float = 0.001) -> int:
    from traffic import batchio

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.bind(("0.0.0.0", sport))
    s.connect((dst, SINK_PORT))
    seg = 0
    if mode == "gso" and size >= _SEQ.size:
        try:
            s.setsockopt(SOL_UDP, UDP_SEGMENT, size)
            seg = gso_segments(size)
        except OSError:
            seg = 0
    out = batchio.sender(s, slots=64)
    cap = seg or 64
    batch = max(1, min(cap, int(pps * period_s))) if pps else cap
    buf = bytearray(cap * size)
    view = memoryview(buf)
    payload = bytearray(size)
    calls = errors = 0
    time.sleep(max(0.0, start_at - time.time()))
    cpu0, user0, t0 = _cpu_s(), _user_s(), time.monotonic()
    i = 0
    while i < count:
        if pps:
            d = t0 + i / pps - time.monotonic()
            if d > 0:
                time.sleep(d)
        b = min(batch, count - i)
        if seg:
            for k in range(b):
                _SEQ.pack_into(buf, k * size, i + k)
            try:
                s.send(view[:b * size])
            except OSError as e:
                if calls == 0 and e.errno in (errno.EIO, errno.EINVAL, errno.EOPNOTSUPP):
                    s.setsockopt(SOL_UDP, UDP_SEGMENT, 0)
                    seg, batch = 0, max(1, min(64, int(pps * period_s))) if pps else 64
                    continue   # this kernel cannot: the same batch again by sendmmsg
                errors += b    # e.g. ECONNREFUSED after an ICMP error: lost datagrams
            calls += 1
            i += b
            continue
        for _ in range(b):
            payload[:4] = i.to_bytes(4, "big")
            try:
                out.send(payload)
            except OSError:   # e.g. ECONNREFUSED after an ICMP error: a lost datagram
                errors += 1
            i += 1
        try:
            out.flush()
        except OSError:
            errors += 1
        calls += 1
    done = time.monotonic()
    print(json.dumps({"mode": "gso" if seg else "mmsg", "segments": seg, "batch": batch,
                      "calls": calls, "errors": errors, "cpu_s": _cpu_s() - cpu0,
                      "user_s": _user_s() - user0,
                      "lag_s": (done - (t0 + count / pps)) if pps else 0.0}), flush=True)
    return 0


class SeqCounter:
    """Distinct sequence numbers per source: a growing numpy bitmap per source key, updated
    with one vectorised assignment per batch."""

    def __init__(self) -> None:
        self.seen: dict[int, Any] = {}

    def add(self, key: int, seqs: Any) -> None:
        import numpy as np

        if not len(seqs):
            return
        bits = self.seen.get(key)
        top = int(seqs.max()) + 1
        if bits is None or top > len(bits):
            grown = np.zeros(max(top, 2 * len(bits) if bits is not None else 1 << 16), bool)
            if bits is not None:
                grown[:len(bits)] = bits
            bits = self.seen[key] = grown
        bits[seqs] = True

    def add_batch(self, keys: Any, seqs: Any) -> None:
        """``seqs[i]`` came from ``keys[i]`` (int64 arrays of one length)."""
        import numpy as np

        if not len(keys):
            return
        if (keys == keys[0]).all():
            self.add(int(keys[0]), seqs)
            return
        for key in np.unique(keys):
            self.add(int(key), seqs[keys == key])

    def total(self) -> int:
        return sum(int(b.sum()) for b in self.seen.values())


def source_key(ip: str, port: int) -> int:
    return int.from_bytes(socket.inet_aton(ip), "big") << 16 | port


def sink(idle_s: float, first_s: float) -> int:
    import select

    import numpy as np

    from traffic import batchio

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 23)
    s.bind(("0.0.0.0", SINK_PORT))
    rb = (batchio.BatchReceiver(s, SINK_SLOTS, SINK_SLOT_SIZE) if batchio.AVAILABLE else None)
    counter = SeqCounter()
    first = last = None
    calls = 0
    buf = bytearray(65536)
    if rb is not None:
        # live views on the receiver's buffers: each slot's first 4 bytes, each source address
        heads = np.frombuffer(rb.buf, dtype=">u4")[::rb.slot_size // 4]
        names = np.frombuffer(rb.names, dtype=np.dtype(
            [("fam", "<u2"), ("port", ">u2"), ("addr", ">u4"), ("zero", "V8")]))
    print("ready", flush=True)
    cpu0, user0 = _cpu_s(), _user_s()
    wait = first_s
    while True:
        if not select.select([s], [], [], wait)[0]:
            break
        if rb is not None:
            while True:
                k = rb.recv()
                calls += 1
                if not k:
                    break
                last = time.time()
                first = last if first is None else first
                keys = (names["addr"][:k].astype(np.int64) << 16) | names["port"][:k]
                counter.add_batch(keys, heads[:k].astype(np.int64))
                if k < rb.slots:
                    break
        else:
            _n, addr = s.recvfrom_into(buf)
            calls += 1
            last = time.time()
            first = last if first is None else first
            counter.add(source_key(*addr), np.array([_SEQ.unpack_from(buf)[0]]))
        wait = idle_s
    print(json.dumps({"got": counter.total(), "first": first, "last": last,
                      "cpu_s": _cpu_s() - cpu0, "user_s": _user_s() - user0,
                      "calls": calls}), flush=True)
    return 0


# ---- the bench's side -----------------------------------------------------------------------
def start_sender(host: Any, dst_ip: str, sport: int, count: int, size: int, pps: float,
                 start_at: float, mode: str = "gso", period_ms: float = 1.0
                 ) -> subprocess.Popen:
    """The sender in ``host``; its report comes from ``sender_report`` once it has ended."""
    return host.popen([sys.executable, str(Path(__file__).resolve()), "send", dst_ip, str(sport),
                       str(count), str(size), str(pps), str(start_at), mode, str(period_ms)],
                      cwd=str(ROOT), text=True, stdout=subprocess.PIPE,
                      stderr=subprocess.DEVNULL)


def sender_report(proc: subprocess.Popen) -> dict[str, Any] | None:
    """The JSON line an ended sender printed (None if it printed none)."""
    out = proc.stdout.read() if proc.stdout is not None else ""
    lines = out.strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None


class Sink:
    """A counting sink in ``host``; ``wait_ready()`` returns once it receives (start several
    first, then wait for each: their interpreters start in parallel)."""

    def __init__(self, host: Any, idle_s: float = 1.5, first_s: float = 30.0,
                 wait: bool = True) -> None:
        self.proc = host.popen([sys.executable, str(Path(__file__).resolve()), "sink",
                                str(idle_s), str(first_s)], cwd=str(ROOT), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"sink did not start: {line} {self.proc.stderr.read()[-300:]}")

    def result(self, timeout: float = 120.0) -> dict[str, Any]:
        out, err = self.proc.communicate(timeout=timeout)
        lines = out.strip().splitlines()
        if not lines:
            raise RuntimeError(f"sink printed nothing: {err[-300:]}")
        return json.loads(lines[-1])

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def main(argv: list[str]) -> int:
    if 7 <= len(argv) <= 9 and argv[0] == "send":
        return send(argv[1], int(argv[2]), int(argv[3]), int(argv[4]), float(argv[5]),
                    float(argv[6]), argv[7] if len(argv) > 7 else "gso",
                    float(argv[8]) / 1e3 if len(argv) > 8 else 0.001)
    if len(argv) == 3 and argv[0] == "sink":
        return sink(float(argv[1]), float(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
