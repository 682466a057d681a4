"""``python -m sim``: one simulated collective on a generated fabric, summary printed.

    python -m sim --k 4 --scheme wam --schedule alltoall --size 1MB --rate 100G
    python -m sim --leaf-spine 4x2 --schedule ring_allreduce --fail agg1-core1@50
    python -m sim --k 16 --scheme random --tm perm_1024n_1024c_0u_2000000b.cm

Prints the job's CCT and the run statistics (JSON with --json); --counters adds the per-member
LB counters, --check compares them with the reference models (deterministic schemes).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

from model.routing import EcnRamp, EcnThreshold
from model.spec import SpecError, degrade_links, fat_tree, leaf_spine, random_switch_links
from p4switch import parse_bit_rate
from traffic.congestion import DEFAULT_CC, REGISTRY, base_rtt, fabric_ecn_threshold, host_hops
from traffic.congestion.nscc import uec_preset
from traffic.schedules import GENERATORS, ScheduleError, parse_size
from traffic.schedules.cm import dump_cm, failed_links, load_cm
from traffic.transport import WIRE_OVERHEAD

MAX_MTU = 9216
"""Jumbo frames: the largest host packet the simulator accepts."""


def _failure(text: str) -> tuple[str, str, float]:
    try:
        link, at = text.split("@")
        a, b = link.split("-")
        return a, b, float(at)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not A-B@MICROSECONDS") from None


def _degrade(text: str) -> tuple[str, float]:
    """``N@FRACTION`` or ``A-B@FRACTION``."""
    what, _, frac = text.partition("@")
    try:
        return what, float(frac)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not N@FRACTION or A-B@FRACTION") \
            from None


def _cc_param(text: str) -> tuple[str, float]:
    name, eq, value = text.partition("=")
    try:
        if not eq:
            raise ValueError
        return name.strip(), float(value)
    except ValueError:
        raise ValueError(f"{text!r} is not NAME=NUMBER") from None


def _leaf_spine(text: str) -> tuple[int, int]:
    try:
        leaves, spines = (int(x) for x in text.lower().split("x"))
        return leaves, spines
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not LEAVESxSPINES") from None


@contextlib.contextmanager
def progress_bar(label: str) -> Iterator[Callable[[Any], None]]:
    """A rich bar on stderr fed by ``SimNetwork.run(progress=...)``: flows fully acknowledged
    out of all network flows, with virtual time and packet-hops per wall second beside it."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(TextColumn("{task.description}"), BarColumn(bar_width=12),
                  MofNCompleteColumn(), TextColumn("flows {task.fields[info]}"),
                  TimeElapsedColumn(),
                  console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(label, total=None, info="")

        def show(p: Any) -> None:
            rate = p.packet_hops / p.wall_s if p.wall_s > 0 else 0.0
            bar.update(task, completed=p.flows_done, total=p.flows_total,
                       info=f"{p.now_us / 1e3:.2f}ms {p.packet_hops:,} hops "
                            f"{rate:,.0f}/s")

        yield show


def main(argv: list[str] | None = None) -> int:
    from model.schemes import DEFAULT_SCHEME, SCHEMES

    ap = argparse.ArgumentParser(prog="python -m sim", description=__doc__.splitlines()[0])
    topo = ap.add_mutually_exclusive_group()
    topo.add_argument("--k", type=int, default=4, help="fat-tree k (default 4)")
    topo.add_argument("--leaf-spine", type=_leaf_spine, metavar="LxS",
                      help="leaf-spine with L leaves and S spines instead")
    ap.add_argument("--hosts-per-leaf", type=int, default=2)
    ap.add_argument("--oversub", type=float, default=1.0, metavar="R",
                    help="oversubscription R:1 at the edge/leaf: its uplinks at the rate / R "
                         "(default 1)")
    ap.add_argument("--degrade", type=_degrade, action="append", default=[],
                    metavar="N@F|A-B@F",
                    help="N random switch links (drawn with --seed), or link A-B, at fraction "
                         "F of their rate for the whole run (htsim's -failed N: 0.25)")
    ap.add_argument("--scheme", default=DEFAULT_SCHEME, choices=sorted(SCHEMES))
    ap.add_argument("--schedule", default="alltoall", choices=sorted(GENERATORS))
    ap.add_argument("--tm", metavar="FILE",
                    help="run htsim's connection matrix FILE (.cm) instead of --schedule; its "
                         "failures fail those links from the start (docs/htsim.md)")
    ap.add_argument("--export-cm", metavar="FILE",
                    help="write the workload as an htsim connection matrix to FILE and exit "
                         "(htsim_uec -tm FILE runs the same flows)")
    ap.add_argument("--size", default="256KB", help="collective size (default %(default)s)")
    ap.add_argument("--algorithm", choices=["direct", "scattered", "pairwise"],
                    help="AllToAll / MoE AllToAll algorithm (traffic.schedules; default direct)")
    ap.add_argument("--rate", default="100G", help="link rate (default %(default)s)")
    ap.add_argument("--prop-us", type=float, default=1.0, help="propagation delay per link")
    ap.add_argument("--prop-at-hosts", action="store_true",
                    help="add the propagation delay at the receiving host (path links x "
                         "--prop-us), where the eBPF emulation adds it, not on each link")
    ap.add_argument("--queue-depth", type=int, default=64)
    ap.add_argument("--mtu", type=int, default=None, metavar="BYTES",
                    help="the hosts' packet size on the wire, headers included (default: "
                         f"{WIRE_OVERHEAD} + the transport's MSS, 1470; htsim's default is "
                         "4150)")
    ap.add_argument("--cc", default=DEFAULT_CC.value, choices=sorted(REGISTRY),
                    help="congestion control (traffic.congestion; default %(default)s)")
    ap.add_argument("--cc-preset", choices=["uec"],
                    help="uec: NSCC as htsim's UEC NSCC starts (1.5 BDP window, 0.75 RTT "
                         "queueing target with --trim, 1 RTT without, as htsim's; "
                         "traffic.congestion.nscc.uec_preset)")
    ap.add_argument("--cc-param", action="append", default=[], metavar="NAME=VALUE",
                    help="a parameter of --cc, e.g. g=0.0625 (repeatable)")
    ap.add_argument("--min-rto-us", type=float, default=None,
                    help="RFC 6298 RTO floor in µs (default: the simulator's 200)")
    ap.add_argument("--ecn-k", type=int, default=None,
                    help="switches' CE-marking threshold, packets (default: from --cc, the "
                         "link rate and the fabric's base RTT)")
    ap.add_argument("--ecn-kmin", type=int, default=None, metavar="K",
                    help="the low end of a marking ramp, packets: CE with probability rising "
                         "linearly from K to the threshold (--ecn-k or its default), always "
                         "above it (RED-style, htsim's -ecn LOW HIGH; default: a step at the "
                         "threshold)")
    ap.add_argument("--no-ecn", action="store_true",
                    help="no ECN marking and no congestion control (--cc none)")
    ap.add_argument("--fail", type=_failure, action="append", default=[],
                    metavar="A-B@US", help="link A-B down at US µs (rerouted 1 ms later; with "
                         "--loops failure, when the failure loop finds it)")
    ap.add_argument("--loops", default="", metavar="LOOP,...",
                    help="the controller's control loops to run in virtual time (wam, "
                         "failure; sim.control); with failure, --fail links are found and "
                         "rerouted by it instead of 1 ms later")
    ap.add_argument("--control-period-us", type=float, default=20.0,
                    help="the loops' period (default %(default)s µs)")
    ap.add_argument("--trim", action="store_true",
                    help="packet trimming at the switches' queues (UEC's; off: tail drop, as "
                         "v1model): a full queue cuts a packet to its headers, the receiver "
                         "NACKs it, the sender resends it at once")
    ap.add_argument("--until-us", type=float, default=10e6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start-skew-us", type=float, default=0.0, metavar="US",
                    help="hosts start their ranks at offsets drawn uniformly from [0, US) by "
                         "--seed and the host's name (default 0: all at once; docs/sim.md, "
                         "\"Hosts' start skew\")")
    ap.add_argument("--workers", type=int, default=1,
                    help="processes to split the run over (default 1; 2 on a 2-core machine "
                         "for a big fabric: the results are the same for any number)")
    ap.add_argument("--ray", metavar="ADDRESS",
                    help="with --workers N: run the parts but the first as Ray tasks on the "
                         "cluster at ADDRESS (HEAD:6379, or 'local' for a Ray started here); "
                         "the results are the same")
    ap.add_argument("--pipeline", choices=["python", "native"], default="native",
                    help="what executes fabric.p4 per hop: the program compiled to C (the "
                         "default; built once per machine) or the pipeline's generated Python; "
                         "the results are the same")
    ap.add_argument("--core", choices=["c", "python"], default="c",
                    help="what runs the event loop, wires, queues and switch hop: c (sim.core, "
                         "with the native pipeline; the default) or python (sim.events, "
                         "sim.link, sim.switch); the results are the same")
    ap.add_argument("--host-path", choices=["c", "python"], default="c",
                    help="what runs the hosts' per-packet transport on the C core: c (sim.hostc, "
                         "the default; NSCC, DCTCP or a fixed window, no path-policy feedback) or "
                         "python (sim.host); the results are the same")
    ap.add_argument("--counters", action="store_true", help="print per-member LB counters")
    ap.add_argument("--check", action="store_true",
                    help="compare LB counters with the reference models (exit 1 on mismatch)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--quiet", action="store_true",
                    help="no progress bar (it goes to stderr: flows acknowledged, virtual "
                         "time, packet-hops per wall second)")
    a = ap.parse_args(argv)
    try:
        rate = parse_bit_rate(a.rate)
        size = parse_size(a.size)
        if a.leaf_spine:
            spec = leaf_spine(a.leaf_spine[0], a.leaf_spine[1], a.hosts_per_leaf,
                              bw_mbps=rate / 1e6 or None, oversub=a.oversub)
        else:
            spec = fat_tree(a.k, bw_mbps=rate / 1e6 or None, oversub=a.oversub)
        for what, frac in a.degrade:
            if what.isdigit():
                pairs = random_switch_links(spec, int(what), a.seed)
            elif what.count("-") == 1:
                pairs = [(what.split("-")[0], what.split("-")[1])]
            else:
                raise ValueError(f"--degrade {what}@{frac:g}: not N@FRACTION or A-B@FRACTION")
            spec = degrade_links(spec, pairs, frac)
        opts = {}
        if a.algorithm:
            if a.schedule not in ("alltoall", "moe_alltoall"):
                ap.error(f"--algorithm is for alltoall and moe_alltoall, not {a.schedule}")
            opts["algorithm"] = a.algorithm
        if a.tm:
            sched = load_cm(a.tm, len(spec.hosts))
            a.schedule = sched.name
            size = sum(x.bytes for _, _, x in sched.sends())
            a.size = f"{size}B"
            cm_failed = failed_links(sched.meta.get("cm_failures", ()), a.k) \
                if sched.meta.get("cm_failures") else []
            if cm_failed and a.leaf_spine:
                raise ValueError(f"{a.tm}: its failures name fat-tree links (not --leaf-spine)")
        else:
            sched = GENERATORS[a.schedule](len(spec.hosts), size, **opts)
            cm_failed = []
        loops = [n for n in a.loops.split(",") if n]
        if loops:
            from controller.loops import LOOP_NAMES
            bad = [n for n in loops if n not in LOOP_NAMES]
            if bad:
                raise ValueError(f"--loops: {bad[0]!r} is not one of {', '.join(LOOP_NAMES)}")
            if not a.control_period_us > 0:
                raise ValueError("--control-period-us must be > 0")
            if a.workers > 1:
                raise ValueError("--loops runs in one process: not with --workers > 1")
    except (ValueError, SpecError, ScheduleError) as e:
        ap.error(str(e))
    if a.export_cm:
        try:
            cm = dump_cm(sched, a.export_cm)
        except (OSError, ScheduleError) as e:
            ap.error(f"--export-cm: {e}")
        print(f"{a.export_cm}: {len(cm.flows)} flows, {len(cm.triggers)} triggers on "
              f"{cm.nodes} nodes")
        for note in cm.comments:
            print(f"  note: {note}")
        return 0
    if a.check and a.fail:
        ap.error("--check replays the packets through the initial entries: not with --fail")
    if a.queue_depth < 1:
        ap.error("--queue-depth must be >= 1")
    if not a.start_skew_us >= 0:
        ap.error("--start-skew-us must be >= 0")
    if a.workers < 1:
        ap.error("--workers must be >= 1")
    if a.ray and a.workers < 2:
        ap.error("--ray splits the run: give --workers 2 or more")
    if a.workers > 1 and a.prop_us <= 0:
        ap.error("--workers > 1 needs --prop-us > 0 (the split run's lookahead)")
    if a.workers > 1 and a.prop_at_hosts:
        ap.error("--workers > 1 cannot split a run with --prop-at-hosts (no link delay to "
                 "look ahead by)")
    unknown = [f"{x}-{y}" for x, y, _ in a.fail if not spec.links_between(x, y)]
    if unknown:
        ap.error(f"--fail: no link {unknown[0]} in {spec.name}")

    from .host import SIM_TRANSPORT

    if a.no_ecn:
        a.cc = "none"
    try:
        params = dict(_cc_param(x) for x in a.cc_param)
        if a.cc_preset:
            if a.cc != "nscc":
                raise ValueError(f"--cc-preset {a.cc_preset} is for --cc nscc")
            params = {**uec_preset(a.trim), **params}
        transport = SIM_TRANSPORT.with_cc(a.cc, params)
        if a.mtu is not None:
            if not WIRE_OVERHEAD < a.mtu <= MAX_MTU:
                raise ValueError(f"--mtu must be in {WIRE_OVERHEAD + 1}..{MAX_MTU}")
            transport = dataclasses.replace(transport, mss=a.mtu - WIRE_OVERHEAD)
        if a.cc_preset:   # the preset is in RTTs and BDPs: the fabric's unloaded RTT
            transport = dataclasses.replace(transport, base_rtt=base_rtt(
                host_hops(spec), a.prop_us * 1e-6, rate or 1e12, transport.mss + WIRE_OVERHEAD))
        if a.min_rto_us is not None:
            if a.min_rto_us <= 0:
                raise ValueError("--min-rto-us must be > 0")
            transport = dataclasses.replace(transport, min_rto=a.min_rto_us * 1e-6)
    except ValueError as e:
        ap.error(f"--cc-param: {e}" if "--" not in str(e) else str(e))
    if a.ecn_k is not None and a.ecn_k < 1:
        ap.error("--ecn-k must be >= 1")
    if a.ecn_kmin is not None and a.ecn_kmin < 0:
        ap.error("--ecn-kmin must be >= 0")
    k = a.ecn_k or fabric_ecn_threshold(spec, a.cc, rate or None, a.prop_us * 1e-6,
                                        transport.mss + WIRE_OVERHEAD, a.queue_depth, params)
    marking: EcnThreshold = k if a.ecn_kmin is None else EcnRamp(a.ecn_kmin, k)

    from .host import HostConfig
    from .network import LinkFailure, SimConfig, SimNetwork
    from .refcheck import compare_counters
    from .results import member_counters

    cfg = SimConfig(prop_delay_us=a.prop_us, prop_at_hosts=a.prop_at_hosts,
                    queue_depth=a.queue_depth, seed=a.seed, start_skew_us=a.start_skew_us,
                    host=HostConfig(transport=transport), record_ingress=a.check,
                    ecn_threshold=None if a.no_ecn else marking, workers=a.workers, trim=a.trim,
                    ray_address=a.ray, pipeline=a.pipeline,
                    core=a.core, host_path=a.host_path)
    net = SimNetwork(spec, a.scheme, cfg)
    if loops:
        net.start_loops(loops, a.control_period_us)
    found = "failure" in loops   # the failure loop finds the cut links itself
    failures = [LinkFailure(x, y, at, None if found else 1000.0) for x, y, at in a.fail]
    # htsim builds its fabric without a matrix's failed links: cut and routed around at once
    failures += [LinkFailure(x, y, 0.0, 0.0) for x, y in cm_failed]
    try:
        if a.quiet:
            res = net.run(sched, until_us=a.until_us, failures=failures)
        else:
            with progress_bar(a.scheme) as show:
                res = net.run(sched, until_us=a.until_us, failures=failures, progress=show)
    except RuntimeError as e:  # a split run's part failed, or Ray could not be joined
        if not a.ray:
            raise
        print(f"python -m sim: {e}", file=sys.stderr)
        return 1
    summary = {"fabric": spec.name, "scheme": a.scheme, "schedule": a.schedule, "size": size,
               "trim": a.trim, "mtu": transport.mss + WIRE_OVERHEAD,
               "ecn": None if a.no_ecn else marking(rate or None) if callable(marking) else marking,
               "oversub": a.oversub, "degraded": spec.params.get("degraded", {}),
               **res.summary(), "events_log": net.events,
               "loop_events": net.control_events}
    if a.json:
        print(json.dumps(summary, indent=1, default=str))
    else:
        cct = f"{res.cct_s * 1e6:.1f} µs" if res.cct_s is not None else "-"
        print(f"{spec.name} {a.scheme} {a.schedule} {a.size}: ok={res.ok} CCT={cct} "
              f"hops={res.packet_hops} wall={res.wall_s:.1f}s ({res.hops_per_s:.0f} hops/s)")
        if summary["fct_tail_us"] is not None:
            print(f"  FCT µs: min {summary['fct_min_us']:.1f} p50 {summary['fct_p50_us']:.1f} "
                  f"p90 {summary['fct_p90_us']:.1f} p99 {summary['fct_p99_us']:.1f} "
                  f"tail {summary['fct_tail_us']:.1f} spread {summary['fct_spread']} "
                  f"(finished {summary['flows'] - summary['flows_unfinished']}"
                  f"/{summary['flows']})")
        for k in ("tail_drops", "trims", "retransmissions", "nacks", "trim_nacks", "timeouts",
                  "reordered", "link_losses"):
            print(f"  {k}: {summary[k]}")
        print(f"  trimming: {'on' if a.trim else 'off'}")
        ecn = summary["ecn"]
        print("  ECN: " + ("off" if ecn is None else f"ramp {ecn[0]}..{ecn[1]} packets"
                           if isinstance(ecn, tuple) else f"step at {ecn} packets"))
        degraded: dict[str, float] = spec.params.get("degraded", {})  # type: ignore[assignment]  # model.spec.degrade_links writes a dict
        if degraded:
            print("  degraded links: " + ", ".join(f"{k} at {v:g}" for k, v in degraded.items()))
        for t, what in net.events:
            print(f"  {t:10.1f} µs  {what}")
        for t, loop, _sw, what in net.control_events:
            print(f"  {t:10.1f} µs  [{loop}] {what}")
    if a.counters:
        print(member_counters(net).to_string(index=False))
    rc = 0 if res.ok else 1
    if a.check:
        cmp = compare_counters(net)
        bad = cmp[cmp["packets"] != cmp["expected"]]
        print(f"counters vs reference: {len(cmp) - len(bad)}/{len(cmp)} equal")
        if len(bad):
            print(bad.to_string(index=False))
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
