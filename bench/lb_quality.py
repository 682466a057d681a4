"""Load-balancing quality of fabric.p4's schemes, measured on the real program on p4switch.

For each scheme (one LB group of ``--members`` equal-weight members) and each workload, the
packets go through ``Pipeline.process`` of p4src/fabric.p4 (compiled by p4switch's front end;
state installed as p4src/README.md's controller contract says) and the egress port names the
member. Workloads (one packet per microsecond of switch time):

* ``large``: 4 large flows (low entropy, like collectives): each flow sends bursts of
  ``--burst`` packets, the flows taking turns, so a flow idles 3 bursts between its own;
* ``small``: 1000 small flows of equal size, packets interleaved at random.

Figures per (scheme, workload):

* max load/share: the most loaded member's packets over its weighted share (with equal weights: max
  over mean load; 1.00 = exactly the share);
* max window dev: max over members and over EVERY window of 1..``--max-window`` consecutive
  packets (default 4m for Whack-a-Mole's m) of |packets to the member - its weighted share|, in packets;
  Whack-a-Mole's bound is log2(m);
* reordered: packets of a flow that arrive after a later-sent packet of the same flow, when
  member k is modelled as a FIFO with fixed latency ``--latencies[k]`` us (so only a member
  change can reorder);
* pkt/s: packets per second of the pipeline on this run (process() only).

Run: .venv/bin/python bench/lb_quality.py [--packets 100000 --members 4 --schemes ecmp,wam]
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from common.checksum import csum16
from model.pipeline_target import install_on_pipeline
from model.schemes import SCHEMES as SCHEME_REGISTRY
from model.schemes import Ecmp, GroupContext, Scheme, WhackAMole, scheme_from_name
from p4switch import LpmMatch, Pipeline, TableEntry, compile_file

FABRIC_P4 = Path(__file__).resolve().parents[1] / "p4src" / "fabric.p4"
SCHEMES = tuple(SCHEME_REGISTRY)  # ecmp, flowlet, random, rotate, wam
WORKLOADS = ("large", "small")
GROUP = 1
PORT0 = 10
IN_PORT = 1
DST_PREFIX = 0x0A020000  # 10.2.0.0/16 -> the group


# ---- packets ---------------------------------------------------------------------------------

def udp_frame(src: int, dst: int, sport: int, dport: int, payload: int = 64) -> bytes:
    """Ethernet/IPv4/UDP (RoCEv2 port by default) with a correct IPv4 checksum, UDP csum 0."""
    body = bytes(payload)
    l4 = struct.pack("!HHHH", sport, dport, 8 + len(body), 0)
    ip = struct.pack("!BBHHHBBHII", 0x45, 2, 20 + len(l4) + len(body), 0, 0, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum16(ip)) + ip[12:]
    return bytes.fromhex("020000000001020000000002" "0800") + ip + l4 + body


@dataclass
class Workload:
    name: str
    frames: list[bytes]  # per flow
    flow_of: np.ndarray  # flow index of packet i (sent at time i us)


def make_workload(name: str, packets: int, burst: int, seed: int) -> Workload:
    rng = random.Random(seed)
    if name == "large":
        n_flows = 4
        idx = np.arange(packets)
        flow_of = (idx // burst) % n_flows
    elif name == "small":
        n_flows = 1000
        flow_of = np.repeat(np.arange(n_flows), -(-packets // n_flows))[:packets]
        np.random.default_rng(seed).shuffle(flow_of)
    else:
        raise ValueError(name)
    frames = [udp_frame(0x0A010000 | rng.randrange(1, 65535), DST_PREFIX | rng.randrange(1, 65535),
                        rng.randrange(49152, 65536), 4791) for _ in range(n_flows)]
    return Workload(name, frames, flow_of.astype(np.int64))


# ---- the switch ------------------------------------------------------------------------------
def member_slots(weights: list[int]) -> list[int]:
    """Weighted ECMP as the registry installs it: member k under weights[k] indexes."""
    return Ecmp().member_slots(weights)


def wam_balls(weights: list[int], m: int) -> list[int]:
    """m = 2^l balls by weight (largest remainder), as the registry's WhackAMole splits them."""
    return WhackAMole(log2_m=m.bit_length() - 1).balls(weights)


def make_scheme(scheme: str, args: argparse.Namespace) -> Scheme:
    """The registry's scheme with this run's parameters (fixed seeds: one switch)."""
    params: dict[str, dict[str, int]] = {
        "ecmp": {"seed": args.hash_seed},
        "flowlet": {"seed": args.hash_seed, "timeout_us": args.flowlet_timeout_us},
        "wam": {"log2_m": args.log2_m, "a": 0x1234, "b": 0x0A5B},
    }
    return scheme_from_name(scheme, **params.get(scheme, {}))


def build_switch(program, scheme: str, weights: list[int], args: argparse.Namespace) -> Pipeline:
    p = Pipeline(program, cpu_port=255, seed=args.seed)
    p.table_add("MyIngress.ipv4_lpm", TableEntry(
        match={"hdr.ipv4.dstAddr": LpmMatch(DST_PREFIX, 16)},
        action="MyIngress.set_lb_group", params={"group_id": GROUP, "dst_id": 7}))
    n = len(weights)
    group = GroupContext(GROUP, tuple(PORT0 + k for k in range(n)),
                         tuple(0x020000000100 + k for k in range(n)),
                         tuple(float(w) for w in weights))
    install_on_pipeline(p, make_scheme(scheme, args).entries(group))
    return p


def run(p: Pipeline, wl: Workload, n: int, advance: Callable[[int], None]) -> tuple[np.ndarray,
                                                                                     float]:
    """Member index per packet, and the pipeline's packets/s."""
    members = np.empty(len(wl.flow_of), dtype=np.int64)
    frames = wl.frames
    flows = wl.flow_of.tolist()
    t0 = 1_000_000
    elapsed = 0.0
    step = 2000
    for start in range(0, len(flows), step):
        tick = time.perf_counter()
        for i in range(start, min(start + step, len(flows))):
            outs = p.process(frames[flows[i]], IN_PORT, t0 + i).outputs
            members[i] = outs[0].port - PORT0 if outs else -1
        elapsed += time.perf_counter() - tick
        advance(min(step, len(flows) - start))
    if (members < 0).any() or (members >= n).any():
        raise RuntimeError(f"{int((members < 0).sum())} packets dropped or mis-forwarded")
    return members, len(flows) / elapsed


# ---- metrics ---------------------------------------------------------------------------------
def max_window_deviation(members: np.ndarray, shares: list[float], max_window: int) -> float:
    """max over members k, lengths w in 1..max_window, all starts: |count_k - w * share_k|."""
    prefix = np.zeros((len(shares), len(members) + 1), dtype=np.int64)
    for k in range(len(shares)):
        np.cumsum(members == k, out=prefix[k, 1:])
    share = np.asarray(shares)[:, None]
    worst = 0.0
    for w in range(1, min(max_window, len(members)) + 1):
        counts = prefix[:, w:] - prefix[:, :-w]
        worst = max(worst, float(np.abs(counts - w * share).max()))
    return worst


def reordered(members: np.ndarray, flow_of: np.ndarray, latencies: list[float]) -> int:
    """Packets that arrive after a later-sent packet of their flow (send time i us, arrival
    i + latency of the member's FIFO)."""
    arrival = np.arange(len(members), dtype=np.float64) + np.asarray(latencies)[members]
    order = np.lexsort((np.arange(len(members)), flow_of))  # by flow, then send order
    arr, fl = arrival[order], flow_of[order]
    count = 0
    bounds = np.flatnonzero(np.diff(fl)) + 1
    for seg in np.split(arr, bounds):
        if len(seg) < 2:
            continue
        later_min = np.minimum.accumulate(seg[::-1])[::-1]  # min arrival of packets sent >= i
        count += int((seg[:-1] > later_min[1:]).sum())
    return count


# ---- main ------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=100_000)
    ap.add_argument("--members", type=int, default=4)
    ap.add_argument("--weights", default="",
                    help="integer member weights, comma-separated (default all 1); WaM splits "
                         "m balls by weight, the other schemes install member k under "
                         "weights[k] indexes (weighted ECMP)")
    ap.add_argument("--schemes", default=",".join(SCHEMES),
                    help=f"comma-separated subset of {','.join(SCHEMES)}")
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help=f"comma-separated subset of {','.join(WORKLOADS)}")
    ap.add_argument("--log2-m", type=int, default=8, help="Whack-a-Mole l (m = 2^l balls)")
    ap.add_argument("--max-window", type=int, default=0,
                    help="longest sliding window checked (default 4m)")
    ap.add_argument("--burst", type=int, default=64, help="large-flow burst length (packets)")
    ap.add_argument("--flowlet-timeout-us", type=int, default=100)
    ap.add_argument("--hash-seed", type=int, default=0, help="ECMP/flowlet seed (seed[1:0] "
                    "picks the hash variant)")
    ap.add_argument("--latencies", default="",
                    help="per-member FIFO latency in us, comma-separated (default 5,10,15,...)")
    ap.add_argument("--seed", type=int, default=1, help="workload and random() seed")
    args = ap.parse_args(argv)
    args.schemes = [s for s in args.schemes.split(",") if s]
    args.workloads = [w for w in args.workloads.split(",") if w]
    for s in args.schemes:
        if s not in SCHEMES:
            ap.error(f"unknown scheme {s!r} (choose from {', '.join(SCHEMES)})")
    for w in args.workloads:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w!r} (choose from {', '.join(WORKLOADS)})")
    if args.weights:
        try:
            args.weights = [int(x) for x in args.weights.split(",")]
        except ValueError:
            ap.error("--weights: comma-separated integers")
        if len(args.weights) != args.members or min(args.weights) < 0 or sum(
                args.weights) == 0:
            ap.error("--weights needs one non-negative integer per member, not all 0")
    else:
        args.weights = [1] * args.members
    if not 1 <= args.members <= 64 or sum(args.weights) > 64:
        ap.error("--members must be in 1..64 (and the weights sum at most 64)")
    if not 0 <= args.log2_m <= 16 or (1 << args.log2_m) < args.members:
        ap.error("--log2-m must be in 0..16 with 2^l >= --members")
    if args.packets < 1 or args.burst < 1:
        ap.error("--packets and --burst must be positive")
    if args.latencies:
        try:
            args.latencies = [float(x) for x in args.latencies.split(",")]
        except ValueError:
            ap.error("--latencies: comma-separated numbers")
        if len(args.latencies) != args.members:
            ap.error("--latencies needs one value per member")
    else:
        args.latencies = [5.0 * (k + 1) for k in range(args.members)]
    args.max_window = args.max_window or 4 << args.log2_m
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console(width=max(100, Console().width))
    program = compile_file(str(FABRIC_P4))
    n = args.members
    shares = [w / sum(args.weights) for w in args.weights]
    workloads = {w: make_workload(w, args.packets, args.burst, args.seed) for w in args.workloads}
    rows = []
    total = len(args.schemes) * len(workloads) * args.packets
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("fabric.p4 on p4switch", total=total)
        for scheme in args.schemes:
            for wl in workloads.values():
                progress.update(task, description=f"{scheme} / {wl.name}")
                p = build_switch(program, scheme, args.weights, args)
                members, pps = run(p, wl, n, lambda k: progress.advance(task, k))
                load = np.bincount(members, minlength=n) / args.packets
                weighted = np.asarray(shares) > 0
                if (load[~weighted] > 0).any():  # packets to a zero-weight member
                    ratio = float("inf")
                else:
                    ratio = float((load[weighted] / np.asarray(shares)[weighted]).max())
                rows.append((scheme, wl.name, ratio,
                             max_window_deviation(members, shares, args.max_window),
                             reordered(members, wl.flow_of, args.latencies), pps))
    m = 1 << args.log2_m
    table = Table(title=f"fabric.p4 load-balancing quality on p4switch: {args.packets} packets, "
                        f"{n} members, weights {':'.join(map(str, args.weights))}")
    for col in ("scheme", "workload", "max load/share", f"max window dev (w<={args.max_window})",
                "reordered", "pkt/s"):
        table.add_column(col, justify="left" if col in ("scheme", "workload") else "right")
    for scheme, wl, mm, dev, reo, pps in rows:
        table.add_row(scheme, wl, f"{mm:.3f}", f"{dev:.2f}",
                      f"{reo} ({100 * reo / args.packets:.2f}%)", f"{pps:,.0f}")
    console.print(table)
    console.print(
        f"large = 4 flows in turns of {args.burst}-packet bursts; small = 1000 flows, random "
        f"interleaving; 1 packet/us.\n"
        f"max load/share: max over members of packets / weighted share.\n"
        f"window dev: packets off the share over every window of 1..{args.max_window} "
        f"consecutive packets (Whack-a-Mole bound log2 m = {args.log2_m}, m = {m}).\n"
        f"reordered: packets arriving after a later-sent packet of the same flow, member k "
        f"being a FIFO with fixed latency {','.join(f'{x:g}' for x in args.latencies)} us.\n"
        f"ECMP/flowlet seed {args.hash_seed} (variant {args.hash_seed & 3}), flowlet timeout "
        f"{args.flowlet_timeout_us} us.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
