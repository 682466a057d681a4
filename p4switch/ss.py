"""``p4switch-ss``: p4switch behind the command line of BMv2's ``simple_switch_grpc``.

Harnesses that start BMv2 by path (the P4 tutorials' ``P4RuntimeSwitch``, Mininet scripts, PTF
runners) build a ``simple_switch_grpc`` command line; pointing them at this binary instead runs
p4switch with the same ports, device id, CPU port and gRPC address::

    p4switch-ss --no-p4 -i 1@veth1 -i 2@veth2 --device-id 0 --log-console \\
        -- --grpc-server-addr 0.0.0.0:50051 --cpu-port 255
    p4switch-ss -i 1@veth1 build/prog.json          # p4c-bm2-ss output, or a .p4 source

General options come first, target options after ``--`` (as simple_switch_grpc parses them).
Each is mapped onto ``p4switch``'s own flags (docs/bmv2-compat.md has the table); options of
BMv2's that have no meaning here (Thrift, nanomsg, swapping) are accepted with a one-line note
or refused with a one-line error, never silently misread.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import NoReturn

PROG = "p4switch-ss"
#: What simple_switch_grpc binds when no --grpc-server-addr is given (p4switch's own CLI binds
#: loopback only; a drop-in keeps BMv2's default).
BMV2_GRPC_DEFAULT = "0.0.0.0:9559"
#: The bmv2 JSON versions this front end reads (``--json-version``): p4c-bm2-ss writes 2.x.
JSON_VERSION = "2.23"
BMV2_LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")

#: BMv2 options p4switch has no use for: accepted, with the note printed once.
NOTED = {
    "thrift_port": "p4switch serves P4Runtime only, not Thrift: --thrift-port is ignored "
                   "(registers and counters are read over P4Runtime)",
    "dump_packet_data": "--dump-packet-data is ignored: use --pcap DIR for packet contents",
    "max_port_count": "--max-port-count is ignored (p4switch ports are 0..510)",
    "nanolog": "--nanolog is ignored (no nanomsg event log): use --log-file",
    "debugger": "--debugger is ignored (p4switch has no BMv2 debugger)",
    "debugger_addr": "--debugger-addr is ignored (p4switch has no BMv2 debugger)",
    "disable_swap": "--disable-swap is ignored: p4switch swaps a new pipeline in atomically",
    "max_mc_groups": "--max-mc-groups is ignored (no fixed limit in p4switch)",
    "max_l1_entries": "--max-l1-entries is ignored (no fixed limit in p4switch)",
    "max_l2_entries": "--max-l2-entries is ignored (no fixed limit in p4switch)",
}
#: BMv2 options whose meaning p4switch cannot provide: refused, so a harness notices.
REFUSED = {
    "use_files": "--use-files is not supported: give ports as -i N@pcap:FILE",
    "packet_in": "--packet-in (nanomsg packet I/O) is not supported: use -i N@IFACE",
    "notifications_addr": "--notifications-addr (nanomsg) is not supported: digests and idle "
                          "timeouts arrive on the P4Runtime stream",
    "restore_state": "--restore-state is not supported",
    "load_modules": "--load-modules (.so extern modules) is not supported",
    "grpc_server_ssl": "--grpc-server-ssl is not supported: p4switch serves plain gRPC",
    "dp_grpc_server_addr": "--dp-grpc-server-addr is not supported",
}


class _Parser(argparse.ArgumentParser):
    """One-line errors (``p4switch-ss: error: ...``), exit status 2, like argparse's, but
    without the usage block a harness's log would bury the reason under."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _int_in(lo: int, hi: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            v = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} {text!r} is not an integer") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{what} {v} out of range {lo}..{hi}")
        return v
    return parse


def _port_spec(text: str) -> str:
    """``PORT@IFACE`` checked as p4switch checks it (so the error is this CLI's one line)."""
    from p4switch.__main__ import _port_spec as check

    check(text)
    return text


def general_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        usage=f"{PROG} [options] [<JSON or P4 program>] [-- target options]",
        description="p4switch started with the command line of BMv2's simple_switch_grpc, so "
        "harnesses that run BMv2 by path run p4switch unchanged. The program may be "
        "p4c-bm2-ss's JSON or P4_16 source; with --no-p4 it arrives over P4Runtime "
        "(a p4switch bundle, BMv2 JSON, or either inside PI's P4DeviceConfig). "
        "Target options go after '--': --grpc-server-addr, --cpu-port, --drop-port, "
        "--priority-queues. See docs/bmv2-compat.md for the exact mapping.",
    )
    p.add_argument("program", nargs="?", help="BMv2 JSON (p4c-bm2-ss output) or P4_16 source")
    p.add_argument("-i", "--interface", dest="interfaces", action="append", default=[],
                   type=_port_spec, metavar="PORT@IFACE", help="attach interface IFACE as port PORT (repeatable)")
    p.add_argument("--pcap", nargs="?", const=".", default=None, metavar="DIR",
                   help="write per-port pcap files in DIR (default: the current directory)")
    p.add_argument("--thrift-port", dest="thrift_port", metavar="PORT",
                   help="accepted and ignored: p4switch serves P4Runtime, not Thrift")
    p.add_argument("--device-id", type=_int_in(0, 2**64 - 1, "device id"), default=0,
                   help="P4Runtime device id (default 0)")
    p.add_argument("--log-console", action="store_true", help="log to stdout")
    p.add_argument("--log-file", metavar="FILE", help="log to FILE")
    p.add_argument("-L", "--log-level", choices=BMV2_LOG_LEVELS, default="trace",
                   help="log level when --log-console/--log-file is given (default trace)")
    p.add_argument("--log-flush", action="store_true",
                   help="flush the log file after every message (p4switch always does)")
    p.add_argument("--log-file-max-size", metavar="BYTES", help="accepted and ignored")
    p.add_argument("--log-file-max-files", metavar="N", help="accepted and ignored")
    p.add_argument("--dump-packet-data", metavar="N", help="accepted and ignored (use --pcap)")
    p.add_argument("--no-p4", action="store_true",
                   help="start without a program; it arrives with SetForwardingPipelineConfig")
    p.add_argument("--max-port-count", metavar="N", help="accepted and ignored")
    p.add_argument("--priority-queues", type=_int_in(1, 8, "--priority-queues"), default=None,
                   metavar="N", help="strict-priority egress queues per port (also a target "
                   "option)")
    p.add_argument("-v", "--version", action="store_true", help="print the version and exit")
    p.add_argument("--json-version", action="store_true",
                   help="print the bmv2 JSON version read and exit")
    p.add_argument("--nanolog", metavar="IPC", help="accepted and ignored (the P4 tutorials' "
                   "harness always passes it)")
    p.add_argument("--debugger", action="store_true", help="accepted and ignored")
    p.add_argument("--debugger-addr", metavar="ADDR", help="accepted and ignored")
    for name in ("use-files", "packet-in", "notifications-addr", "restore-state"):
        p.add_argument(f"--{name}", metavar="ARG", help=argparse.SUPPRESS)
    return p


def target_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=f"{PROG} ... --", description="simple_switch_grpc's target options")
    p.add_argument("--grpc-server-addr", default=BMV2_GRPC_DEFAULT, metavar="HOST:PORT",
                   help=f"P4Runtime server address (default {BMV2_GRPC_DEFAULT}, as BMv2)")
    p.add_argument("--cpu-port", type=_int_in(1, 511, "--cpu-port"), default=None,
                   help="port for PacketIn/PacketOut (0 is not valid, as in BMv2)")
    p.add_argument("--drop-port", type=_int_in(0, 511, "--drop-port"), default=None)
    p.add_argument("--priority-queues", type=_int_in(1, 8, "--priority-queues"), default=None,
                   metavar="N")
    p.add_argument("--disable-swap", action="store_true", help="accepted and ignored")
    p.add_argument("--enable-swap", action="store_true", help="accepted and ignored")
    for name in ("max-mc-groups", "max-l1-entries", "max-l2-entries"):
        p.add_argument(f"--{name}", metavar="N", help="accepted and ignored")
    for name in ("load-modules", "dp-grpc-server-addr", "grpc-server-cacert",
                 "grpc-server-cert", "grpc-server-key"):
        p.add_argument(f"--{name}", metavar="ARG", help=argparse.SUPPRESS)
    p.add_argument("--grpc-server-ssl", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--grpc-server-with-client-auth", action="store_true", help=argparse.SUPPRESS)
    return p


def _pcap_value(general: list[str]) -> list[str]:
    """BMv2's ``--pcap`` has an optional value (``--pcap``, ``--pcap=DIR``; harnesses also
    write ``--pcap DIR``): a bare ``--pcap`` takes the next word as DIR unless it is an option
    or the program (a .json/.p4 file), so ``--pcap prog.json`` still runs prog.json."""
    out = list(general)
    for k, a in enumerate(out):
        if a == "--pcap":
            nxt = out[k + 1] if k + 1 < len(out) else None
            if nxt is None or nxt.startswith("-") or nxt.endswith((".json", ".p4")):
                out[k] = "--pcap=."
            break
    return out


def translate(argv: list[str]) -> tuple[list[str], list[str], argparse.Namespace]:
    """simple_switch_grpc's argv -> (p4switch's argv, notes to print, the parsed options).
    Raises SystemExit(2) with a one-line error for what p4switch cannot do."""
    if "--" in argv:
        cut = argv.index("--")
        general, target = argv[:cut], argv[cut + 1:]
    else:
        general, target = argv, []
    g = general_parser().parse_args(_pcap_value(general))
    t = target_parser().parse_args(target)
    for key, why in REFUSED.items():
        if getattr(g, key, None) or getattr(t, key, None):
            _die(why)
    if t.grpc_server_cacert or t.grpc_server_cert or t.grpc_server_key or \
            t.grpc_server_with_client_auth:
        _die(REFUSED["grpc_server_ssl"])
    if g.program and g.no_p4:
        _die("give either a program or --no-p4, not both")
    if not g.program and not g.no_p4:
        _die("a JSON or P4 program is required (or --no-p4 to wait for one over P4Runtime)")
    numbers = [int(spec.partition("@")[0], 0) for spec in g.interfaces]
    dup = sorted({n for n in numbers if numbers.count(n) > 1})
    if dup:
        _die(f"port {dup[0]} given twice")
    for n in numbers:
        if n == t.cpu_port:
            _die(f"port {n} is the CPU port (do not add an interface with its number)")
        if n == (511 if t.drop_port is None else t.drop_port):
            _die(f"port {n} is the drop port")
    notes = [why for key, why in NOTED.items()
             if getattr(g, key, None) or getattr(t, key, None)]
    out = [g.program] if g.program else ["--no-p4"]
    for spec in g.interfaces:
        out += ["-i", spec]
    out += ["--device-id", str(g.device_id), "--grpc-server-addr", t.grpc_server_addr]
    if t.cpu_port is not None:
        out += ["--cpu-port", str(t.cpu_port)]
    if t.drop_port is not None:
        out += ["--drop-port", str(t.drop_port)]
    prio = t.priority_queues or g.priority_queues
    if prio:
        out += ["--priority-queues", str(prio)]
    if g.pcap is not None:  # BMv2 names the files after the interfaces
        out += ["--pcap", g.pcap, "--pcap-names", "interface"]
    logs = g.log_console or g.log_file
    out += ["--log-level", g.log_level if logs else "warn"]
    return out, notes, g


def _die(msg: str):
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    raise SystemExit(2)


def _setup_logging(g: argparse.Namespace) -> None:
    """BMv2 logs only where --log-console/--log-file say; p4switch keeps warnings and errors on
    stderr either way (what goes wrong is never silent). Handlers are installed before
    p4switch's own set-up, whose basicConfig then leaves them alone."""
    from p4switch.__main__ import LOG_LEVELS

    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger()
    if not (g.log_console or g.log_file):
        return
    level = LOG_LEVELS[g.log_level]
    handlers: list[logging.Handler] = []
    if g.log_console:
        handlers.append(logging.StreamHandler(sys.stdout))
    if g.log_file:
        handlers.append(logging.FileHandler(g.log_file))  # flushes after every record
    err = logging.StreamHandler(sys.stderr)
    err.setLevel(logging.WARNING)
    if not g.log_console:
        handlers.append(err)
    for h in handlers:
        h.setFormatter(fmt)
        root.addHandler(h)
    root.setLevel(level)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    general = argv[: argv.index("--")] if "--" in argv else argv
    if "-v" in general or "--version" in general:
        from importlib.metadata import PackageNotFoundError, version
        try:
            v = version("p4fabric")
        except PackageNotFoundError:
            v = "unknown"
        print(f"{PROG} (p4fabric {v}): p4switch with simple_switch_grpc's command line")
        return 0
    if "--json-version" in general:
        print(JSON_VERSION)
        return 0
    try:
        out, notes, g = translate(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if g.log_file:
        try:
            open(g.log_file, "a").close()
        except OSError as e:
            print(f"{PROG}: error: --log-file {g.log_file}: {e.strerror or e}", file=sys.stderr)
            return 2
    for note in notes:
        print(f"{PROG}: note: {note}", file=sys.stderr)
    _setup_logging(g)
    from p4switch.__main__ import main as p4switch_main

    return p4switch_main(out)


if __name__ == "__main__":
    sys.exit(main())
