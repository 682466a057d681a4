"""``python -m topo``: launch the emulated fabric (``make topo``) or check it (``make topo-check``).

Builds the topology (fat-tree, leaf-spine or a p4lang/tutorials topology.json) as a Mininet
network of P4 switch processes, starts the fabric controller on it (pipeline push, routes,
load-balancing groups, control loops), then either opens the fabric CLI or, with --check,
pings every host pair, prints a one-line summary and exits non-zero on any failure. Everything
it started is stopped on the way out; `make stop` cleans up after a crash.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from model.schemes import SCHEMES
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
                                epilog="CLI commands: lb, counters, links, linkdown, linkup, "
                                "collective, queues, events (help <command> in the CLI); "
                                "Mininet's own (h1 ping h2, pingall, ...) work too.")
    t = p.add_argument_group("topology")
    t.add_argument("--topo", default="fattree", metavar="fattree|leafspine|FILE.json",
                   help="fat-tree (default), leaf-spine, or a tutorials topology.json")
    t.add_argument("--k", type=_positive_int, default=4, help="fat-tree arity (even, default 4)")
    t.add_argument("--leaves", type=_positive_int, default=4, help="leaf-spine leaves")
    t.add_argument("--spines", type=_positive_int, default=2, help="leaf-spine spines")
    t.add_argument("--hosts-per-leaf", type=_positive_int, default=2)
    t.add_argument("--uplinks", type=_positive_int, default=1,
                   help="parallel links between each leaf and spine")
    t.add_argument("--bw", type=_mbps, default=None, metavar="MBPS",
                   help="link rate in Mbit/s (switch port rate + host HTB); default: the rate "
                   "`make calibrate` found for this machine, topology and target (so queueing "
                   "happens in the P4 egress queues), unlimited when nothing is calibrated")
    f = p.add_argument_group("fabric")
    f.add_argument("--target", choices=TARGET_NAMES, default=Target.P4SWITCH.value,
                   help="switch implementation (bmv2 needs simple_switch_grpc and p4c-bm2-ss; "
                   "ebpf: p4switch with the program in the kernel, needs clang and libbpf)")
    f.add_argument("--scheme", choices=tuple(SCHEMES), default="ecmp",
                   help="initial load-balancing scheme of every group (default ecmp)")
    f.add_argument("--control-period", type=float, default=0.5, metavar="S",
                   help="control loop period in seconds (default 0.5)")
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
        return fat_tree(a.k, a.bw)
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


def _start_controller(a: argparse.Namespace, spec: FabricSpec, run_dir: Path):
    from controller import FabricController

    ctl = FabricController(spec, target=a.target, control_period=a.control_period)
    ctl.start(scheme=a.scheme)
    _keep_p4info(ctl, run_dir)
    return ctl


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
    if not e or not e.get("emulated_mbps"):
        return None, ("links unlimited (nothing calibrated: sudo make calibrate, or --bw); "
                      "congestion then happens in CPU and socket buffers, not in P4 queues")
    mbps = float(e["emulated_mbps"])
    return mbps, (f"links at {mbps:g} Mb/s = a {e.get('fabric_rate', '?')}b/s fabric at TDF "
                  f"{float(e['tdf']):g} (calibrated; fabric time = wall time / "
                  f"{float(e['tdf']):g}, so a 1 ms CCT here is {1e3 / float(e['tdf']):.3g} µs "
                  "on the fabric)")


def main(argv: list[str] | None = None) -> int:
    p = parser()
    a = p.parse_args(argv)
    units = ""
    if a.bw is None:
        a.bw, units = calibrated_bw(a)
    try:
        spec = build_spec(a)
    except SpecError as e:
        p.error(str(e))
    if os.geteuid() != 0:
        p.error("needs root (Mininet namespaces and raw sockets); run it with sudo")
    from .lock import FabricBusy
    from .net import FabricNet
    from .nodes import TopoError

    # a plain `kill` tears the fabric down like `exit` does (the finally below runs)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    t0 = time.monotonic()
    net = FabricNet(spec, target=a.target, run_dir=a.run_dir, pcap=a.pcap,
                    log_level=a.log_level, lock_timeout=a.lock_wait,
                    switch_priority=a.switch_priority)
    ctl = None
    try:
        net.start()
        t1 = time.monotonic()
        if not a.no_controller:
            ctl = _start_controller(a, spec, net.run_dir)
        t2 = time.monotonic()
        print(f"{spec.name}: {len(spec.switches)} {a.target} switches, {len(spec.hosts)} hosts "
              f"up in {t2 - t0:.1f} s (network {net.timings['build']:.1f} s, switch processes "
              f"{net.timings['processes']:.1f} s, controller {t2 - t1:.1f} s); "
              f"switches at {', '.join(f'{k} ({n})' for k, n in net.priority.items())}; "
              f"run dir {net.run_dir}", flush=True)
        if units:
            print(f"{spec.name}: {units}", flush=True)
        if a.check:
            from .check import check_reachability

            res = check_reachability(net)
            print(res.summary(), flush=True)
            return 0 if res.passed else 1
        from .cli import FabricCLI

        FabricCLI(net, ctl)
        return 0
    except (FabricBusy, TopoError, SpecError, ImportError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if ctl is not None:
            try:
                ctl.stop()
            except Exception as e:  # tear-down must go on
                print(f"{PROG}: controller stop: {e}", file=sys.stderr)
        net.stop()


if __name__ == "__main__":
    sys.exit(main())
