"""``python -m topo``: launch the emulated fabric (``make topo``) or check it (``make topo-check``).

Builds the topology (fat-tree, leaf-spine or a p4lang/tutorials topology.json) as a Mininet
network of P4 switch processes, starts the fabric controller on it (pipeline push, routes,
load-balancing groups, control loops), then either opens the fabric CLI or, with --check,
pings every host pair, prints a one-line summary and exits non-zero on any failure. Everything
it started is stopped on the way out; `make stop` cleans up after a crash.

The fabric is described in its own units (--link-rate 100G, --prop-delay-us, --queue-packets,
--flowlet-gap-us, --min-rto-us, --control-period-us) and run TDF times slower (--tdf; default
auto: the factor `make calibrate` found for this machine): link rates ÷ TDF, every timer × TDF,
and the CLI prints every time and rate back in fabric units (topo/session.py, docs/fabric.md).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from model.schemes import DEFAULT_SCHEME, SCHEMES
from model.spec import FabricSpec, SpecError, fat_tree, leaf_spine
from model.targets import TARGET_NAMES, Target

from .priority import SwitchPriority

PROG = "python -m topo"


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _tdf(text: str) -> float | str:
    if text == "auto":
        return text
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected auto or a number >= 1, got {text!r}") \
            from None
    if not v >= 1:
        raise argparse.ArgumentTypeError(f"expected auto or a number >= 1, got {text!r}")
    return v


def _rate(text: str) -> str:
    from model.dilation import format_rate, parse_rate

    try:
        v = parse_rate(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a rate, e.g. 100G, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"link rate must be > 0, got {text!r}")
    return format_rate(v)


def _us(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected fabric µs, got {text!r}") from None
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"expected fabric µs >= 0, got {text!r}")
    return v


def _loops(text: str) -> tuple[str, ...] | None:
    from controller.loops import LOOP_NAMES

    if text == "auto":
        return None
    if text == "none":
        return ()
    names = tuple(n for n in text.split(",") if n)
    bad = [n for n in names if n not in LOOP_NAMES]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown loop(s) {', '.join(bad)} (choose from "
                                         f"{', '.join(LOOP_NAMES)}, or auto, none)")
    return names


def _mbps(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected link Mbit/s, e.g. 100, got {text!r}") \
            from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"link rate must be > 0 Mbit/s, got {text!r}")
    return v


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__,
                                usage="%(prog)s [--topo T] [--k K] [--target T] [--check] "
                                "[options]  (see --help)",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="CLI commands: fabric, lb, loops, collective, queues, "
                                "links, counters, linkdown, linkup, events (help <command> in "
                                "the CLI; times and rates in fabric units); Mininet's own (h1 "
                                "ping h2, pingall, ...) work too.")
    t = p.add_argument_group("topology")
    t.add_argument("--topo", default="fattree", metavar="fattree|leafspine|FILE.json",
                   help="fat-tree (default), leaf-spine, or a tutorials topology.json")
    t.add_argument("--k", type=_positive_int, default=4, help="fat-tree arity (even, default 4)")
    t.add_argument("--leaves", type=_positive_int, default=4, help="leaf-spine leaves")
    t.add_argument("--spines", type=_positive_int, default=2, help="leaf-spine spines")
    t.add_argument("--hosts-per-leaf", type=_positive_int, default=2)
    t.add_argument("--uplinks", type=_positive_int, default=1,
                   help="parallel links between each leaf and spine")
    u = p.add_argument_group("the fabric modelled, in its own units")
    u.add_argument("--link-rate", type=_rate, default="100G", metavar="RATE",
                   help="every link's rate in the fabric modelled, e.g. 100G, 400G (default "
                   "%(default)s); its links run here at this ÷ TDF")
    u.add_argument("--prop-delay-us", type=_us, default=1.0, metavar="US",
                   help="propagation delay per link, fabric µs (default %(default)s; "
                   "emulated by p4switch's ports, by the receiving hosts on ebpf, not on "
                   "bmv2)")
    u.add_argument("--queue-packets", type=_positive_int, default=64, metavar="N",
                   help="egress queue depth of every port, packets (default %(default)s)")
    u.add_argument("--trim", action="store_true",
                   help="packet trimming (UEC's; target p4switch): a full queue cuts a packet "
                        "to its headers, the receiver NACKs it (default: tail drop)")
    u.add_argument("--flowlet-gap-us", type=_us, default=50.0, metavar="US",
                   help="flowlet timeout of a flowlet scheme that states none (default "
                   "%(default)s µs)")
    from traffic.congestion import REGISTRY

    u.add_argument("--cc", default="dctcp", choices=tuple(REGISTRY),
                   help="the hosts' congestion control (default %(default)s)")
    u.add_argument("--min-rto-us", type=_us, default=200.0, metavar="US",
                   help="the hosts' minimum retransmission timeout (default %(default)s µs)")
    u.add_argument("--control-period-us", type=_us, default=20.0, metavar="US",
                   help="control loops' period (failure probes, Whack-a-Mole), fabric µs "
                   "(default %(default)s)")
    u.add_argument("--loops", type=_loops, default=None, metavar="auto|none|L,L",
                   help="control loops: failure, reconcile, wam (default auto: failure and "
                   "reconcile, and Whack-a-Mole's whenever a group uses it)")
    d = p.add_argument_group("how it runs here")
    d.add_argument("--tdf", type=_tdf, default=None, metavar="auto|N",
                   help="time-dilation factor: link rates ÷ N and every timer × N on this "
                   "machine (default auto: the one `make calibrate` found for this machine, "
                   "topology and target; 100000 when nothing is calibrated)")
    d.add_argument("--bw", type=_mbps, default=None, metavar="MBPS",
                   help="the links' rate here in Mbit/s instead of a TDF (TDF = link rate / "
                   "this)")
    f = p.add_argument_group("fabric")
    f.add_argument("--target", choices=TARGET_NAMES, default=Target.P4SWITCH.value,
                   help="switch implementation (bmv2 needs simple_switch_grpc and p4c-bm2-ss; "
                   "ebpf: p4switch with the program in the kernel, needs clang and libbpf)")
    f.add_argument("--scheme", choices=tuple(SCHEMES), default=DEFAULT_SCHEME,
                   help="initial load-balancing scheme of every group (default ecmp)")
    f.add_argument("--no-controller", action="store_true",
                   help="bring the switches up empty (nothing forwards until programmed)")
    f.add_argument("--run-dir", type=Path, default=None,
                   help="logs, pcaps, pid files (default /tmp/p4fabric/<name>-<pid>)")
    f.add_argument("--pcap", action="store_true", help="per-port pcaps under the run dir")
    f.add_argument("--log-level", default="warn",
                   choices=("trace", "debug", "info", "warn", "error", "critical", "off"),
                   help="switch log level (default warn)")
    f.add_argument("--switch-priority", choices=tuple(x.value for x in SwitchPriority),
                   default=SwitchPriority.REALTIME.value,
                   help="CPU scheduling of the switch processes: realtime (SCHED_RR 1, as the "
                   "experiments run them: a switch woken by a frame never waits behind hosts; "
                   "falls back to nice without CAP_SYS_NICE), nice (-10) or none (default "
                   "%(default)s)")
    f.add_argument("--lock-wait", type=float, default=0.0, metavar="S",
                   help="wait this long for another fabric to finish (default: fail at once)")
    m = p.add_argument_group("mode")
    m.add_argument("--check", action="store_true",
                   help="ping every host pair, print a one-line summary, exit 1 on any failure")
    return p


def build_spec(a: argparse.Namespace) -> FabricSpec:
    """The FabricSpec the arguments describe (SpecError on a bad one)."""
    if a.topo == "fattree":
        from .topos import check_mininet_size

        spec = fat_tree(a.k, a.bw)
        check_mininet_size(spec)
        return spec
    if a.topo == "leafspine":
        return leaf_spine(a.leaves, a.spines, a.hosts_per_leaf, a.uplinks, a.bw)
    if a.topo.endswith(".json") or Path(a.topo).exists():
        from dataclasses import replace

        from .jsontopo import load_topology_json

        spec = load_topology_json(a.topo)
        if a.bw:  # --bw fills in the links the file leaves unlimited
            spec.links = [lk if lk.bw_mbps else replace(lk, bw_mbps=a.bw) for lk in spec.links]
        return spec
    raise SpecError(f"--topo: expected fattree, leafspine or a .json file, got {a.topo!r}")


def _keep_p4info(ctl, run_dir: Path) -> None:
    """Write the pushed P4Info into the run dir (what `make shell` and humans read)."""
    from google.protobuf import text_format

    prog = getattr(ctl, "program", None)
    info = getattr(prog, "p4info", None)
    if info is not None:
        (run_dir / "p4info.txtpb").write_text(text_format.MessageToString(info))


def calibrated_bw(a: argparse.Namespace) -> tuple[float | None, str]:
    """The default link rate (Mb/s) from this machine's calibration, and the banner's words
    for it (fabric units and TDF)."""
    from .calibration import lookup, topology_key

    if a.topo not in ("fattree", "leafspine"):
        return None, ""
    key = topology_key(a.topo, a.k, a.leaves, a.spines, a.hosts_per_leaf, a.uplinks)
    e = lookup(key, a.target)
    if e is None or not e.emulated_mbps:
        return None, ("links unlimited (nothing calibrated: sudo make calibrate, or --bw); "
                      "congestion then happens in CPU and socket buffers, not in P4 queues")
    mbps = e.emulated_mbps
    return mbps, (f"links at {mbps:g} Mb/s = a {e.fabric_rate or '?'}b/s fabric at TDF "
                  f"{e.tdf:g} (calibrated; fabric time = wall time / "
                  f"{e.tdf:g}, so a 1 ms CCT here is {1e3 / e.tdf:.3g} µs "
                  "on the fabric)")


def session_of(a: argparse.Namespace) -> Any:
    """The FabricSession the arguments describe (not started; ValueError/SpecError on a bad
    combination)."""
    from .session import FabricSession
    from .units import fabric_transport

    if a.bw is not None and a.tdf is not None:
        raise SpecError("--bw sets the TDF (link rate / bw): give --bw or --tdf, not both")
    from model.dilation import parse_rate

    tdf = parse_rate(a.link_rate) / (a.bw * 1e6) if a.bw is not None else (a.tdf or "auto")
    topology: Any = a.topo
    if a.topo not in ("fattree", "leafspine"):
        topology = build_spec(argparse.Namespace(**{**vars(a), "bw": None}))
    return FabricSession(
        topology, k=a.k, leaves=a.leaves, spines=a.spines, hosts_per_leaf=a.hosts_per_leaf,
        uplinks=a.uplinks, link_rate=a.link_rate, prop_delay_us=a.prop_delay_us,
        queue_packets=a.queue_packets, flowlet_gap_us=a.flowlet_gap_us, tdf=tdf,
        scheme=a.scheme, transport=fabric_transport(a.cc, min_rto_us=a.min_rto_us),
        loops=a.loops, control_period_us=a.control_period_us, target=a.target,
        switch_priority=a.switch_priority, lock_timeout_s=a.lock_wait, run_dir=a.run_dir,
        pcap=a.pcap, log_level=a.log_level, trim=a.trim)


def main(argv: list[str] | None = None) -> int:
    p = parser()
    a = p.parse_args(argv)
    try:
        build_spec(a)
        session = session_of(a)
    except (SpecError, ValueError) as e:
        p.error(str(e))
    if os.geteuid() != 0:
        p.error("needs root (Mininet namespaces and raw sockets); run it with sudo")
    from .lock import FabricBusy
    from .nodes import TopoError

    # a plain `kill` tears the fabric down like `exit` does (the finally below runs)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    t0 = time.monotonic()
    try:
        session.start(controller=not a.no_controller)
        net = session.net
        if session.ctl is not None:
            _keep_p4info(session.ctl, net.run_dir)
        t2 = time.monotonic()
        spec = session.spec
        print(f"{spec.name}: {len(spec.switches)} {a.target} switches, {len(spec.hosts)} hosts "
              f"up in {t2 - t0:.1f} s of wall time (network {net.timings['build']:.1f} s, "
              f"switch processes {net.timings['processes']:.1f} s, controller "
              f"{session.timings.get('install', 0.0):.1f} s); "
              f"switches at {', '.join(f'{k} ({n})' for k, n in net.priority.items())}; "
              f"run dir {net.run_dir}", flush=True)
        print("\n".join(session.describe()), flush=True)
        if a.check:
            from .check import check_reachability

            # a ping waits for the dilated round trip (1.2 s at TDF 100,000 and 1 µs a hop)
            res = check_reachability(net, wait_s=max(1, math.ceil(3 * session.base_rtt_s(98))))
            print(res.summary(), flush=True)
            return 0 if res.passed else 1
        from .cli import FabricCLI

        FabricCLI(session, stdin=sys.stdin)
        return 0
    except (FabricBusy, TopoError, SpecError, ImportError, ValueError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        try:
            session.stop()
        except Exception as e:  # noqa: BLE001 - tear-down must go on
            print(f"{PROG}: stop: {e}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
