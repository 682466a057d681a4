"""Run-time control of a running p4switch: link rates, queue depths and port state over a Unix
socket, without a restart and without P4Runtime (which has no message for either).

``p4switch --control-socket PATH`` serves it. The protocol is JSON lines: one request object
per line, ``{"cmd": NAME, ...arguments}``, and one reply line per request, ``{"ok": true,
"result": ...}`` or ``{"ok": false, "error": "one-line message"}``. A bad request gets an error
reply and changes nothing; the connection stays open for the next one.

==================  =========================================  ======================================
cmd                 arguments                                  result
==================  =========================================  ======================================
``ping``            —                                          ``device_id``, ``uptime_us``, ``ports``
``set_port_rate``   ``port`` (int, or null/"all"), ``rate``     the port's (or default) rate settings
                    (``"50Mbps"``/``"1G"``/bits/s; 0 = none)
``set_queue_rate``  ``port``, ``rate`` (packets/s; 0 = none)   the same
``set_queue_depth`` ``port``, ``depth`` (packets, >= 1)         the same
``set_port_delay``  ``port``, ``delay_us`` (µs; 0 = none)       ``port``, ``delay_us``
``port_stats``      ``port`` (optional)                        ``{port: {counter: value, ...}}``
``hidden_stats``    —                                          kernel drops, ingress lag, egress
                                                               delay (``Switch.hidden_stats``)
``seed_random``     ``seed`` (int >= 0)                         ``seeded``: false when the pipeline
                                                               has no seedable ``random()``
==================  =========================================  ======================================

``port_stats`` is ``Switch.port_stats()``: rx/tx counters, ``tx_errors`` (sends the kernel
refused, e.g. ENETDOWN on an interface that is down), queue counters and settings, and
``oper_state``/``oper_up`` (the interface's operstate as the switch sees it) — what a controller
polls to notice a dead link. ``ControlClient`` is the Python side; ``python -m p4switch.control
PATH COMMAND ...`` the command line.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import socket
import socketserver
import stat
import sys
import threading
from typing import Any

from p4switch.queues import format_bit_rate, parse_bit_rate

MAX_LINE = 64 * 1024
"""Longest request line accepted; a longer one is answered with an error and the connection
closed (a request is a few dozen bytes; this only bounds memory)."""
MAX_PORT = 511
COMMANDS = ("ping", "set_port_rate", "set_queue_rate", "set_queue_depth", "set_port_delay",
            "port_stats",
            "hidden_stats", "seed_random")


class ControlError(Exception):
    """A request the switch refused (the reply's one-line ``error``), or a broken channel."""


# ---------------------------------------------------------------------------------------------
# server
# ---------------------------------------------------------------------------------------------


def _port_arg(req: dict[str, Any], *, required: bool = False) -> int | None:
    """The request's ``port``: an int in 0..511, or None (every port) for null/"all"/missing."""
    if "port" not in req or req["port"] is None or req["port"] == "all":
        if required:
            raise ValueError("'port' is required")
        return None
    port = req["port"]
    if isinstance(port, bool) or not isinstance(port, int):
        raise ValueError(f"'port' must be an integer or \"all\", got {port!r}")
    if not 0 <= port <= MAX_PORT:
        raise ValueError(f"port {port} out of range 0..{MAX_PORT}")
    return port


def _number_arg(req: dict[str, Any], name: str) -> float:
    if name not in req:
        raise ValueError(f"'{name}' is required")
    v = req[name]
    if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0 or v == float("inf"):
        raise ValueError(f"'{name}' must be a number >= 0, got {v!r}")
    return float(v)


class ControlServer:
    """Serves the control protocol for ``switch`` on Unix socket ``path`` (one thread per
    connection; each request runs under the switch's own locking). ``handle`` is the whole
    protocol on decoded requests, so it is testable without a socket."""

    def __init__(self, switch: Any, path: str | os.PathLike[str]) -> None:
        self.switch = switch
        self.path = os.fspath(path)
        self._server: socketserver.ThreadingUnixStreamServer | None = None
        self._thread: threading.Thread | None = None

    # protocol ----------------------------------------------------------------------------------
    def handle(self, req: Any) -> dict[str, Any]:
        """One decoded request -> its reply object. Never raises for bad input."""
        if not isinstance(req, dict):
            return _error("a request is a JSON object such as {\"cmd\": \"ping\"}")
        cmd = req.get("cmd")
        if cmd not in COMMANDS:
            return _error(f"unknown cmd {cmd!r} (one of {', '.join(COMMANDS)})")
        allowed = {"cmd", *_ARGUMENTS[cmd]}
        extra = sorted(set(req) - allowed)
        if extra:
            return _error(f"{cmd}: unknown argument {extra[0]!r}")
        try:
            return {"ok": True, "result": getattr(self, f"_cmd_{cmd}")(req)}
        except ValueError as e:
            return _error(f"{cmd}: {e}")

    def _cmd_ping(self, req: dict[str, Any]) -> dict[str, Any]:
        sw = self.switch
        return {"device_id": sw.device_id, "uptime_us": sw.now_us(), "ports": sorted(sw.ports)}

    def _cmd_set_port_rate(self, req: dict[str, Any]) -> dict[str, Any]:
        port = _port_arg(req)
        if "rate" not in req:
            raise ValueError("'rate' is required")
        rate = req["rate"]
        bps = parse_bit_rate(rate if rate is not None else 0)
        self.switch.set_port_rate(port, bps or None)
        return self._settings(port)

    def _cmd_set_queue_rate(self, req: dict[str, Any]) -> dict[str, Any]:
        port = _port_arg(req)
        pps = _number_arg(req, "rate")
        self.switch.set_queue_rate(port, pps or None)
        return self._settings(port)

    def _cmd_set_queue_depth(self, req: dict[str, Any]) -> dict[str, Any]:
        port = _port_arg(req)
        depth = req.get("depth")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"'depth' must be an integer >= 1, got {depth!r}")
        self.switch.set_queue_depth(port, depth)
        return self._settings(port)

    def _cmd_set_port_delay(self, req: dict[str, Any]) -> dict[str, Any]:
        port = _port_arg(req)
        setter = getattr(self.switch, "set_port_delay", None)
        if setter is None:
            raise ValueError("this target emulates no propagation delay")
        delay = _number_arg(req, "delay_us")
        setter(port, delay or None)
        return {"port": port, "delay_us": delay}

    def _cmd_port_stats(self, req: dict[str, Any]) -> dict[str, Any]:
        port = _port_arg(req)
        stats = self.switch.port_stats()
        if port is not None:
            if port not in stats:
                raise ValueError(f"no port {port}")
            stats = {port: stats[port]}
        return {str(n): d for n, d in stats.items()}

    def _cmd_hidden_stats(self, req: dict[str, Any]) -> dict[str, Any]:
        return self.switch.hidden_stats()

    def _cmd_seed_random(self, req: dict[str, Any]) -> dict[str, Any]:
        seed = req.get("seed")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"'seed' must be an integer >= 0, got {seed!r}")
        return {"seeded": self.switch.seed_random(seed)}

    def _settings(self, port: int | None) -> dict[str, Any]:
        queues = self.switch.queues
        with self.switch.lock:
            if port is None:
                rate, depth = queues.default_rate, queues.default_depth
            else:
                rate, depth = queues.rate(port), queues.depth(port)
        return {
            "port": port,
            "rate_bps": rate.bps or 0,
            "rate_pps": rate.pps or 0,
            "queue_depth_limit": depth,
        }

    # socket ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Bind ``path`` (replacing a stale socket left by a crashed switch; refusing a live
        one or a non-socket file) and serve in a daemon thread."""
        _clear_stale_socket(self.path)
        owner = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                while True:
                    line = self.rfile.readline(MAX_LINE + 1)
                    if not line:
                        return
                    if len(line) > MAX_LINE:
                        self._reply(_error(f"request longer than {MAX_LINE} bytes"))
                        return
                    if not line.strip():
                        continue
                    try:
                        req = json.loads(line)
                    except (ValueError, UnicodeDecodeError) as e:
                        reply = _error(f"not JSON: {e}")
                    else:
                        reply = owner.handle(req)
                    if not self._reply(reply):
                        return

            def _reply(self, reply: dict[str, Any]) -> bool:
                try:
                    self.wfile.write(json.dumps(reply).encode() + b"\n")
                    self.wfile.flush()
                except OSError:  # the client went away
                    return False
                return True

        server = socketserver.ThreadingUnixStreamServer(self.path, Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.2},
            name="p4switch-control", daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and remove the socket file; idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def __enter__(self) -> ControlServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "ping": (),
    "set_port_rate": ("port", "rate"),
    "set_queue_rate": ("port", "rate"),
    "set_queue_depth": ("port", "depth"),
    "set_port_delay": ("port", "delay_us"),
    "port_stats": ("port",),
    "hidden_stats": (),
    "seed_random": ("seed",),
}


def _error(message: str) -> dict[str, Any]:
    return {"ok": False, "error": message}


def _clear_stale_socket(path: str) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise OSError(errno.EEXIST, f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # nobody listens: left by a switch that died
        return
    finally:
        probe.close()
    raise OSError(errno.EADDRINUSE, f"{path}: another switch is serving this control socket")


# ---------------------------------------------------------------------------------------------
# client
# ---------------------------------------------------------------------------------------------


class ControlClient:
    """One connection to a switch's control socket; thread-safe (one request at a time).

    ``port=None`` means every port (existing and future). Methods return the reply's
    ``result`` and raise ``ControlError`` with the switch's one-line message on refusal."""

    def __init__(self, path: str | os.PathLike[str], timeout: float = 5.0) -> None:
        self.path = os.fspath(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(self.path)
        except OSError as e:
            sock.close()
            raise ControlError(f"cannot connect to {self.path}: {e.strerror or e}") from None
        self._sock = sock
        self._file = sock.makefile("rwb")
        self._lock = threading.Lock()

    def call(self, cmd: str, **args: Any) -> Any:
        """Send ``{"cmd": cmd, **args}`` and return the result (or raise ``ControlError``)."""
        line = json.dumps({"cmd": cmd, **args}).encode() + b"\n"
        with self._lock:
            try:
                self._file.write(line)
                self._file.flush()
                answer = self._file.readline(MAX_LINE + 1)
            except OSError as e:
                raise ControlError(f"{self.path}: {e.strerror or e}") from None
        if not answer:
            raise ControlError(f"{self.path}: the switch closed the connection")
        try:
            reply = json.loads(answer)
        except ValueError:
            raise ControlError(f"{self.path}: reply is not JSON: {answer[:80]!r}") from None
        if not reply.get("ok"):
            raise ControlError(str(reply.get("error", "request refused")))
        return reply.get("result")

    def ping(self) -> dict[str, Any]:
        return self.call("ping")

    def set_port_rate(self, port: int | None, rate: str | float | None) -> dict[str, Any]:
        """Link rate of ``port`` (None: all ports): ``"50Mbps"``, ``"1G"``, or bits/s as a
        number; 0/None removes it (unlimited)."""
        return self.call("set_port_rate", port=port, rate=rate)

    def set_queue_rate(self, port: int | None, pps: float | None) -> dict[str, Any]:
        """Packet rate of ``port``'s queue (None: all ports); 0/None removes it."""
        return self.call("set_queue_rate", port=port, rate=pps or 0)

    def set_queue_depth(self, port: int | None, depth: int) -> dict[str, Any]:
        return self.call("set_queue_depth", port=port, depth=depth)

    def set_port_delay(self, port: int | None, delay_us: float | None) -> dict[str, Any]:
        """Propagation delay of ``port``'s link in µs (None: all ports); 0/None removes it."""
        return self.call("set_port_delay", port=port, delay_us=delay_us or 0)

    def port_stats(self, port: int | None = None) -> dict[int, dict[str, Any]]:
        """Per port number: counters, queue settings and ``oper_state``/``oper_up``."""
        result = self.call("port_stats", port=port)
        return {int(n): d for n, d in result.items()}

    def hidden_stats(self) -> dict[str, Any]:
        """Kernel drops and ingress lag per port, egress queueing delay (p4switch/hidden.py)."""
        return self.call("hidden_stats")

    def seed_random(self, seed: int) -> bool:
        """Restart the program's random() from ``seed``; False: nothing to seed."""
        return bool(self.call("seed_random", seed=seed)["seeded"])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
        self._sock.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------


def _cli_port(text: str) -> int | None:
    if text == "all":
        return None
    try:
        port = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port {text!r} is not an integer or 'all'") from None
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"port {port} out of range 0..{MAX_PORT}")
    return port


def _cli_bit_rate(text: str) -> float:
    try:
        return parse_bit_rate(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _cli_number(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= v < float("inf"):
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return v


def _cli_depth(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m p4switch.control",
        description="Talk to a running p4switch through its --control-socket: set link rates "
        "and queue depths at run time, read per-port counters and oper state.",
    )
    p.add_argument("socket", metavar="PATH", help="the switch's --control-socket path")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds to wait (default 5)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("ping", help="check the switch answers; print its device id and uptime")
    r = sub.add_parser("set-port-rate", help="link rate of a port (bits/s)")
    r.add_argument("port", type=_cli_port, help="port number, or 'all'")
    r.add_argument("rate", type=_cli_bit_rate, help="e.g. 50Mbps, 1G, 2.5G, bits/s; 0 = none")
    q = sub.add_parser("set-queue-rate", help="service rate of a port's queue (packets/s)")
    q.add_argument("port", type=_cli_port, help="port number, or 'all'")
    q.add_argument("pps", type=_cli_number, help="packets/s; 0 = none")
    d = sub.add_parser("set-queue-depth", help="egress queue depth of a port (packets)")
    d.add_argument("port", type=_cli_port, help="port number, or 'all'")
    d.add_argument("depth", type=_cli_depth, help="packets, >= 1")
    y = sub.add_parser("set-port-delay", help="propagation delay of a port's link (µs)")
    y.add_argument("port", type=_cli_port, help="port number, or 'all'")
    y.add_argument("delay_us", type=_cli_number, help="µs; 0 = none")
    s = sub.add_parser("port-stats", help="per-port counters, rates and oper state")
    s.add_argument("port", type=_cli_port, nargs="?", default=None, help="one port (default all)")
    s.add_argument("--json", action="store_true", help="print the raw JSON")
    return p


_STATS_COLUMNS = (
    ("port", 5), ("oper", 8), ("rate", 11), ("rx_packets", 11), ("tx_packets", 11),
    ("tx_bytes", 13), ("tx_errors", 10), ("depth", 6), ("max", 5), ("tail_drops", 10),
)


def _format_stats(stats: dict[int, dict[str, Any]]) -> str:
    lines = [" ".join(f"{name:>{w}}" for name, w in _STATS_COLUMNS)]
    for n, d in sorted(stats.items()):
        if d.get("rate_bps"):
            rate = format_bit_rate(d["rate_bps"])
        elif d.get("rate_pps"):
            rate = f"{d['rate_pps']:g}pps"
        else:
            rate = "unlimited"
        row = (n, d["oper_state"], rate, d.get("rx_packets", 0), d.get("tx_packets", 0),
               d.get("tx_bytes", 0), d.get("tx_errors", 0), d["queue_depth_now"],
               d["queue_max_depth"], d["tail_drops"])
        lines.append(" ".join(f"{v!s:>{w}}" for v, (_, w) in zip(row, _STATS_COLUMNS, strict=True)))
    return "\n".join(lines)


def _format_settings(r: dict[str, Any]) -> str:
    where = "all ports" if r["port"] is None else f"port {r['port']}"
    if r["rate_bps"]:
        rate = format_bit_rate(r["rate_bps"])
    elif r["rate_pps"]:
        rate = f"{r['rate_pps']:g} packets/s"
    else:
        rate = "unlimited"
    return f"{where}: rate {rate}, queue depth {r['queue_depth_limit']}"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with ControlClient(args.socket, timeout=args.timeout) as c:
            if args.command == "ping":
                r = c.ping()
                print(f"device {r['device_id']}: up {r['uptime_us'] / 1e6:.1f} s, "
                      f"ports {r['ports']}")
            elif args.command == "set-port-rate":
                print(_format_settings(c.set_port_rate(args.port, args.rate)))
            elif args.command == "set-queue-rate":
                print(_format_settings(c.set_queue_rate(args.port, args.pps)))
            elif args.command == "set-queue-depth":
                print(_format_settings(c.set_queue_depth(args.port, args.depth)))
            elif args.command == "set-port-delay":
                r = c.set_port_delay(args.port, args.delay_us)
                where = "all ports" if r["port"] is None else f"port {r['port']}"
                print(f"{where}: propagation delay {r['delay_us']:g} µs")
            else:
                stats = c.port_stats(args.port)
                if args.json:
                    print(json.dumps({str(n): d for n, d in stats.items()}, indent=1))
                else:
                    print(_format_stats(stats))
    except ControlError as e:
        print(f"p4switch.control: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
