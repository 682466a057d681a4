"""``p4switch``: run the built-in P4 target as a switch, with flags modelled on simple_switch_grpc.

    p4switch prog.p4 -i 1@veth1 -i 2@veth2 --cpu-port 64 --pcap /tmp/cap
    p4switch --no-p4 -i 1@veth1 -i 2@veth2 --grpc-server-addr 127.0.0.1:9559

Bad arguments get a one-line error and exit status 2; SIGINT/SIGTERM stop the switch cleanly
(queues dropped, pcaps flushed, per-port counters logged).
"""

from __future__ import annotations

import argparse
import logging
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

log = logging.getLogger("p4switch")
MAX_PRIORITIES = 8
"""standard_metadata.priority is 3 bits (p4switch.queues.MAX_PRIORITIES; not imported here so
that argument errors come before any heavy import)."""

LOG_LEVELS = {
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "off": logging.CRITICAL + 10,
}


class DataPlane(StrEnum):
    """``--target``: which implementation of the pipeline API processes packets."""

    PYTHON = "python"
    EBPF = "ebpf"


@dataclass(frozen=True)
class PortSpec:
    """``-i PORT@IFACE`` (a Linux interface) or ``-i PORT@pcap:FILE`` (pcap input)."""

    number: int
    target: str

    @property
    def is_pcap(self) -> bool:
        return self.target.startswith("pcap:")

    @property
    def pcap_input(self) -> str | None:
        return self.target[len("pcap:") :] or None


def _int(text: str, what: str = "") -> int:
    """``text`` as an integer (0x/0o/0b prefixes allowed), or an argparse error naming ``what``."""
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}{text!r} is not an integer") from None


def _port_spec(text: str) -> PortSpec:
    num, sep, target = text.partition("@")
    if not sep or not target:
        raise argparse.ArgumentTypeError(f"expected PORT@INTERFACE (e.g. 1@veth0), got {text!r}")
    n = _int(num, "port number ")
    if not 0 <= n < 511:
        raise argparse.ArgumentTypeError(f"port number {n} out of range 0..510")
    return PortSpec(n, target)


def _port_prefixed(text: str) -> tuple[int | None, str]:
    """``[PORT:]VALUE`` -> (port or None for every port, VALUE)."""
    if ":" not in text:
        return None, text
    p, _, value = text.partition(":")
    return _int(p, "port "), value


def _queue_rate(text: str) -> tuple[int | None, float]:
    port, rate = _port_prefixed(text)
    try:
        pps = float(rate)
    except ValueError:
        raise argparse.ArgumentTypeError(f"rate {rate!r} is not a number (packets/s)") from None
    if pps < 0:
        raise argparse.ArgumentTypeError(f"rate must be >= 0 packets/s, got {pps:g}")
    return port, pps


def _port_delay(text: str) -> tuple[int | None, float]:
    """``[PORT:]US``: a propagation delay in µs (0 = none)."""
    port, us = _port_prefixed(text)
    try:
        delay = float(us)
    except ValueError:
        raise argparse.ArgumentTypeError(f"delay must be a number of µs, got {us!r}") from None
    if not 0 <= delay < float("inf"):
        raise argparse.ArgumentTypeError(f"delay must be a finite number of µs >= 0, got {us!r}")
    return port, delay


def _port_rate(text: str) -> tuple[int | None, float]:
    """``[PORT:]RATE`` with RATE a bit rate (``100Mbps``, ``1G``, bits/s; 0 = unlimited)."""
    from p4switch.queues import parse_bit_rate

    port, rate = _port_prefixed(text)
    try:
        return port, parse_bit_rate(rate)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _positive_int(text: str) -> int:
    v = _int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def _priority_queues(text: str) -> int:
    v = _int(text)
    if not 1 <= v <= MAX_PRIORITIES:
        raise argparse.ArgumentTypeError(
            f"must be 1..{MAX_PRIORITIES} (standard_metadata.priority has 3 bits), got {v}")
    return v


def _trim_bytes(text: str) -> int:
    v = _int(text)
    if not 14 <= v <= 9216:
        raise argparse.ArgumentTypeError(f"must be 14..9216 bytes (an Ethernet header at "
                                         f"least), got {v}")
    return v


def _port_number(text: str) -> int:
    v = _int(text)
    if not 0 <= v < 512:
        raise argparse.ArgumentTypeError(f"port {v} out of range 0..511 (9-bit ports)")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="p4switch",
        description="p4fabric's built-in P4_16 v1model software switch (flags modelled on "
        "BMv2's simple_switch_grpc). Ports are Linux interfaces (AF_PACKET, needs root) or "
        "pcap files; the program comes from the command line or over P4Runtime.",
    )
    p.add_argument(
        "program",
        nargs="?",
        help="P4_16 v1model source file to compile and run at start-up, or the BMv2 JSON "
        "p4c-bm2-ss wrote for one (told apart by content) "
        "(omit and pass --no-p4 to wait for SetForwardingPipelineConfig)",
    )
    p.add_argument(
        "--schema-only",
        metavar="P4INFO",
        help="serve P4Runtime for a program p4switch cannot run (e.g. the Tofino port's P4Info "
        "from make tofino): every write is checked against this P4Info (text format) and kept, "
        "reads return it; no packets (see docs/tofino.md)",
    )
    p.add_argument(
        "--no-p4",
        action="store_true",
        help="start without a program; packets are counted and dropped until a controller "
        "pushes one with SetForwardingPipelineConfig",
    )
    p.add_argument(
        "-i",
        "--interface",
        dest="interfaces",
        action="append",
        type=_port_spec,
        default=[],
        metavar="PORT@IFACE",
        help="attach a Linux interface as switch port PORT (repeatable), e.g. -i 1@veth0; "
        "PORT@pcap:FILE replays FILE as the port's input (PORT@pcap: for output only; "
        "output is written with --pcap)",
    )
    p.add_argument(
        "--target",
        choices=[t.value for t in DataPlane],
        default=DataPlane.PYTHON.value,
        help="where packets are processed: 'python' (default: the pipeline in this process) "
        "or 'ebpf' (the program compiled to BPF on each interface's tc ingress; needs root, "
        "clang and libbpf; see docs/p4switch-ebpf.md)",
    )
    p.add_argument("--device-id", type=int, default=0, help="P4Runtime device id (default 0)")
    p.add_argument(
        "--grpc-server-addr",
        default="127.0.0.1:9559",
        metavar="HOST:PORT",
        help="P4Runtime server address (default 127.0.0.1:9559 — loopback only; use "
        "0.0.0.0:9559 to accept remote controllers)",
    )
    p.add_argument("--no-grpc", action="store_true", help="do not start the P4Runtime server")
    p.add_argument(
        "--cpu-port",
        type=_port_number,
        default=None,
        help="port number whose output becomes PacketIn and on which PacketOut enters "
        "ingress (no CPU port by default)",
    )
    p.add_argument(
        "--drop-port",
        type=_port_number,
        default=511,
        help="egress_spec value that drops a packet (default 511, v1model's mark_to_drop)",
    )
    p.add_argument(
        "--pcap",
        default=None,
        metavar="DIR",
        help="write per-port pcap files DIR/<port>_in.pcap and DIR/<port>_out.pcap "
        "(DIR is created if needed; files are flushed at shutdown and open in Wireshark)",
    )
    p.add_argument(
        "--pcap-names",
        choices=["port", "interface"],
        default="port",
        help="name --pcap files by port number (default) or by interface name "
        "(<iface>_in.pcap, as BMv2 does)",
    )
    p.add_argument(
        "--log-level",
        choices=list(LOG_LEVELS),
        default="info",
        help="logging level (default info); 'debug' also prints the program's log_msg lines",
    )
    p.add_argument(
        "--queue-depth",
        type=_positive_int,
        default=64,
        metavar="PKTS",
        help="egress queue depth per port in packets (default 64); beyond it: tail drop, counted",
    )
    p.add_argument(
        "--socket-buffer",
        type=_positive_int,
        default=None,
        metavar="BYTES",
        help="receive/send buffer of each interface's AF_PACKET socket (default 8 MiB); small "
        "buffers keep the queueing in the egress queues the program sees, large ones absorb "
        "bursts the pipeline cannot keep up with (a queue no P4 program sees)",
    )
    p.add_argument(
        "--priority-queues",
        type=_priority_queues,
        default=1,
        metavar="N",
        help="strict-priority egress queues per port, picked by standard_metadata.priority "
        "(higher is served first; default 1), as BMv2's --priority-queues; each has "
        "--queue-depth packets, all share the port's rate",
    )
    p.add_argument(
        "--trim-bytes",
        type=_trim_bytes,
        default=None,
        metavar="N",
        help="packet trimming (UEC's; default off, as BMv2 tail-drops): a packet arriving to "
        "a full egress queue is cut to its first N bytes (its headers; IPv4/UDP lengths "
        "rewritten) and served before every priority",
    )
    p.add_argument(
        "--queue-rate",
        action="append",
        type=_queue_rate,
        default=[],
        metavar="[PORT:]PPS",
        help="egress service rate in packets/s for all ports (PPS) or one port (PORT:PPS); "
        "repeatable; 0 = unlimited (default)",
    )
    p.add_argument(
        "--port-rate",
        action="append",
        type=_port_rate,
        default=[],
        metavar="[PORT:]RATE",
        help="link rate of all ports (RATE) or one port (PORT:RATE) in bits/s, e.g. 100Mbps, "
        "1Gbps, 10M, 2.5G or plain bits/s: the egress queue sends a frame per len*8/RATE "
        "seconds, so qdepth metadata and ECN see congestion; repeatable; 0 = unlimited; a "
        "port has either a --queue-rate or a --port-rate",
    )
    p.add_argument(
        "--port-delay",
        action="append",
        type=_port_delay,
        default=[],
        metavar="[PORT:]US",
        help="propagation delay of the link behind all ports (US) or one port (PORT:US), in "
        "µs: a frame leaves the egress queue as before and reaches the wire US later (what "
        "netem's delay would do; this kernel may have no netem); repeatable; 0 = none "
        "(default); p4switch target only",
    )
    p.add_argument(
        "--host-port",
        action="append",
        type=int,
        default=[],
        metavar="PORT",
        help="PORT's link leads to a host that sends undelayed (HTB): with a --port-delay and "
        "a --port-rate on PORT, frames to the host also wait one more frame time, the host "
        "uplink's serialisation (a path's store-and-forward delay is then exact); repeatable",
    )
    p.add_argument(
        "--control-socket",
        metavar="PATH",
        default=None,
        help="serve the run-time control channel on Unix socket PATH (JSON lines: "
        "set_port_rate, set_queue_rate, set_queue_depth, port_stats, ping; client: "
        "python -m p4switch.control PATH ...)",
    )
    p.add_argument(
        "--entries",
        metavar="FILE",
        help="install table entries at start-up from an STF-style file "
        "('add TABLE [PRIO] KEY:VALUE ... ACTION(PARAM:VALUE,...)' and "
        "'setdefault TABLE ACTION(...)' lines); needs a program on the command line",
    )
    p.add_argument(
        "--stop-after-input",
        action="store_true",
        help="exit once all pcap inputs were processed and queues drained (batch mode)",
    )
    return p


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=LOG_LEVELS[level],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _fail(msg: str) -> int:
    print(f"p4switch: error: {msg}", file=sys.stderr)
    return 2


def _serve_schema_only(args: argparse.Namespace) -> int:
    """``--schema-only``: a P4Runtime server over a P4Info alone, until SIGINT/SIGTERM."""
    from google.protobuf import text_format

    from p4switch.p4info import parse as parse_p4info
    from p4switch.runtime.schema_only import start_schema_server

    _setup_logging(args.log_level)
    try:
        info = parse_p4info(Path(args.schema_only).read_bytes())
    except (OSError, UnicodeDecodeError, text_format.ParseError) as e:
        return _fail(f"cannot read P4Info {args.schema_only}: {e}")
    try:
        server = start_schema_server(info, args.grpc_server_addr, args.device_id)
    except OSError as e:
        return _fail(f"cannot start the P4Runtime server on {args.grpc_server_addr}: {e}")
    log.info("schema-only P4Runtime server for %s on %s (device %d)", args.schema_only,
             args.grpc_server_addr, args.device_id)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass
    server.stop(0.5).wait(2.0)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.schema_only:
        if args.program or args.no_p4 or args.interfaces or args.entries:
            parser.error("--schema-only takes no program, --no-p4, ports or --entries: it "
                         "has no packet path")
        return _serve_schema_only(args)
    if args.program and args.no_p4:
        parser.error("give either a program or --no-p4, not both")
    if not args.program and not args.no_p4:
        parser.error("a P4 program is required (or --no-p4 to wait for one over P4Runtime)")
    if args.entries and not args.program:
        parser.error("--entries needs a program on the command line")
    numbers = [s.number for s in args.interfaces]
    dup = {n for n in numbers if numbers.count(n) > 1}
    if dup:
        parser.error(f"port {sorted(dup)[0]} given twice")
    pps_ports = {port for port, rate in args.queue_rate if rate}
    both = pps_ports & {port for port, rate in args.port_rate if rate}
    if both:
        which = sorted(both, key=lambda p: -1 if p is None else p)[0]
        parser.error(
            f"{'every port' if which is None else f'port {which}'} has both a --queue-rate "
            "and a --port-rate (a queue has one rate: packets/s or bits/s)"
        )
    for n in numbers:
        if n == args.cpu_port:
            parser.error(f"port {n} is the CPU port")
        if n == args.drop_port:
            parser.error(f"port {n} is the drop port")
    ebpf = args.target == DataPlane.EBPF
    if ebpf:
        from p4switch.ebpf.toolchain import unavailable_reason

        why = unavailable_reason()
        if why is not None:
            return _fail(f"{why}; the default --target python needs none of it")
        if any(s.is_pcap for s in args.interfaces):
            parser.error("--target ebpf takes Linux interfaces only (no pcap ports)")
        if args.pcap:
            parser.error("--pcap needs --target python (eBPF frames never reach this process)")
        if args.trim_bytes is not None:
            parser.error("--trim-bytes needs --target python (the eBPF target's queues are "
                         "the kernel's qdiscs, which tail-drop)")
    _setup_logging(args.log_level)

    from p4switch.ports import PcapFilePort, RawPort
    from p4switch.switch import Switch

    program = None
    if args.program:
        path = Path(args.program)
        if not path.is_file():
            return _fail(f"{path}: no such file")
        try:
            from p4switch.errors import P4CompileError
            from p4switch.programs import load_program
        except ImportError as e:
            return _fail(f"the P4 front end is not available ({e})")
        try:
            program = load_program(path)  # P4 source, or p4c-bm2-ss's BMv2 JSON
        except P4CompileError as e:
            print(str(e), file=sys.stderr)
            return 2

    common = dict(device_id=args.device_id, cpu_port=args.cpu_port, drop_port=args.drop_port,
                  queue_depth=args.queue_depth, priority_queues=args.priority_queues,
                  trim_bytes=args.trim_bytes)
    sw: Switch
    if ebpf:
        from p4switch.ebpf.switch import EbpfSwitch

        try:
            sw = EbpfSwitch({s.number: s.target for s in args.interfaces}, **common)
        except (OSError, ValueError, subprocess.CalledProcessError) as e:
            what = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            return _fail(f"cannot attach port: {what}")
    else:
        sw = Switch(**common, pcap_dir=args.pcap, pcap_naming=args.pcap_names)
    # switch-wide rates first (a rate for every port replaces the per-port ones), and zeros
    # (unlimited) before rates, so no flag undoes another one the check above allowed
    rates: list[tuple[int | None, Callable[[int | None, float | None], None], float]] = [
        (port, sw.set_queue_rate, pps) for port, pps in args.queue_rate]
    rates += [(port, sw.set_port_rate, bps) for port, bps in args.port_rate]
    for port, setter, rate in sorted(rates, key=lambda r: (r[0] is not None, bool(r[2]))):
        setter(port, rate or None)

    try:
        for spec in [] if ebpf else args.interfaces:
            if spec.is_pcap:
                sw.add_port(PcapFilePort(spec.number, spec.pcap_input))
            else:
                sw.add_port(RawPort(spec.number, spec.target,
                                    **({"socket_buffer": args.socket_buffer}
                                       if args.socket_buffer else {})))
    except (OSError, ValueError) as e:
        _close_ports(sw)
        what = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        return _fail(f"cannot attach port: {what}")

    if args.port_delay:
        if ebpf:
            _close_ports(sw)
            return _fail("--port-delay: the ebpf target emulates no propagation delay "
                         "(docs/p4switch-ebpf.md); use the p4switch target")
        for port, us in sorted(args.port_delay, key=lambda d: d[0] is not None):
            sw.set_port_delay(port, us or None)
        sw.host_ports = set(args.host_port)

    if program is not None:
        try:
            sw.load_program(program)
        except Exception as e:  # a pipeline that cannot be built is a user-facing error
            _close_ports(sw)
            return _fail(f"cannot load {args.program}: {e}")
        log.info("program %s loaded", args.program)
        if args.entries:
            try:
                n = install_entries(sw, args.entries)
            except (OSError, EntriesError) as e:
                _close_ports(sw)
                return _fail(str(e))
            log.info("%d entries installed from %s", n, args.entries)

    server = None
    if not args.no_grpc:
        try:
            from p4switch.runtime import start_server
        except ImportError as e:
            log.warning("P4Runtime server not available (%s): running without gRPC", e)
        else:
            try:
                server = start_server(sw, args.grpc_server_addr)
            except Exception as e:
                _close_ports(sw)
                return _fail(f"cannot start the P4Runtime server on {args.grpc_server_addr}: {e}")
            log.info("P4Runtime server listening on %s", args.grpc_server_addr)
    if program is None and server is None:
        log.warning("no program and no P4Runtime server: every packet will be dropped")

    stop = threading.Event()

    def _on_signal(signum: int, _frame: object) -> None:
        log.info("%s received, stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)

    control = None
    if args.control_socket:
        from p4switch.control import ControlServer

        control = ControlServer(sw, args.control_socket)
        try:
            control.start()
        except OSError as e:
            if server is not None:
                server.stop(0.5).wait(2.0)
            _close_ports(sw)
            return _fail(f"cannot serve --control-socket {args.control_socket}: "
                         f"{e.strerror or e}")
        log.info("control socket listening on %s", args.control_socket)

    sw.start()
    try:
        if args.stop_after_input:
            while not stop.is_set() and not sw.wait_idle(timeout=0.5):
                pass
        else:
            while not stop.wait(0.5):
                pass
    finally:
        if control is not None:
            control.stop()
        if server is not None:
            server.stop(0.5).wait(2.0)
        sw.stop()
    return 0


class EntriesError(Exception):
    """A ``--entries`` file that cannot be applied; str is ``file:line: message``."""


_PACKET_COMMANDS = ("PacketCmd", "ExpectCmd", "Wait", "CheckCounter", "CheckRegister")


def install_entries(sw: Any, path: str) -> int:
    """Apply the control-plane lines of an STF-style file (add, setdefault, member, group,
    mirroring_add, mc_*, register/counter writes...) to the switch's pipeline, under the switch
    lock. Packet/expect/check lines are refused: this is start-up state, not a test. Reuses
    the STF parser and runner so the two dialects cannot drift apart."""
    from p4switch.pipeline.api import StateError
    from p4switch.stf.runner import StfRunError, StfRunner
    from p4switch.stf.syntax import StfSyntaxError, parse_stf

    text = Path(path).read_text()
    try:
        commands = parse_stf(text, path)
    except StfSyntaxError as e:
        raise EntriesError(str(e)) from None
    runner = StfRunner(sw.program, sw.pipeline, path)
    n = 0
    with sw.lock:
        for cmd in commands:
            kind = type(cmd).__name__
            if kind in _PACKET_COMMANDS:
                raise EntriesError(f"{path}:{cmd.line}: '{kind}' lines are not allowed in --entries")
            try:
                runner.execute(cmd)
            except (StfRunError, StateError, ValueError, KeyError) as e:
                raise EntriesError(f"{path}:{cmd.line}: {e}") from None
            if kind != "NoOp":
                n += 1
    return n


def _close_ports(sw: object) -> None:
    for port in getattr(sw, "ports", {}).values():
        port.close()
    close = getattr(sw, "close", None)  # the eBPF switch: filters and its CPU veth
    if close is not None:
        close()


if __name__ == "__main__":
    sys.exit(main())
