"""The machine-wide fabric lock: one Mininet fabric at a time.

Switch processes listen on fixed gRPC ports (``GRPC_BASE_PORT + device_id``) and Mininet names
interfaces after nodes (``edge1-eth1``), so two fabrics on one machine would collide. Every
fabric launch holds an exclusive ``flock`` on :data:`LOCK_PATH` for its lifetime; the kernel
drops it when the holder dies, so a crash never leaves the machine locked.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

LOCK_PATH = Path("/run/p4fabric-fabric.lock")


class FabricBusy(RuntimeError):
    """Another process holds the fabric lock."""


class FabricLock:
    """``with FabricLock(timeout=30):`` — exclusive flock; the holder's pid is written into the
    file so that a refused launcher can say who has it. ``timeout`` 0 fails at once."""

    def __init__(self, path: Path | str = LOCK_PATH, timeout: float = 0.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> int | None:
        """The pid recorded by the current (or last) holder, if any."""
        try:
            text = self.path.read_text().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def acquire(self) -> FabricLock:
        if self._fd is not None:
            return self
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    pid = self.holder()
                    raise FabricBusy(f"another fabric is running (pid {pid if pid else '?'}); "
                                     f"wait for it or run `make stop`") from None
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)  # closing the only descriptor drops the flock

    def __enter__(self) -> FabricLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
