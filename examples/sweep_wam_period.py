"""Sweep a parameter on the simulator: how often Whack-a-Mole's control loop re-weights.

One agg-core link of a k=4 fat-tree (100 Gb/s) runs at a quarter of its rate, as a link with a
lane down would; an MoE-skewed AllToAll on all 16 hosts queues up behind it. Whack-a-Mole's
loop (the controller's own code, run by the simulator in virtual time) reads each group's
member queues every period and moves balls off the congested member. Each point of the sweep
is one experiment with another ``control_period_s``; the first has the loop off. No root;
about half a minute.

    python examples/sweep_wam_period.py
    python examples/sweep_wam_period.py --periods 10,40 --size 128KB
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from experiments.config import from_dict
    from experiments.loop_report import action_counts
    from experiments.report import load_results
    from experiments.runner import run_experiment

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--periods", default="5,10,20,50", help="control periods, fabric µs")
    ap.add_argument("--size", default="256KB", help="AllToAll size per rank")
    ap.add_argument("--out", type=Path, default=Path("results/examples"))
    a = ap.parse_args(argv)
    print(f"{'period':>8s} {'CCT µs':>8s} {'weight changes':>15s}")
    for period in [None, *(float(p) for p in a.periods.split(","))]:
        cfg = from_dict({
            "name": "sweep_wam_period", "backend": "sim",
            "fabric": {"link_rate": "100G", "prop_delay_us": 0.1, "queue_packets": 64},
            # one switch-switch link (drawn with seed 0) at 25 % of its rate
            "topology": {"kind": "fattree", "k": 4,
                         "degrade": {"links": 1, "fraction": 0.25, "seed": 0}},
            "schemes": ["wam"],
            "workloads": [{"name": "moe", "schedule": "moe_alltoall", "size": a.size,
                           "options": {"skew": "zipf", "alpha": 1.2}, "rto_ms": 0.02}],
            "transport": {"cc": "dctcp", "min_rto_us": 20, "max_rto_us": 200},
            "repetitions": 1,
            "parameters": {"seed": 1, "loops": ["wam"] if period else [],
                           "control_period_s": (period or 20) * 1e-6},
        })
        r = load_results(run_experiment(cfg, a.out, report=False).root)
        changes = int(action_counts(r.runs, r.events)["weight_changes"].sum())
        label = f"{period:g} µs" if period else "off"
        print(f"{label:>8s} {r.runs['cct'].iloc[0] * 1e6:8.1f} {changes:15d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
