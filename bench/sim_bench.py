"""Simulator speed: packet-hops per second for fat-trees k = 4, 8, 16, one scheme.

Each size runs an AllToAll sized so that every (source, destination) pair sends ``--pkts``
packets over 400 Gb/s links, among every host or ``--ranks`` of them spread evenly over the
fabric (the whole fabric is still built and programmed). Printed per size: switches, build CPU
time (one code generation per program, a Pipeline.new_instance per switch, the controller's
entries installed; the wall seconds of the pipelines and the entries too), virtual CCT,
packet-hops, wall seconds, hops/s, the share of wall time spent inside the pipeline (ingress,
egress, process_fast calls, timed around each call — the timer costs ~2 x 0.1 µs a call and is
counted in the pipeline share) vs everything else (event loop, queues, links, hosts'
transport), the fast-path share, and — in the same run — the pipeline alone: ``process_fast``
packets/s on the first 20,000 frames edge1 received, replayed into a fresh, identically
programmed pipeline, and the simulator's hops/s as a ratio of it; and the same frames through
ingress + egress, general vs fused halves (``halves_alone``: the slow path's per-packet cost
without the simulator around it, all three interleaved, so load hits them alike). Rates are given per CPU
second of this process (``time.process_time``) and per wall second: on a shared machine the
wall figure measures the neighbours, the CPU figure the simulator. With k=16 in the run, a last
line says whether the issue's target (10^7 packet-hops in 10 minutes: 16,667 hops/s) would be
met at the k=16 rate measured (an extrapolation; bench/sim_target.py makes the real run: 1,024
hosts, >= 10^7 hops, wall time from nothing to results).

fabric.p4 runs as the simulator runs it by default, compiled to C (``--pipeline native``,
p4switch.native); ``--pipeline python`` runs the pipeline's generated Python, ``both`` runs each
size with both and prints the ratio and whether the results are identical.

The fused run goes as the simulator goes by default, on the C core (``--core c``, sim.core: the
event loop, wires, queues and switch hop in C around the native pipeline; the pipeline's share
and the pipeline-alone figures are then not measured, n/a); ``--core python`` runs them in
Python, ``both`` runs each size with both and prints the ratio and whether the results agree.

Each size runs twice by default (``--halves both``): the slow path — a packet meeting a busy
queue or wire — through the Python pipeline's general ``Pipeline.ingress``/``egress``, then through the fused
halves (``ingress_lean``/``egress_lean``, the fused halves without result objects); a line gives
the ratio. Results are identical. Each line ends with the process's peak resident memory so far
(``max_rss``: the largest fabric run so far).

Run: .venv/bin/python bench/sim_bench.py [--k 4 8 16] [--scheme ecmp] [--ranks 64] [--pkts 8]
[--halves both|fused|general] [--pipeline python|native|both] [--core c|python|both] [--quick] (the defaults: what docs/results/simulator.md reports, and what ``make bench`` runs; ``--quick``:
k = 4 and 8, 16 ranks, 4 packets per pair, seconds). ``--ranks 0`` is every host: at k=16 that
is 1,024 ranks and ~1M flows, hours of CPU here.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.pipeline_target import install_on_pipeline  # noqa: E402
from model.schemes import DEFAULT_SCHEME, SCHEMES  # noqa: E402
from model.spec import fat_tree  # noqa: E402
from p4switch import (
    Pipeline,  # noqa: E402
    QueueingMetadata,  # noqa: E402
)
from sim.network import CPU_PORT, DROP_PORT, SimConfig, SimNetwork, fabric_program  # noqa: E402
from sim.switch import choose_pipeline  # noqa: E402
from traffic.schedules import alltoall  # noqa: E402

SAMPLE = 20_000


class Timed:
    """Wraps a pipeline's packet methods and adds their wall time to a shared total."""

    total = 0.0

    def __init__(self, pipe: Pipeline, sample: list | None = None) -> None:
        self.pipe = pipe
        self.sample = sample
        for name in ("ingress", "egress", "process_fast", "ingress_fast", "egress_fast",
                     "ingress_lean", "egress_lean"):
            setattr(self, name, self._wrap(getattr(pipe, name), name))

    def _wrap(self, fn, name: str):  # noqa: ANN001, ANN202
        clock = time.perf_counter
        sample = self.sample

        def timed(*args):  # noqa: ANN002, ANN202
            if sample is not None and "egress" not in name and len(sample) < SAMPLE:
                sample.append(args)
            t = clock()
            try:
                return fn(*args)
            finally:
                Timed.total += clock() - t
        return timed

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.pipe, name)


def pipeline_alone(net: SimNetwork, sample: list, pipeline: str = "python"
                   ) -> tuple[float, float, float]:
    """Per CPU second over ``sample`` on a fresh pipeline with edge1's entries: packets through
    ``process_fast``; through ``ingress`` + ``egress`` (the general halves); through
    ``ingress_fast`` + ``egress_fast`` (the fused halves). Best of 3, the three interleaved."""
    pipe = Pipeline(fabric_program(), drop_port=DROP_PORT, cpu_port=CPU_PORT, seed=1)
    install_on_pipeline(pipe, net.entries["edge1"])
    pipe = choose_pipeline(pipe, pipeline)
    fast = pipe.process_fast

    def halves(ing, eg) -> None:  # noqa: ANN001
        for data, port, now in sample:
            for job in ing(data, port, now).jobs:
                eg(job, now, QueueingMetadata(now))

    runs = (lambda: [fast(d, p, t) for d, p, t in sample],
            lambda: halves(pipe.ingress, pipe.egress),
            lambda: halves(pipe.ingress_fast, pipe.egress_fast))
    best = [0.0, 0.0, 0.0]
    for _ in range(3):
        for i, fn in enumerate(runs):
            t = time.process_time()
            fn()
            best[i] = max(best[i], len(sample) / max(1e-9, time.process_time() - t))
    return best[0], best[1], best[2]


def alone_text(hops_per_cpu: float, alone: float, general: float, fused: float) -> str:
    """The pipeline-alone figures, or n/a where they were not measured (the C core)."""
    if not alone:
        return "process_fast_alone= n/a halves_alone= n/a"
    return (f"process_fast_alone={alone:7.0f}/cpu-s ratio={hops_per_cpu / alone:.2f} "
            f"halves_alone: general={general:6.0f} fused={fused:6.0f}/cpu-s "
            f"({fused / general if general else 0:.2f}x)")


def run(k: int, scheme: str, pkts: int, rate_bps: float, ranks: int | None,
        halves: bool = True, pipeline: str = "native", core: str = "python"
        ) -> tuple[float, tuple]:
    """One size; returns packet-hops per CPU second. ``halves``: the slow path (queue or wire
    busy) through the fused ingress/egress halves, else through the general ones. ``core``
    "c": the C core runs the hop (sim.core): the pipeline is called from C, so its share and
    the pipeline-alone figures are not measured (printed as n/a). Also returns what the run's
    results must agree on either way (CCT, hops, fast-path hops, drops)."""
    spec = fat_tree(k, bw_mbps=rate_bps / 1e6)
    hosts = list(spec.hosts)
    n = min(ranks or len(hosts), len(hosts))
    stride = len(hosts) // n
    c0 = time.process_time()
    net = SimNetwork(spec, scheme, SimConfig(pipeline=pipeline, core=core))
    build_cpu = time.process_time() - c0
    sample: list = []
    timed = core != "c" or pipeline != "native"
    for name, sw in net.switches.items():
        if timed:  # a wrapped pipeline keeps a run off the C core
            sw.pipe = Timed(sw.pipe, sample if name == "edge1" else None)
        sw.fused_halves = halves
    sched = alltoall(n, n * pkts * 1400)
    sched.placement = [hosts[i * stride] for i in range(n)]
    Timed.total = 0.0
    c0 = time.process_time()
    res = net.run(sched, until_us=60e6)
    cpu = time.process_time() - c0
    pipe_s = Timed.total
    alone, gen_halves, fused_halves = (pipeline_alone(net, sample, pipeline) if sample
                                       else (0.0, 0.0, 0.0))
    share = (f"pipeline={pipe_s / res.wall_s:4.0%} other={1 - pipe_s / res.wall_s:4.0%}"
             if timed else "pipeline= n/a other= n/a")
    ran = type(net.loop).__name__
    print(f"k={k:2d} {scheme:7s} {pipeline:6s} loop={ran:9s} "
          f"halves={'fused' if halves else 'general':7s} "
          f"switches={len(net.switches):3d} ranks={n:4d} "
          f"build={build_cpu:5.2f}cpu-s (pipelines {net.build_s:5.2f}s, entries "
          f"{net.install_s:5.2f}s wall) ok={res.ok} "
          f"cct={res.cct_s * 1e6 if res.cct_s else 0:9.1f}us "
          f"hops={res.packet_hops:9d} cpu={cpu:7.1f}s hops/cpu-s={res.packet_hops / cpu:7.0f} "
          f"wall={res.wall_s:7.1f}s hops/s={res.hops_per_s:7.0f} "
          f"{share} "
          f"fast={res.fast_hops / max(1, res.packet_hops):4.0%} "
          f"{alone_text(res.packet_hops / cpu, alone, gen_halves, fused_halves)} "
          f"max_rss={max_rss_mb():.0f}MB",
          flush=True)
    tail = sum(sw.tail_drops() for sw in net.switches.values())
    drops = sum(sw.pipeline_drops for sw in net.switches.values())
    return res.packet_hops / cpu, (res.cct_s, res.packet_hops, res.fast_hops, tail, drops)


TARGET_HOPS, TARGET_S = 10**7, 600.0


def max_rss_mb() -> float:
    """This process's peak resident memory so far (MB): the largest size run so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--scheme", default=DEFAULT_SCHEME, choices=sorted(SCHEMES))
    ap.add_argument("--pkts", type=int, default=8, help="packets per (src, dst) pair")
    ap.add_argument("--rate", type=float, default=400e9, help="link rate, bits/s")
    ap.add_argument("--ranks", type=int, default=64,
                    help="AllToAll among this many hosts spread over the fabric (0: all)")
    ap.add_argument("--halves", default="both", choices=("both", "fused", "general"),
                    help="the slow path's ingress/egress: the fused halves, the general ones, "
                         "or both, one after the other (default)")
    ap.add_argument("--pipeline", default="native", choices=("python", "native", "both"),
                    help="what runs fabric.p4 per hop: the program compiled to C "
                         "(p4switch.native, the simulator's default; the general halves of "
                         "--halves both/general are the Python pipeline's), the pipeline's "
                         "Python, or both one after the other (a line gives the ratio and "
                         "compares the results)")
    ap.add_argument("--core", default="c", choices=("c", "python", "both"),
                    help="what runs the event loop, wires, queues and switch hop of the fused "
                         "run: the C core (sim.core, the simulator's default; with --pipeline "
                         "native), the Python path, or both one after the other (a line gives "
                         "the ratio and compares the results)")
    ap.add_argument("--quick", action="store_true",
                    help="a cheap look: k = 4 and 8 only, 16 ranks, 4 packets per pair")
    args = ap.parse_args(argv)
    if args.quick:
        args.k, args.ranks, args.pkts = [4, 8], 16, 4
    if args.ranks < 0 or args.ranks == 1 or args.pkts < 1:
        ap.error("--ranks must be 0 or >= 2 and --pkts >= 1")
    for k in args.k:
        if k < 2 or k % 2 or k > 16:
            ap.error(f"--k {k}: a fat-tree k must be even and in 2..16")
    rates = {}
    for k in args.k:
        variants: list[tuple[str, str]] = []   # (pipeline, core): one run, one part swapped
        if args.core == "both":
            label = "C core / Python path"
            variants = [(args.pipeline, "python"), (args.pipeline, "c")]
        elif args.pipeline == "both":
            label = "native / python pipeline"
            variants = [("python", "python"), ("native", "python")]
        if variants:
            got = [run(k, args.scheme, args.pkts, args.rate, args.ranks or None,
                       pipeline=p, core=c) for p, c in variants]
            rates[k] = got[-1][0]
            same = got[1][1] == got[0][1]
            print(f"k={k:2d} {label}: {got[1][0] / got[0][0]:.2f}x hops per CPU second; "
                  f"results (cct, hops, fast hops, tail drops, pipeline drops) "
                  f"{'identical' if same else f'DIFFER: {got[0][1]} vs {got[1][1]}'}",
                  flush=True)
            continue
        old = None
        if args.halves in ("both", "general"):  # the general halves: the Python pipeline's
            old = run(k, args.scheme, args.pkts, args.rate, args.ranks or None, halves=False,
                      pipeline="python")
            rates[k] = old[0]
        if args.halves in ("both", "fused"):
            new = run(k, args.scheme, args.pkts, args.rate, args.ranks or None,
                      pipeline=args.pipeline, core=args.core)
            rates[k] = new[0]
            if old:
                print(f"k={k:2d} {args.pipeline} fused halves / general halves: "
                      f"{new[0] / old[0]:.2f}x hops per "
                      f"CPU second; results (cct, hops, fast hops, tail drops, pipeline drops) "
                      f"{'identical' if new[1] == old[1] else f'DIFFER: {old[1]} vs {new[1]}'}",
                      flush=True)
    if 16 in rates:
        need = TARGET_HOPS / TARGET_S
        print(f"target (issue 10): {TARGET_HOPS:.0e} packet-hops in {TARGET_S / 60:.0f} min "
              f"= {need:,.0f} hops/s; k=16 here: {rates[16]:,.0f} hops per CPU second -> "
              f"{TARGET_HOPS / rates[16] / 60:.1f} CPU min for 1e7 hops: "
              f"{'met' if rates[16] >= need else 'NOT met'} (one process, CPU time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
