"""Helpers the tests and the benchmarks share (``from tests.netutil import free_port``)."""

from __future__ import annotations

import random
import socket


def free_port() -> int:
    """A loopback TCP port that is free now, outside the kernel's ephemeral range (32768+),
    where fabrics of other runs sit at fixed ports (50000 + device id) and where the kernel
    hands out the ports of outgoing connections."""
    while True:
        port = random.randrange(20000, 30000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
