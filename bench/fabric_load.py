"""Load generator of bench/fabric_bench.py: a paced UDP sender and a counting sink, run inside
Mininet hosts, both batched (traffic.batchio: sendmmsg/recvmmsg) so that 16 of them on 2 cores
offer and count well over 100 Mbit/s per host; the per-datagram Python loops of
tests/topo/fabric_traffic.py were the limit of the last eBPF run (64 Mbit/s, 0 % loss).

    python bench/fabric_load.py send DST SPORT COUNT SIZE PPS START_AT
    python bench/fabric_load.py sink IDLE_S FIRST_S       # prints "ready", then one JSON line

The sender writes ``COUNT`` datagrams of ``SIZE`` bytes (a 4-byte sequence number first) at
``PPS`` from wall-clock ``START_AT``, in batches of about a millisecond's worth. The sink
counts distinct sequence numbers per source until ``IDLE_S`` pass without a datagram
(``FIRST_S`` before the first) and prints {"got": N, "first": t, "last": t}.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SINK_PORT = 9999


def send(dst: str, sport: int, count: int, size: int, pps: float, start_at: float) -> int:
    from traffic import batchio

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.bind(("0.0.0.0", sport))
    s.connect((dst, SINK_PORT))
    out = batchio.sender(s, slots=64)
    batch = max(1, min(64, int(pps * 0.001))) if pps else 64
    payload = bytearray(size)
    time.sleep(max(0.0, start_at - time.time()))
    t0 = time.monotonic()
    i = 0
    while i < count:
        if pps:
            d = t0 + i / pps - time.monotonic()
            if d > 0:
                time.sleep(d)
        for _ in range(min(batch, count - i)):
            payload[:4] = i.to_bytes(4, "big")
            try:
                out.send(payload)
            except OSError:   # e.g. ECONNREFUSED after an ICMP error: a lost datagram
                pass
            i += 1
        try:
            out.flush()
        except OSError:
            pass
    return 0


def sink(idle_s: float, first_s: float) -> int:
    from traffic import batchio

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 23)
    s.bind(("0.0.0.0", SINK_PORT))
    rb = batchio.receiver(s, slots=64)
    seen: dict[tuple[str, int], bytearray] = {}
    got = 0
    first = last = None
    print("ready", flush=True)
    buf = bytearray(65536)
    wait = first_s
    while True:
        import select

        if not select.select([s], [], [], wait)[0]:
            break
        now = time.time()
        dgrams: list[tuple[int, tuple[str, int]]] = []
        if rb is not None:
            k = rb.recv()
            for j in range(k):
                o = j * rb.slot_size
                dgrams.append((int.from_bytes(rb.buf[o:o + 4], "big"), rb.source(j)))
        else:
            n, addr = s.recvfrom_into(buf)
            dgrams.append((int.from_bytes(buf[:4], "big"), addr))
        for seq, src in dgrams:
            bits = seen.get(src)
            if bits is None:
                bits = seen[src] = bytearray(1 << 16)
            if seq >> 3 >= len(bits):
                bits.extend(bytes((seq >> 3) - len(bits) + 1))
            if not bits[seq >> 3] >> (seq & 7) & 1:
                bits[seq >> 3] |= 1 << (seq & 7)
                got += 1
        if dgrams:
            first = now if first is None else first
            last = now
        wait = idle_s
    print(json.dumps({"got": got, "first": first, "last": last}), flush=True)
    return 0


# ---- the bench's side -----------------------------------------------------------------------
def start_sender(host: Any, dst_ip: str, sport: int, count: int, size: int, pps: float,
                 start_at: float) -> subprocess.Popen:
    return host.popen([sys.executable, str(Path(__file__).resolve()), "send", dst_ip, str(sport),
                       str(count), str(size), str(pps), str(start_at)], cwd=str(ROOT),
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Sink:
    """A counting sink in ``host`` (started ready to receive)."""

    def __init__(self, host: Any, idle_s: float = 1.5, first_s: float = 30.0) -> None:
        self.proc = host.popen([sys.executable, str(Path(__file__).resolve()), "sink",
                                str(idle_s), str(first_s)], cwd=str(ROOT), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
    if len(argv) == 7 and argv[0] == "send":
        return send(argv[1], int(argv[2]), int(argv[3]), int(argv[4]), float(argv[5]),
                    float(argv[6]))
    if len(argv) == 3 and argv[0] == "sink":
        return sink(float(argv[1]), float(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
