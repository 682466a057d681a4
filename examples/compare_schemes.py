"""Compare load-balancing schemes on one collective.

By default on the simulator (no root, about half a minute): a k=4 fat-tree of 100 Gb/s links
runs a ring AllReduce on 8 hosts under each scheme, through the experiment runner's public API
(``run_experiment``, then ``load_results`` and ``summary_table`` on what it wrote). With
``--emulated`` (root) the same fabric is brought up on Mininet by a ``FabricSession`` and each
scheme runs the same collective there, in fabric units, each CCT with the fidelity guard's
verdict.

    python examples/compare_schemes.py
    sudo .venv/bin/python examples/compare_schemes.py --emulated --tdf 100000
"""

from __future__ import annotations

import argparse
from pathlib import Path

SCHEMES = ["ecmp", "flowlet", "random", "wam"]
# rank i on HOSTS[i]: one rank per edge switch, in an order whose ring crosses the core
HOSTS = ["h7", "h13", "h3", "h11", "h15", "h1", "h9", "h5"]

# An experiment file as a dict, in the units of the fabric it models (docs/experiments.md).
EXPERIMENT = {
    "name": "compare_schemes",
    "fabric": {"link_rate": "100G", "prop_delay_us": 0.1, "queue_packets": 64},
    "topology": {"kind": "fattree", "k": 4},
    "schemes": SCHEMES,
    "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "256KB",
                   "hosts": HOSTS, "rto_ms": 0.02}],
    "transport": {"cc": "dctcp", "min_rto_us": 20, "max_rto_us": 200},
    "repetitions": 1,
    "parameters": {"seed": 1, "loops": ["wam"]},   # Whack-a-Mole's loop runs on both backends
}


def on_simulator(out: Path) -> None:
    from experiments import plots
    from experiments.config import from_dict
    from experiments.report import load_results, summary_table
    from experiments.runner import run_experiment

    cfg = from_dict({**EXPERIMENT, "backend": "sim"})
    run = run_experiment(cfg, out, report=False)       # raw tables into out/<name>/<time>/
    results = load_results(run.root)                   # ... read back as DataFrames
    table = summary_table(results)                     # mean CCT, CI, rank group per scheme
    for row in table.itertuples():
        print(f"{row.scheme:8s} CCT {row.mean * 1e6:7.1f} µs  rank {row.rank:.0f}  "
              f"{row.slowdown:.2f}x the ideal bound")
    fig = plots.cct_bars(table)                        # a matplotlib Figure ...
    print("figure:", *plots.save(fig, run.root / "cct"))   # ... saved only when asked


def on_emulated_fabric(tdf: float | str, out: Path) -> None:
    from topo.session import FabricSession

    # lock_timeout_s (wall): wait for another fabric on this machine to finish
    with FabricSession(k=4, link_rate="100G", prop_delay_us=0.1, tdf=tdf,
                       lock_timeout_s=600) as s:
        print("\n".join(s.describe()))
        for scheme in SCHEMES:
            s.set_scheme(scheme)                       # rewrites every group, no P4 reload
            r = s.collective("ring_allreduce", "256KB", hosts=HOSTS, rto_ms=0.02,
                             out_dir=out / scheme)
            print(f"{scheme:8s} {r.summary()}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--emulated", action="store_true", help="on Mininet (root)")
    ap.add_argument("--tdf", default="auto", help="--emulated: time dilation (default: the "
                    "calibrated one)")
    ap.add_argument("--out", type=Path, default=Path("results/examples"))
    a = ap.parse_args(argv)
    if a.emulated:
        on_emulated_fabric(a.tdf if a.tdf == "auto" else float(a.tdf), a.out)
    else:
        on_simulator(a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
