"""Tiny traffic helpers for the fabric integration tests: kernel UDP senders and a counting
receiver run inside Mininet hosts (no raw sockets, no scapy: fast to start)."""

from __future__ import annotations

import json
import subprocess
import sys

SINK_PORT = 9999

_SENDER = """
import socket, sys, time
dst, sport, n, size, pps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", sport))
start_at = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
if start_at:
    time.sleep(max(0.0, start_at - time.time()))
t0 = time.monotonic()
for i in range(n):
    if pps:
        d = t0 + i / pps - time.monotonic()
        if d > 0:
            time.sleep(d)
    s.sendto(i.to_bytes(4, "big") + bytes(size - 4), (dst, SINKPORT))
""".replace("SINKPORT", str(SINK_PORT))

_SINK = """
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.bind(("0.0.0.0", SINKPORT))
s.settimeout(float(sys.argv[2]))
seqs = []
print("ready", flush=True)
try:
    while True:
        data = s.recv(65535)
        seqs.append((int.from_bytes(data[:4], "big"), time.time()))
        s.settimeout(float(sys.argv[1]))
except socket.timeout:
    pass
print(json.dumps(seqs), flush=True)
""".replace("SINKPORT", str(SINK_PORT))

UDP_FRAME_OVERHEAD = 14 + 20 + 8
"""Ethernet + IPv4 + UDP header bytes around a datagram's payload."""


def send_udp(host, dst_ip: str, sport: int, count: int, size: int = 100,
             pps: float = 0.0) -> None:
    """Send ``count`` datagrams of ``size`` payload bytes from ``host`` (blocks until done)."""
    p = start_sender(host, dst_ip, sport, count, size, pps)
    assert p.wait(60) == 0


def start_sender(host, dst_ip: str, sport: int, count: int, size: int = 100,
                 pps: float = 0.0, start_at: float = 0.0) -> subprocess.Popen:
    """Like send_udp, in the background; ``start_at`` (wall clock) lines several senders up."""
    return host.popen([sys.executable, "-c", _SENDER, dst_ip, str(sport), str(count),
                       str(size), str(pps), str(start_at)], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL)


class Sink:
    """A receiver on SINK_PORT in ``host`` that records (seq, arrival time) until ``idle_s``
    seconds pass without a datagram (``first_s`` before the first one: senders may take a
    while to start on a loaded machine). Binding it also stops ICMP port-unreachable replies."""

    def __init__(self, host, idle_s: float = 2.0, first_s: float = 30.0) -> None:
        self.proc = host.popen([sys.executable, "-c", _SINK, str(idle_s), str(first_s)],
                               text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.proc.stdout.readline().strip() == "ready"

    def result(self, timeout: float = 60.0) -> list[tuple[int, float]]:
        out, err = self.proc.communicate(timeout=timeout)
        lines = out.strip().splitlines()
        assert lines, err
        return [tuple(x) for x in json.loads(lines[-1])]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
