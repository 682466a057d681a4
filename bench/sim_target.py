"""Issue 10's speed target, run for real: a k=16 fat-tree (1,024 hosts) AllToAll of >= 10^7
packet-hops, per scheme, timed from nothing to results.

Every host sends ``--pkts`` packets to every other host over 400 Gb/s links (one packet each by
default: 1,047,552 flows, ~1.0 x 10^7 packet-hops with the ACKs). Each scheme runs in its own
process (``--jobs`` at a time; 1 by default, so one run has the machine to itself), which
builds the fabric (fabric.p4 compiled, 320 pipelines, the controller's entries), generates the
schedule, runs the simulation — split over ``--workers`` processes (sim.parallel; 2 by
default: the target is per scheme on 2 cores; results are the same for any number) — and
collects the per-flow results. Printed per scheme: the wall
seconds of each phase, the whole wall and CPU time, packet-hops, hops per wall second, CCT,
retransmissions, and whether the run met the target (>= 10^7 hops in <= 600 s wall).

``--algorithm scattered`` (the default) posts each rank's sends in the order r+1, r+2, ...
(MPICH's scattered AllToAll); ``direct`` posts them in the order 0, 1, ..., so every host's
first packets converge on one receiver at a time — a synchronised incast that tail-drops and
retransmits (more hops, mostly on the slow path).

Run: .venv/bin/python bench/sim_target.py [--schemes ecmp random ...] [--pkts 1]
[--algorithm scattered|direct] [--workers 2] [--jobs 1] [--k 16]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.schemes import SCHEMES  # noqa: E402  (the one registry of schemes)

TARGET_HOPS, TARGET_S = 10**7, 600.0


def one(scheme: str, k: int, pkts: int, algorithm: str, workers: int = 1) -> dict:
    """One whole run in this process; every phase timed."""
    w0, c0 = time.perf_counter(), time.process_time()
    from model.spec import fat_tree
    from sim.network import SimConfig, SimNetwork
    from traffic.schedules import alltoall

    spec = fat_tree(k, bw_mbps=400e3)
    net = SimNetwork(spec, scheme, SimConfig(rate_bps=400e9, workers=workers))
    w1 = time.perf_counter()
    n = len(spec.hosts)
    sched = alltoall(n, n * pkts * 1400, algorithm=algorithm)
    w2 = time.perf_counter()
    def progress(p) -> None:  # noqa: ANN001
        print(f"  {scheme}: {p.wall_s:5.0f} s  t={p.now_us:8.1f} µs  {p.packet_hops:>11,} hops  "
              f"{p.flows_done:>9,}/{p.flows_total:,} flows", file=sys.stderr, flush=True)

    res = net.run(sched, until_us=60e6, progress=progress, progress_every=1 << 22)
    w3 = time.perf_counter()
    s = res.summary()
    w4 = time.perf_counter()
    wall = w4 - w0
    return {
        "scheme": scheme, "k": k, "hosts": n, "workers": workers,
        "windows": net.split.windows if net.split else None, "flows": sum(1 for _ in sched.sends()),
        "ok": res.ok, "cct_us": res.cct_s * 1e6 if res.cct_s else None,
        "packet_hops": res.packet_hops, "fast_share": s["fast_share"],
        "retransmissions": s["retransmissions"], "tail_drops": s["tail_drops"],
        "build_s": w1 - w0, "schedule_s": w2 - w1, "run_s": res.wall_s,
        "collect_s": (w3 - w2 - res.wall_s) + (w4 - w3), "wall_s": wall,
        "cpu_s": time.process_time() - c0, "hops_per_s": res.packet_hops / wall,
        "met": res.ok and res.packet_hops >= TARGET_HOPS and wall <= TARGET_S,
    }


def _one(args: tuple[str, int, int, str, int]) -> dict:
    return one(*args)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schemes", nargs="+", default=list(SCHEMES), choices=sorted(SCHEMES))
    ap.add_argument("--k", type=int, default=16, help="fat-tree k (default 16: 1,024 hosts)")
    ap.add_argument("--pkts", type=int, default=1, help="packets per (src, dst) pair")
    ap.add_argument("--algorithm", default="scattered", choices=("scattered", "direct"))
    ap.add_argument("--workers", type=int, default=2,
                    help="processes each run is split over (default 2: this machine's cores)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="runs at a time (each with its --workers processes)")
    ap.add_argument("--json", help="also write the rows to this file")
    a = ap.parse_args(argv)
    if a.k < 2 or a.k % 2 or a.k > 16:
        ap.error(f"--k {a.k}: a fat-tree k must be even and in 2..16")
    if a.pkts < 1 or a.jobs < 1 or a.workers < 1:
        ap.error("--pkts, --workers and --jobs must be >= 1")
    work = [(s, a.k, a.pkts, a.algorithm, a.workers) for s in a.schemes]
    rows = []
    # a fresh process per run: no state (code caches, frozen GC generations) carries over;
    # not a multiprocessing.Pool, whose daemonic workers may not fork a split run's parts
    with ProcessPoolExecutor(a.jobs, mp_context=mp.get_context("spawn"),
                             max_tasks_per_child=1) as pool:
        for r in pool.map(_one, work):
            rows.append(r)
            print(f"k={r['k']} {r['scheme']:7s} {a.algorithm} hosts={r['hosts']} "
                  f"workers={r['workers']} "
                  f"flows={r['flows']:,} ok={r['ok']} cct={r['cct_us'] or 0:.1f}us "
                  f"hops={r['packet_hops']:,} fast={r['fast_share']:.0%} "
                  f"retx={r['retransmissions']:,} | build {r['build_s']:.1f}s, schedule "
                  f"{r['schedule_s']:.1f}s, run {r['run_s']:.1f}s, results "
                  f"{r['collect_s']:.1f}s = wall {r['wall_s']:.1f}s (cpu {r['cpu_s']:.1f}s) "
                  f"{r['hops_per_s']:,.0f} hops/s | target "
                  f"{'met' if r['met'] else 'NOT met'}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    met = sum(r["met"] for r in rows)
    print(f"target (issue 10): >= {TARGET_HOPS:.0e} packet-hops in <= {TARGET_S / 60:.0f} min "
          f"wall per scheme, {a.jobs} run(s) of {a.workers} process(es) at a time on this machine: met by {met} of "
          f"{len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
