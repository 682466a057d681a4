"""The simulator at scale: build and run a random permutation on a big fat tree (k=32 by default:
1,280 switches, 8,192 hosts), printing build time, peak memory of every process and hop rates.

The workload and settings are bench/vs_htsim.py's permutation (every host sends ``--size`` to
another, a derangement drawn with ``--seed``; 100 Gb/s, 1 µs links, 64-packet queues, NSCC with
htsim's 1.5-BDP initial window, 4,150-byte packets, random spraying), run split over
``--workers`` processes as ``python -m sim --workers`` does. Printed:

* build: the spec, the routes (``model.routing``), the pipelines and their entries, as CPU and
  wall seconds, and this process's resident memory once built;
* run: virtual end, flows finished, packet-hops, events, CPU seconds (this process and its
  parts), wall seconds, packet-hops per CPU second and per wall second;
* memory: the peak resident set (``ru_maxrss``) of this process (it built the fabric; split
  over ``--workers`` > 1 it simulates no part, sim.parallel) and of the largest part (forked
  after the build, so it starts with the fabric's pages, shared until written: ``ru_maxrss``
  counts them in full).

Run: .venv/bin/python bench/sim_scale.py [--k 32] [--size 2MB] [--workers 2] [--scheme random]
(``--k 16`` is the issue's 1,024-host case; a k=32 permutation of 2 MB flows is ~23 M packet-
hops: tens of CPU minutes here; ``--size 256KB`` is an eighth of it.)
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.schemes import SCHEMES  # noqa: E402
from model.spec import MAX_FAT_TREE_K, SpecError, fat_tree  # noqa: E402
from traffic.congestion import fabric_ecn_threshold  # noqa: E402
from traffic.schedules import parse_size  # noqa: E402
from traffic.schedules.cm import load_cm  # noqa: E402
from traffic.transport import WIRE_OVERHEAD  # noqa: E402

SPRAY = "random"
"""The case measured: random packet spraying, as bench/vs_htsim.py's ``spray`` variant (not the
project's default scheme)."""
RATE_BPS = 100e9
PROP_US = 1.0
QUEUE = 64


def rss_mb() -> float:
    """This process's resident memory now (MB)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def cpu_s() -> float:
    """CPU seconds of this process and of its waited-for children (the run's other parts)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=32, help="fat-tree k (default 32)")
    ap.add_argument("--size", default="2MB", help="bytes per flow (default 2MB)")
    ap.add_argument("--scheme", default=SPRAY, choices=sorted(SCHEMES))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--mtu", type=int, default=4150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--until-us", type=float, default=100_000.0)
    a = ap.parse_args(argv)
    try:
        size = parse_size(a.size)
    except ValueError as e:
        ap.error(str(e))
    if not 2 <= a.k <= MAX_FAT_TREE_K or a.k % 2:
        ap.error(f"--k must be even and in 2..{MAX_FAT_TREE_K}")
    if a.workers < 1:
        ap.error("--workers must be >= 1")

    from vs_htsim import init_cwnd_pkts, permutation

    from sim.host import SIM_TRANSPORT, HostConfig
    from sim.network import SimConfig, SimNetwork, fabric_program, pipeline_template

    pipeline_template(fabric_program())  # once per process: not the fabric's build
    base = rss_mb()
    c0, w0 = cpu_s(), time.perf_counter()
    try:
        spec = fat_tree(a.k, bw_mbps=RATE_BPS / 1e6)
    except SpecError as e:
        ap.error(str(e))
    spec_cpu = cpu_s() - c0
    params = {"init_cwnd": float(init_cwnd_pkts(a.mtu, a.k))}
    transport = dataclasses.replace(SIM_TRANSPORT.with_cc("nscc", params),
                                    mss=a.mtu - WIRE_OVERHEAD)
    ecn = fabric_ecn_threshold(spec, "nscc", RATE_BPS, PROP_US * 1e-6, a.mtu, QUEUE, params)
    cfg = SimConfig(prop_delay_us=PROP_US, queue_depth=QUEUE, seed=a.seed,
                    host=HostConfig(transport=transport), ecn_threshold=ecn,
                    workers=a.workers)
    net = SimNetwork(spec, a.scheme, cfg)
    build_cpu, build_wall = cpu_s() - c0, time.perf_counter() - w0
    built = rss_mb()
    print(f"k={a.k} {len(spec.switches)} switches {len(spec.hosts)} hosts "
          f"{sum(len(se.entries) for se in net.entries.switches.values())} entries: "
          f"build {build_cpu:.1f} CPU s ({build_wall:.1f} s wall; spec {spec_cpu:.1f}, "
          f"pipelines {net.build_s:.1f}, routes + entries {net.install_s:.1f} s wall); "
          f"resident {built:.0f} MB ({built - base:.0f} MB over the compiled program)",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="sim-scale-") as tmp:
        cm = Path(tmp) / "perm.cm"
        cm.write_text(permutation(len(spec.hosts), size, a.seed))
        sched = load_cm(str(cm), len(spec.hosts))
    c1, w1 = cpu_s(), time.perf_counter()
    res = net.run(sched, until_us=a.until_us)
    run_cpu, run_wall = cpu_s() - c1, time.perf_counter() - w1
    s = res.summary()
    print(f"run: {a.scheme} permutation of {a.size} flows, workers={a.workers}: ok={res.ok} "
          f"end={res.end_us:.1f} µs flows {s['flows'] - s['flows_unfinished']}/{s['flows']} "
          f"FCT tail {s['fct_tail_us']} µs; hops={res.packet_hops:,} events={res.events:,}; "
          f"{run_cpu:.1f} CPU s, {run_wall:.1f} s wall; "
          f"{res.packet_hops / run_cpu if run_cpu else 0:,.0f} hops per CPU s, "
          f"{res.packet_hops / run_wall if run_wall else 0:,.0f} hops per wall s", flush=True)
    print(f"memory: peak resident this process (built the fabric) "
          f"{peak_mb(resource.RUSAGE_SELF):.0f} MB, largest part "
          f"{peak_mb(resource.RUSAGE_CHILDREN):.0f} MB", flush=True)
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
