"""Wall time of an experiment (default: `make demo`'s) and of each of its phases.

Phases: fabric up (Mininet namespaces, veths, HTB, switch processes until each P4Runtime server
listens), install (controller: compile, connect, arbitrate, push pipeline, write every entry),
set_scheme (all scheme changes), traffic per (workload, scheme) (agents' start-up, start barrier,
the collective, linger; sampling runs alongside), teardown, report (metrics, figures, HTML).
Each figure is printed with its share of the total, so runs on differently loaded machines
compare by ratio.

    sudo .venv/bin/python bench/experiment_bench.py                 # runs the demo (~5 min)
    .venv/bin/python bench/experiment_bench.py --backend sim        # same experiment, simulated
    .venv/bin/python bench/experiment_bench.py --from results/demo/<timestamp>   # no new run

Without root and without --backend sim/--from it prints why and exits 0 (make bench runs on).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments import config as config_mod  # noqa: E402
from experiments.run import narrow  # noqa: E402
from experiments.runner import check_root, run_experiment  # noqa: E402


def phase_table(meta: dict, wall: float | None = None) -> Table:
    phases = dict(meta.get("phases", {}))
    total = phases.pop("total", None) or wall or sum(phases.values())
    report = phases.pop("report", None)
    t = Table(title=f"experiment {meta.get('config', {}).get('name', '?')} "
                    f"({meta.get('backend', '?')}): wall time per phase")
    t.add_column("phase")
    t.add_column("s", justify="right")
    t.add_column("share", justify="right")
    order = ["fabric_up", "install", "set_scheme"]
    keys = [k for k in order if k in phases] + [k for k in phases if k.startswith("traffic")] \
        + [k for k in phases if k not in order and not k.startswith("traffic")]
    for k in keys:
        t.add_row(k, f"{phases[k]:.1f}", f"{phases[k] / total:.0%}")
    traffic = sum(v for k, v in phases.items() if k.startswith("traffic"))
    t.add_row("[bold]traffic, all runs", f"{traffic:.1f}", f"{traffic / total:.0%}")
    t.add_row("[bold]total (runner)", f"{total:.1f}", "100%")
    if report is not None:
        t.add_row("report (after)", f"{report:.1f}", f"{report / total:.0%}")
    return t


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", type=Path, default=ROOT / "experiments/configs/demo.yaml")
    p.add_argument("--backend", choices=config_mod.BACKENDS)
    p.add_argument("--schemes")
    p.add_argument("--workloads")
    p.add_argument("--repetitions", type=int)
    p.add_argument("--out", type=Path, default=Path("/tmp/p4fabric-bench-results"))
    p.add_argument("--from", dest="from_dir", type=Path,
                   help="summarise a stored results directory instead of running")
    a = p.parse_args(argv)
    console = Console(width=100)
    if a.from_dir:
        meta = json.loads((a.from_dir / "experiment.json").read_text())
        console.print(phase_table(meta))
        return 0
    try:
        cfg = config_mod.load(a.config)
    except config_mod.ConfigError as e:
        p.error(str(e))
    cfg = narrow(cfg, argparse.Namespace(config=a.config, backend=a.backend, schemes=a.schemes,
                                         workloads=a.workloads, repetitions=a.repetitions), p)
    why = check_root(cfg.backend)
    if why:
        print(f"experiment_bench: skipped: {why}")
        return 0
    t0 = time.perf_counter()
    run = run_experiment(cfg, a.out)
    wall = time.perf_counter() - t0
    console.print(phase_table(run.meta, wall))
    console.print(f"end-to-end wall time {wall:.1f} s (incl. report), load average now "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; results {run.root}")
    if run.meta.get("interrupted"):
        console.print(f"[red]run stopped early: {run.meta['interrupted']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
