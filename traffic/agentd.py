"""The host agent as a server: started once per fabric on each host, handed collectives over a
Unix-domain control socket.

Starting ``python -m traffic.run`` per host per collective made every collective pay an
interpreter start and the agent's imports on all 16 hosts at once (1.6 CPU-s each, measured in
``make topo``), more CPU than the collective's packets. A server imports once and then runs
one collective after another in-process (``traffic.run.execute`` with the same arguments the
command line takes). Mininet hosts share the file system, so a path-named socket in the
fabric's run directory reaches a host's agent whatever network namespace it sits in.

Protocol: one JSON object per line each way, one reply per request, in order.

    {"op": "ping"}                    -> {"ok": true, "pid": P}
    {"op": "run", "argv": [...]}      -> {"ok": true, "rc": 0, "log": "...",
                                          "ranks": {"3": <rank3.json's object>, ...}}
    {"op": "quit"}                    -> {"ok": true}, then the server exits

A request that fails (bad JSON, unknown op, an argument traffic.run rejects, an exception in
the agent) gets ``"ok": false`` or a non-zero ``rc`` with the reason in ``error``/``log``; the
server keeps serving. ``AgentClient`` is the caller's end: every wait is bounded, and a server
that died shows as ``AgentGone`` instead of a hang.

    python -m traffic.agentd --socket /tmp/p4fabric/RUN/agents/h1.sock [--parent PID]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import select
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from .realtime import install_valve, rearm

MAX_LINE = 64 << 20
"""Longest request or reply accepted (a reply carries every local rank's metrics)."""


class AgentGone(ConnectionError):
    """The agent server closed its socket or never answered: it died or hangs."""


def _send(sock: socket.socket, msg: dict[str, Any]) -> None:
    sock.sendall(json.dumps(msg, separators=(",", ":")).encode() + b"\n")


class LineReader:
    """Newline-delimited messages from a stream socket, in pieces as they arrive."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def pending(self) -> bytes | None:
        """A complete line already buffered, or None."""
        i = self.buf.find(b"\n")
        if i < 0:
            return None
        line = bytes(self.buf[:i])
        del self.buf[:i + 1]
        return line

    def feed(self) -> bool:
        """Read what the socket has (it is readable); False at end of stream."""
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            return False
        self.buf += chunk
        if len(self.buf) > MAX_LINE:
            raise ValueError("message too long")
        return True


# ---- server -----------------------------------------------------------------------------------
def run_collective(argv: list[str]) -> dict[str, Any]:
    """One ``run`` request: traffic.run's ``execute`` in this process, its output captured."""
    from .run import execute

    if rearm():
        print("agentd: real-time priority restored after the last collective's overrun",
              file=sys.stderr, flush=True)

    log = io.StringIO()
    ranks: dict[str, Any] = {}
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            rc, results = execute([str(x) for x in argv])
            ranks = {str(r): m.to_json() for r, m in results.items()}
        except SystemExit as e:  # argparse's error (status 2) or --help (0)
            rc = e.code if isinstance(e.code, int) else 2
        except Exception:  # noqa: BLE001 - reported to the caller; the server serves on
            traceback.print_exc(file=log)
            rc = 3
    return {"ok": True, "rc": rc, "log": log.getvalue(), "ranks": ranks}


def handle(msg: Any) -> tuple[dict[str, Any], bool]:
    """The reply to one request and whether the server should exit."""
    if not isinstance(msg, dict) or not isinstance(msg.get("op"), str):
        return {"ok": False, "error": "a request is a JSON object with an 'op'"}, False
    op = msg["op"]
    if op == "ping":
        return {"ok": True, "pid": os.getpid()}, False
    if op == "quit":
        return {"ok": True}, True
    if op == "run":
        argv = msg.get("argv")
        if not isinstance(argv, list):
            return {"ok": False, "error": "run needs 'argv', a list of traffic.run arguments"}, \
                False
        return run_collective(argv), False
    return {"ok": False, "error": f"unknown op {op!r} (ping, run, quit)"}, False


def serve(path: Path, parent: int | None = None) -> int:
    """Accept one caller at a time on ``path`` and answer its requests until ``quit``, or
    until process ``parent`` (the fabric's launcher) is gone."""
    _preload()
    install_valve()   # before the launcher may raise us to real-time priority (on our ping)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(4)
    print(f"agentd {os.getpid()} listening on {path}", flush=True)
    try:
        while True:
            if parent is not None and not _alive(parent):
                return 0
            if not select.select([srv], [], [], 1.0)[0]:
                continue
            conn, _ = srv.accept()
            with conn:
                if _serve_conn(conn, parent):
                    return 0
    finally:
        srv.close()
        path.unlink(missing_ok=True)


def _serve_conn(conn: socket.socket, parent: int | None) -> bool:
    """Requests on one connection; True when one said ``quit``."""
    rd = LineReader(conn)
    while True:
        line = rd.pending()
        if line is None:
            if parent is not None and not _alive(parent):
                return True
            if not select.select([conn], [], [], 1.0)[0]:
                continue
            try:
                if not rd.feed():
                    return False
            except (OSError, ValueError):
                return False
            continue
        try:
            msg = json.loads(line)
        except ValueError as e:
            reply, quit_ = {"ok": False, "error": f"bad JSON: {e}"}, False
        else:
            reply, quit_ = handle(msg)
        try:
            _send(conn, reply)
        except OSError:
            return quit_
        if quit_:
            return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _preload() -> None:
    """Import what every collective uses now, once, instead of at the first collective."""
    from . import agent, run, tcpagent  # noqa: F401


# ---- client -----------------------------------------------------------------------------------
class AgentClient:
    """The caller's end of one agent server's control socket."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.sock: socket.socket | None = None
        self._rd: LineReader | None = None

    def connect(self, timeout: float = 30.0, alive: Any = None) -> None:
        """Connect, retrying until the server listens; ``alive()`` False (the server process
        exited) or ``timeout`` raises AgentGone."""
        deadline = time.monotonic() + timeout
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(str(self.path))
            except OSError as e:
                s.close()
                if alive is not None and not alive():
                    raise AgentGone(f"agent exited before listening on {self.path}") from None
                if time.monotonic() >= deadline:
                    raise AgentGone(f"no agent listening on {self.path} after {timeout:g} s "
                                    f"({e.strerror})") from None
                time.sleep(0.05)
                continue
            self.sock, self._rd = s, LineReader(s)
            return

    def send(self, msg: dict[str, Any]) -> None:
        if self.sock is None:
            raise AgentGone("not connected")
        try:
            _send(self.sock, msg)
        except OSError as e:
            raise AgentGone(f"agent socket {self.path}: {e}") from None

    def poll_reply(self) -> dict[str, Any] | None:
        """The reply if one is complete (reads what the socket has: call when readable)."""
        assert self._rd is not None
        line = self._rd.pending()
        if line is None:
            try:
                if not self._rd.feed():
                    raise AgentGone(f"agent closed {self.path} (it died)")
            except (OSError, ValueError) as e:
                raise AgentGone(f"agent socket {self.path}: {e}") from None
            line = self._rd.pending()
        if line is None:
            return None
        try:
            reply = json.loads(line)
        except ValueError as e:
            raise AgentGone(f"agent sent bad JSON: {e}") from None
        return reply if isinstance(reply, dict) else {"ok": False, "error": "not an object"}

    def request(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``msg`` and wait at most ``timeout`` s for its reply (AgentGone otherwise)."""
        self.send(msg)
        return self.wait_reply(timeout)

    def wait_reply(self, timeout: float) -> dict[str, Any]:
        """The next reply within ``timeout`` s (AgentGone: the server died or hangs)."""
        deadline = time.monotonic() + timeout
        assert self.sock is not None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AgentGone(f"agent on {self.path} did not answer within {timeout:g} s")
            if select.select([self.sock], [], [], left)[0]:
                reply = self.poll_reply()
                if reply is not None:
                    return reply

    def fileno(self) -> int:
        assert self.sock is not None
        return self.sock.fileno()

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m traffic.agentd", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--socket", type=Path, required=True, help="control socket path to create")
    p.add_argument("--parent", type=int, help="exit once this process (the launcher) is gone")
    a = p.parse_args(argv)
    if len(str(a.socket)) > 107:
        p.error(f"--socket: {a.socket} is longer than a Unix socket path may be (107)")
    try:
        return serve(a.socket, a.parent)
    except KeyboardInterrupt:
        return 0
    except OSError as e:
        print(f"traffic.agentd: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
