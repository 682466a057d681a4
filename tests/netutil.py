"""Helpers the tests and the benchmarks share (``from tests.netutil import free_port``): a free
loopback port, and a child process whose stderr is collected (``spawn_logged``)."""

from __future__ import annotations

import random
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any

_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A loopback TCP port that is free now, outside the kernel's ephemeral range (32768+),
    where fabrics of other runs sit at fixed ports (50000 + device id) and where the kernel
    hands out the ports of outgoing connections. Never one this process was handed before:
    callers often take several ports before binding any (a BMv2 switch's gRPC and Thrift
    ports), and a port is free until its owner binds it."""
    if len(_HANDED_OUT) > 5000:  # a long-lived caller (a benchmark): start over, never run out
        _HANDED_OUT.clear()
    while True:
        port = random.randrange(20000, 30000)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port


def listening(port: int, timeout: float = 0.5) -> bool:
    """Whether a server accepts connections on loopback ``port`` now (a started process
    that binds late, or not at all: BMv2's Thrift port)."""
    with socket.socket() as s:
        s.settimeout(timeout)
        return s.connect_ex(("127.0.0.1", port)) == 0


def serve_free(switch: Any, **kw: Any) -> tuple[Any, str]:
    """``start_server`` for ``switch`` on a free loopback port: (server, "127.0.0.1:port").
    A port ``free_port`` found can be taken before the server binds it (by another switch of
    the same fabric, or another run); the server then refuses it and another is tried."""
    from p4switch.runtime import start_server

    for _ in range(20):
        addr = f"127.0.0.1:{free_port()}"
        try:
            return start_server(switch, addr, **kw), addr
        except OSError:
            continue
    raise OSError("no free loopback port in 20 tries")


def load_bench(name: str) -> Any:
    """``bench/<name>.py`` imported as module ``<name>_bench`` (bench/ is scripts, not a
    package), registered in sys.modules so its dataclasses and pickling resolve."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_bench", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@dataclass
class Logged:
    """A child process whose stderr lines a thread collects into ``log``; ``ready`` is set at
    the first line that contains the marker given to ``spawn_logged``."""

    proc: subprocess.Popen[str]
    log: list[str]
    ready: threading.Event

    def stop(self, timeout: float = 10) -> int:
        """SIGTERM by pid (killed after ``timeout`` s); the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        time.sleep(0.1)  # let the reader thread take the last lines
        return self.proc.returncode


def spawn_logged(cmd: list[str], marker: str, **popen: Any) -> Logged:
    """Start ``cmd`` (stdout discarded, stderr read into ``Logged.log`` by a daemon thread)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            **popen)
    log: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line.rstrip())
            if marker in line:
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    return Logged(proc, log, ready)
