"""`python -m experiments.run CONFIG`: run an experiment file, show progress, print the table.

    sudo .venv/bin/python -m experiments.run experiments/configs/demo.yaml
    python -m experiments.run experiments/configs/demo.yaml --backend sim   # no root needed

Results land in results/<experiment>/<timestamp>/ (raw CSV/JSON, the config, versions, plots,
report.md and report.html). Ctrl-C stops the run, tears the fabric down and keeps what was
measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from topo.owner import give_back

from . import config as config_mod
from . import stats
from .config import ConfigError, ExperimentConfig
from .eta import adaptive_text
from .runner import Eta, check_root, results_root, run_experiment, simulated_means
from .runner import Progress as Hooks
from .runs import RunRow


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", type=Path, help="experiment YAML file (experiments/configs/)")
    p.add_argument("--out", type=Path, default=Path("results"), help="results root")
    p.add_argument("--backend", choices=config_mod.BACKENDS, help="override the file's backend")
    p.add_argument("--target", help="override the file's switch target (p4switch, bmv2, "
                   "ebpf; auto: ebpf where this machine can load it, else p4switch)")
    p.add_argument("--schemes", help="run only these schemes (comma-separated names)")
    p.add_argument("--workloads", help="run only these workloads (comma-separated names)")
    p.add_argument("--repetitions", type=int, help="override the file's repetitions")
    p.add_argument("--cc", help="override the transport block's congestion control "
                   "(traffic.congestion: dctcp, dcqcn, nscc, none; its params are dropped)")
    p.add_argument("--no-report", action="store_true", help="skip plots and report")
    p.add_argument("--beside-sim", action="store_true",
                   help="also run the same file on the simulator (into DIR/sim) and put its "
                   "CCTs and ranking beside the emulated ones in the report")
    p.add_argument("--include-invalid", action="store_true",
                   help="keep runs the fidelity guard called invalid in the table and ranking")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--since", type=float, metavar="EPOCH",
                   help="count the wall budget (parameters.wall_budget_s) and the ETA from this "
                   "time.time() (make demo passes its own start, set-up included)")
    return p


def narrow(cfg: ExperimentConfig, a: argparse.Namespace, p: argparse.ArgumentParser) \
        -> ExperimentConfig:
    """Apply the command line's overrides; an unknown name is a one-line error."""
    changes: dict[str, Any] = {}
    if a.target:
        try:
            cfg = config_mod.with_target(
                cfg, config_mod.concrete_target(a.target, lambda m: print(m, file=sys.stderr)))
        except ValueError as e:
            p.error(str(e))
    if a.backend:
        changes["backend"] = a.backend
    if a.repetitions is not None:
        if a.repetitions < 1:
            p.error("--repetitions must be >= 1")
        changes["repetitions"] = a.repetitions
    if a.schemes:
        want = [s.strip() for s in a.schemes.split(",") if s.strip()]
        have = {s.name: s for s in cfg.schemes} | {s.label: s for s in cfg.schemes}
        bad = [s for s in want if s not in have]
        if bad:
            p.error(f"--schemes: {bad[0]!r} is not in {a.config} "
                    f"({', '.join(s.label for s in cfg.schemes)})")
        picked = {have[s].label: have[s] for s in want}   # SchemeConfig holds a dict: no hash
        changes["schemes"] = tuple(picked.values())
    if a.cc:
        from traffic.congestion import REGISTRY

        if a.cc not in REGISTRY:
            p.error(f"--cc: {a.cc!r} is not one of {', '.join(REGISTRY)}")
        changes["transport"] = dataclasses.replace(cfg.transport, cc=a.cc, params={})
    if a.workloads:
        want = [s.strip() for s in a.workloads.split(",") if s.strip()]
        named = {w.name: w for w in cfg.workloads}
        bad = [s for s in want if s not in named]
        if bad:
            p.error(f"--workloads: {bad[0]!r} is not in {a.config} ({', '.join(named)})")
        changes["workloads"] = tuple(named[s] for s in want)
    return dataclasses.replace(cfg, **changes) if changes else cfg


def format_time(seconds: float) -> str:
    """A CCT in the unit that reads best (µs for a 100 Gb/s fabric, ms or s for slow ones)."""
    if seconds < 10e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 10:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


SIM_RUN_S = 0.5
"""Wall seconds of one simulator run of the demo's size (measured on the demo: 0.15 s per MoE run,
0.7 s per ring run), for the ETA of ``--beside-sim``."""
REPORT_S = 10.0
"""Wall seconds of the report (tables, figures, HTML; 6 s measured for a few runs)."""


def tail_estimate_s(cfg: ExperimentConfig, beside_sim: bool, no_report: bool) -> float:
    """Wall seconds after the runner's last run: the simulator's side and the report."""
    sim = (SIM_RUN_S * len(cfg.schemes) * len(cfg.workloads) * cfg.repetitions
           if beside_sim else 0.0)
    return sim + (0.0 if no_report else REPORT_S)


def clock(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) of a duration."""
    m, sec = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def eta_text(eta: Eta, after_s: float = 0.0) -> str:
    """The progress line's estimate: elapsed, what the due runs (and simulator, report)
    still take, and with adaptive repetitions the most the budget lets them take."""
    rest = eta.remaining_s + after_s
    text = f"elapsed {clock(eta.elapsed_s)}, ETA {clock(rest)}"
    most = eta.at_most_s
    if eta.adaptive:
        text += (f" (+ adaptive repetitions, at most {clock(most + after_s)} in all: budget "
                 f"{clock(eta.budget_s or 0)})" if most is not None
                 else " + adaptive repetitions (no budget)")
    return text


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except PermissionError as e:   # e.g. results/ left to root by a run under sudo
        where = e.filename or "a file"
        print(f"experiments.run: cannot write {where}: permission denied (made by another "
              f"user? a run under sudo: sudo chown -R $USER {where}; or --out DIR)",
              file=sys.stderr)
        return 1


def _main(argv: list[str] | None = None) -> int:
    p = parser()
    a = p.parse_args(argv)
    try:
        cfg = config_mod.load(a.config)
    except ConfigError as e:
        p.error(str(e))
    cfg = narrow(cfg, a, p)
    why = check_root(cfg.backend)
    if why:
        print(f"experiments.run: {why}", file=sys.stderr)
        return 2
    console = Console()
    if console.width < 150:
        console = Console(width=150)   # the table's 15 columns, also when piped
    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=console, disable=a.quiet)
    task = bar.add_task(cfg.name, total=None)

    after_s = tail_estimate_s(cfg, False, a.no_report)   # --beside-sim: the simulator first

    def done(what: str, row: RunRow, eta: Eta) -> None:
        bar.advance(task)
        cct = format_time(row.cct) if row.cct is not None else "no CCT"
        state = "ok" if row.ok else "[red]INCOMPLETE[/red]"
        if not row.valid:
            state += f", [red]INVALID[/red]: {row.invalid_reason}"
        t = bar.tasks[0]
        bar.console.print(f"  [{t.completed:g}/{t.total or 0:g}] {what}: CCT {cct} ({state}, "
                          f"retx {row.retransmissions}, wall {row.wall_s} s)"
                          + (f"; {eta_text(eta, after_s)}" if eta.elapsed_s else ""))

    def tdf_known(tdf: float) -> None:
        if cfg.fabric is not None:
            bar.console.print(f"{cfg.name}: fabric {cfg.fabric.link_rate}b/s links, backend "
                              f"{cfg.backend} at TDF {tdf:g}; times below in fabric units")

    hooks = Hooks(total=lambda n: bar.update(task, total=n),
                  start=lambda what: bar.update(task, description=f"{cfg.name}: {what}"),
                  done=done, log=lambda line: bar.console.print(line, markup=False),
                  tdf=tdf_known)
    from .calibrate import CalibrationError
    with bar:
        root: Path | None = None
        reference = None
        if a.beside_sim and cfg.backend != "sim":
            # the simulator first: its CCTs are the reference the emulation's adaptive
            # repetitions tighten the emulated/simulated ratio against (runner.
            # _tighten_ratios). The emulation's repetitions, with its seeds (schedule, the
            # switches' random()): what a seed changes (random spraying's choices) is then
            # an interval on both sides, not a ranking by one draw. Its adaptive ones
            # only make its own means tight (stats.REFERENCE_TIGHT): a scheme that gives
            # the same CCT for every seed needs none, one that varies with the hosts'
            # start skew (parameters.sim_start_skew_s) gets more. 0.15-0.7 s per run.
            root = results_root(a.out, cfg.name)
            sim = dataclasses.replace(cfg, backend="sim", max_repetitions=max(
                stats.REFERENCE_MAX_REPETITIONS, cfg.repetitions))
            more = dataclasses.replace(
                hooks, done=lambda what, row, eta: done(f"sim: {what}", row, Eta(0.0, 0.0)),
                tdf=lambda tdf: None)
            reference = simulated_means(run_experiment(
                sim, progress=more, report=False, root=root / "sim",
                reference_tight=stats.REFERENCE_TIGHT))
            sim_runs = int(bar.tasks[0].completed)
            hooks = dataclasses.replace(   # one bar for both backends
                hooks, total=lambda n: bar.update(task, total=sim_runs + n))
        try:
            run = run_experiment(cfg, a.out, progress=hooks, report=False, since=a.since,
                                 root=root, reference=reference)
        except CalibrationError as e:
            bar.stop()
            print(f"experiments.run: {e}", file=sys.stderr)
            return 1
    from .report import (
        load_results,
        rich_table,
        summary_table,
        tdf_steps,
        tdf_text,
        verdicts,
        write_report,
    )
    if not a.no_report:
        write_report(run.root, a.include_invalid)
    give_back(run.root, upto=a.out)   # under sudo: the invoking user's, not root's
    table = summary_table(load_results(run.root), a.include_invalid)
    if not table.empty:
        console.print(rich_table(table, title=f"{cfg.name}: CCT per scheme"))
        for v in verdicts(table):
            console.print("  " + v.replace("**", ""))
    phases = run.meta.get("phases", {})
    console.print("phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in phases.items()))
    line = adaptive_text(run.adaptive)
    if line:
        console.print(line)
    if tdf_steps(run.meta):
        console.print(f"TDF stepped back, runs invalid at the calibrated rate: "
                      f"{tdf_text(run.meta)} (experiment.json step_back)", markup=False)
    if run.meta.get("interrupted"):
        console.print(f"[red]stopped early: {run.meta['interrupted']}[/red] "
                      f"(what was measured is in {run.root})")
    console.print(f"results: {run.root}" + ("" if a.no_report else
                                            f"  (report: {run.root / 'report.md'})"))
    ok = not run.meta.get("interrupted") and all(r.ok for r in run.runs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
