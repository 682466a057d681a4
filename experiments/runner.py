"""Run an experiment: every workload under every scheme, ``repetitions`` times, on one fabric.

The fabric comes up once (bringing 20 switch processes up costs more than a run), the controller
switches the scheme between runs, and each run's raw data is written the moment it ends, so a
Ctrl-C, a SIGTERM or a failure part-way still tears the fabric down and leaves every finished
run on disk. Layout of ``results/<experiment>/<timestamp>/`` (docs/experiments.md):

    experiment.json   config as given, versions, phase timings, interrupted?
    config.yaml       the experiment file used
    ccts.csv flows.csv links.csv queues.csv counters.csv ideal.csv runs.csv events.csv
    runs/<workload>/<scheme>/rep<k>[/iter<i>]/   schedule, per-host agent logs and metrics
    report.md report.html table.csv plots/        (experiments.report, derived)
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, cast

import pandas as pd
import yaml

from model.dilation import dilate, knobs
from topo.owner import give_back
from traffic.metrics import RankMetrics

from . import metrics, stats
from .backends import BACKENDS, Backend, RunSamples
from .config import TDF_AUTO, ExperimentConfig, SchemeConfig, WorkloadConfig
from .eta import AdaptiveLog, RunPlan
from .lbbsp import rebalance, speed_factors
from .runs import RunRow, load_ranks, merge_ranks, verdict
from .stepback import Rerun, StepBack, StepBackLog, StepTaken, capacity_reason

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("numpy", "pandas", "matplotlib", "networkx", "scapy", "grpcio", "protobuf",
            "p4runtime", "rich", "PyYAML", "lark")
TABLES = ("ccts", "flows", "links", "queues", "counters", "ideal", "runs", "events")


class Interrupted(Exception):
    """SIGTERM (or SIGINT) arrived: stop after tearing down, keep what was measured."""


def versions() -> dict[str, Any]:
    """What produced the numbers: git revision (and whether the tree was dirty), Python,
    kernel, package versions."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    pkgs: dict[str, str | None] = {}
    for p in PACKAGES:
        try:
            pkgs[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pkgs[p] = None
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {"git": git("rev-parse", "--short=12", "HEAD") or None,
            "git_dirty_files": len(dirty.splitlines()) if dirty else 0,
            "python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "packages": pkgs}


# ---- raw tables --------------------------------------------------------------------------------
class Recorder:
    """Accumulates the raw tables and rewrites them after every run (a few MB at most)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tables: dict[str, list[pd.DataFrame]] = {t: [] for t in TABLES}

    def add(self, table: str, df: pd.DataFrame | list[dict[str, Any]], **tags: Any) -> None:
        df = pd.DataFrame(df) if isinstance(df, list) else df
        if df.empty:
            return
        df = df.copy()
        for i, (k, v) in enumerate(tags.items()):
            if k in df.columns:
                df[k] = v
            else:
                df.insert(i, k, v)
        self.tables[table].append(df)

    def flush(self) -> None:
        for name, frames in self.tables.items():
            if frames:
                pd.concat(frames, ignore_index=True).to_csv(self.root / f"{name}.csv",
                                                            index=False)


@dataclass
class Progress:
    """Callbacks the CLI hooks a rich progress bar into (the runner prints nothing itself).
    ``done`` gets each run's row and an :class:`Eta`; ``log`` calibration's lines; ``tdf``
    the time-dilation factor once it is known (after calibration, if one runs)."""

    total: Callable[[int], None] = lambda n: None
    start: Callable[[str], None] = lambda what: None
    done: Callable[[str, RunRow, Eta], None] = lambda what, row, eta: None
    log: Callable[[str], None] = lambda line: None
    tdf: Callable[[float], None] = lambda tdf: None


@dataclass(frozen=True)
class Eta:
    """Where the experiment stands after a run: seconds since the runner started, the
    estimate of the due runs left (experiments/eta.py) and the wall budget of adaptive
    repetitions, which may take up to what is left of it."""

    elapsed_s: float
    remaining_s: float
    budget_s: float | None = None
    adaptive: bool = False
    """The experiment may add repetitions (``max_repetitions`` above ``repetitions``)."""

    @property
    def at_most_s(self) -> float | None:
        """The longest the rest may take with adaptive repetitions (None: no budget)."""
        if not self.adaptive:
            return self.remaining_s
        if self.budget_s is None:
            return None
        return max(self.remaining_s, self.budget_s - self.elapsed_s)


@dataclass
class ExperimentRun:
    cfg: ExperimentConfig
    root: Path
    meta: dict[str, Any] = field(default_factory=dict)
    runs: list[RunRow] = field(default_factory=list)
    adaptive: AdaptiveLog | None = None
    """What the adaptive repetitions did (written into ``meta`` as experiment.json's)."""


def compute_times(ranks: list[RankMetrics], n: int) -> list[float]:
    """Each rank's compute seconds in a run (its steps' compute_start -> start)."""
    out = [0.0] * n
    for r in ranks:
        out[r.rank] = sum(max(0.0, s.start - s.compute_start) for s in r.steps)
    return out


def iteration_times(ranks: list[RankMetrics]) -> dict[int, float]:
    """Per collective: first compute start to last finish over ranks (a BSP iteration's wall
    time, compute included; CCT excludes the compute)."""
    lo: dict[int, float] = {}
    hi: dict[int, float] = {}
    for r in ranks:
        for s in r.steps:
            c = s.collective
            lo[c] = min(lo.get(c, s.compute_start), s.compute_start)
            hi[c] = max(hi.get(c, s.finish), s.finish)
    return {c: hi[c] - lo[c] for c in lo}


# ---- the experiment ----------------------------------------------------------------------------
def results_root(out_root: Path | str, name: str) -> Path:
    """A new ``out_root/<name>/<timestamp>`` (made; ``-1``, ``-2``... when taken)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    root = Path(out_root) / name / stamp
    n = 1
    while root.exists():
        root = Path(out_root) / name / f"{stamp}-{n}"
        n += 1
    root.mkdir(parents=True)
    return root


def simulated_means(run: ExperimentRun) -> dict[tuple[str, str], float]:
    """Mean CCT (s) per (workload, scheme label) over a run's valid, complete repetitions:
    the reference :func:`run_experiment` tightens the emulated/simulated ratio against."""
    cct: dict[tuple[str, str], list[float]] = {}
    for r in run.runs:
        if r.ok and r.valid and r.cct is not None:
            cct.setdefault((r.workload, r.scheme), []).append(r.cct)
    return {k: sum(v) / len(v) for k, v in cct.items()}


def run_experiment(cfg: ExperimentConfig, out_root: Path | str = "results",
                   progress: Progress | None = None, report: bool = True,
                   backend: Backend | None = None, root: Path | None = None,
                   since: float | None = None,
                   reference: Mapping[tuple[str, str], float] | None = None,
                   reference_tight: float | None = None) -> ExperimentRun:
    """Run every (workload, scheme, repetition) of ``cfg``; returns where the results are
    (``root`` if given, else a new ``out_root/<name>/<timestamp>``). ``since``: the wall-clock
    time (``time.time()``) the wall budget and the ETA count from (``make demo``: its own
    start, set-up included); default now. ``reference``: the simulator's mean CCT (fabric s)
    per (workload, scheme label) of the same file; the adaptive repetitions then also run
    a scheme whose emulated/simulated ratio has a wide interval (stats.ratio_wide).
    ``reference_tight``: this run is that reference (the simulator's side of --beside-sim):
    its adaptive repetitions, up to ``max_repetitions``, go to the schemes whose own mean's
    95 % interval is wider than this fraction of it, instead of to close calls."""
    progress = progress or Progress()
    top = root
    if root is None:
        root = results_root(out_root, cfg.name)
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.yaml").write_text(yaml.safe_dump(cfg.source, sort_keys=False))
    spec = cfg.spec()
    t_all = time.perf_counter()
    t_since = t_all - (max(0.0, time.time() - since) if since else 0.0)   # the budget's start
    be, calibrated = backend, False
    if backend is None and needs_calibration(cfg):
        # calibrate on the experiment's own fabric: it stays up for the runs (adopt below)
        from .calibrate import calibrated_tdf, ramp_backend
        be = ramp_backend(cfg)
        progress.start("calibration")
        try:
            tdf = calibrated_tdf(cfg, log=progress.log, backend=be)
        except BaseException:
            be.down()
            raise
        calibrated = True
    else:
        tdf = emulation_tdf(cfg)
    t_cal = time.perf_counter() - t_all
    progress.tdf(tdf)
    emu = dilate(cfg, tdf)   # what the backend runs: the fabric slowed down tdf times
    run = ExperimentRun(cfg, root, meta={
        "config": cfg.source, "backend": cfg.backend, "versions": versions(),
        "started": time.time(), "interrupted": None, "phases": {}, "tdf": tdf,
        "fabric": dataclasses.asdict(cfg.fabric) if cfg.fabric else None,
        "dilated": {k.path: [k.value, kd.value] for k, kd in zip(knobs(cfg), knobs(emu),
                                                                strict=True)
                    if k.dim is not None and k.value != kd.value}})
    rec = Recorder(root)
    if be is None:
        be = BACKENDS[cfg.backend](emu, emu.spec())
    be.tdf = tdf
    total = sum(len(cfg.schemes) * cfg.repetitions * (w.bsp.iterations if w.bsp else 1)
                for w in cfg.workloads)
    progress.total(total)
    phases: dict[str, float] = run.meta["phases"]
    if calibrated:
        phases["calibration"] = round(t_cal, 3)
    budget = cfg.parameters.wall_budget_s
    adaptive = run.adaptive = AdaptiveLog(cfg.max_repetitions, budget,
                                          before_runner_s=round(t_all - t_since, 3))
    if reference and (cfg.max_repetitions or 0) > cfg.repetitions:
        adaptive.ratio_tight = stats.RATIO_TIGHT
    adaptive.reference_tight = reference_tight
    run.meta["adaptive"] = adaptive.to_dict()
    old = _install_sigterm()
    try:
        _write_meta(run)
        priors: dict[str, float] = {}
        ideals: dict[str, float] = {}   # fabric seconds of one run, for the ETA's priors
        for w in cfg.workloads:
            hosts = cfg.hosts_of(w, spec)
            ideal = metrics.ideal_bounds(spec, w.schedule_for(len(hosts),
                                                              seed=cfg.parameters.seed),
                                         hosts, w.mss,
                                         BACKENDS[cfg.backend].prop_delay_s(cfg))
            rec.add("ideal", ideal, workload=w.name)
            ideals[w.name] = float(ideal["ideal_s"].sum()) if not ideal.empty else 0.0
            priors[w.name] = RunPlan.prior(ideals[w.name], tdf, cfg.parameters.start_margin_s) \
                * (w.bsp.iterations if w.bsp else 1)
        rec.flush()
        plan = RunPlan(priors, {w.name: len(cfg.schemes) * cfg.repetitions
                                * (w.bsp.iterations if w.bsp else 1) for w in cfg.workloads},
                       tail_s=be.timings.get("teardown", 3.0) if cfg.backend != "sim" else 0.0)
        reps = {w.name: dict.fromkeys((s.label for s in cfg.schemes), cfg.repetitions)
                for w in cfg.workloads}   # the next repetition index of each
        ctx = _Ctx(run, be, rec, spec, progress, plan, t_since, budget,
                   adaptive=(cfg.max_repetitions or 0) > cfg.repetitions, emu=emu, tdf=tdf,
                   total=total, reps=reps, policy=step_back_policy(cfg, be, tdf),
                   ideals=ideals)
        if ctx.policy is not None:
            ctx.log = StepBackLog(list(ctx.policy.ladder), ctx.policy.invalid,
                                  ctx.policy.window)
            run.meta["step_back"] = ctx.log.to_dict()
        progress.start(f"fabric up ({cfg.backend})")
        if calibrated:
            from .backends import MininetBackend
            assert isinstance(be, MininetBackend), "calibrate.ramp_backend makes one"
            be.adopt(emu, emu.schemes[0])
        else:
            be.up(emu.schemes[0])
        run.meta["prop_delay_emulated_us"] = getattr(be, "prop_delay_us", None)  # wall µs
        run.meta["prop_delay_placement"] = getattr(be, "prop_placement", None) \
            if cfg.backend != "sim" else ("hosts" if cfg.parameters.sim_prop_at_hosts
                                          else "links")
        priority = getattr(be, "priority", None)   # the Mininet backend's switch scheduling
        if priority:
            run.meta["switch_priority"] = priority
        # every workload's repetitions first, then the adaptive ones: the budget can then be
        # shared between workloads with every due run measured
        for wi in range(len(cfg.workloads)):
            for si in range(len(cfg.schemes)):
                for rep in range(cfg.repetitions):
                    _counted_run(ctx, wi, si, rep)
        labels = [s.label for s in cfg.schemes]
        open_ws = [wi for wi, w in enumerate(cfg.workloads) if not w.bsp]
        while open_ws:   # one round of close calls per workload in turn
            for wi in list(open_ws):
                w = cfg.workloads[wi]
                counted = {lb: n - ctx.reruns.get((w.name, lb), 0)   # re-runs replace runs
                           for lb, n in reps[w.name].items()}
                if reference_tight is not None:
                    more = _tighten_reference(run, cfg, w, counted, reference_tight, adaptive)
                else:
                    more = _settle_close_calls(run, cfg, w, counted, adaptive.beyond_cap)
                if adaptive.ratio_tight is not None and reference:
                    wide = _tighten_ratios(run, cfg, w, counted, reference, adaptive)
                    more += [lb for lb in wide if lb not in more]
                fit = plan.extra_runs_fitting(w.name, len(more),
                                              time.perf_counter() - t_since, budget)
                if fit < len(more):
                    adaptive.left_by_budget[w.name] = more[fit:]
                if fit == 0:
                    open_ws.remove(wi)
                    continue
                adaptive.left_by_budget.pop(w.name, None)
                ctx.total += fit
                progress.total(ctx.total)
                for label in more[:fit]:
                    rep = reps[w.name][label]
                    reps[w.name][label] += 1
                    _counted_run(ctx, wi, labels.index(label), rep)
                    added = adaptive.added.setdefault(w.name, {})
                    added[label] = added.get(label, 0) + 1
    except (KeyboardInterrupt, Interrupted) as e:
        run.meta["interrupted"] = f"interrupted ({type(e).__name__})"
    except Exception as e:  # noqa: BLE001 - keep what was measured, say why it stopped
        run.meta["interrupted"] = f"failed: {type(e).__name__}: {e}"
        (root / "error.txt").write_text(traceback.format_exc())
    finally:
        progress.start("teardown")
        try:
            be.down()
        except Exception as e:  # noqa: BLE001
            run.meta.setdefault("teardown_error", f"{type(e).__name__}: {e}")
        signal.signal(signal.SIGTERM, old)
        rec.flush()
        phases.update({k: round(v, 3) for k, v in be.timings.items()})
        phases["total"] = round(time.perf_counter() - t_all, 3)
        run.meta["finished"] = time.time()
        _write_meta(run)
    if report:
        from .report import write_report
        t0 = time.perf_counter()
        write_report(root)
        phases["report"] = round(time.perf_counter() - t0, 3)
        _write_meta(run)
    give_back(root, upto=Path(out_root) if top is None else None)   # sudo: the user's files
    return run


@dataclass
class _Ctx:
    """What every run of one experiment shares."""

    run: ExperimentRun
    be: Backend
    rec: Recorder
    spec: Any
    progress: Progress
    plan: RunPlan
    t_since: float
    """perf_counter() at the budget's start (``since``; else the runner's)."""
    budget: float | None
    adaptive: bool
    emu: ExperimentConfig
    """The experiment dilated by ``tdf``: what the backend runs now."""
    tdf: float
    total: int = 0
    """Runs announced to the progress bar."""
    reps: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per workload and scheme label: the next repetition index."""
    reruns: dict[tuple[str, str], int] = field(default_factory=dict)
    """Repetitions run again after a step back, per (workload, scheme label)."""
    policy: StepBack | None = None
    log: StepBackLog | None = None
    """What the policy did, experiment.json's ``step_back``."""
    scheme_i: int = 0
    """The index of the scheme the fabric runs."""
    ideals: dict[str, float] = field(default_factory=dict)
    """Per workload: one run's ideal bound (fabric s), the ETA's prior at a new TDF."""


def step_back_policy(cfg: ExperimentConfig, be: Backend, tdf: float) -> StepBack | None:
    """The step-back policy of an experiment whose TDF is calibration's (``tdf: auto``) on a
    backend that can change rates: along calibration's ramp. A TDF the file states is
    the rate asked for and is kept (its invalid runs are only reported)."""
    if cfg.parameters.tdf != TDF_AUTO or cfg.fabric is None or not be.retunable:
        return None
    from .calibrate import ramp_rates, ramp_tdfs
    return StepBack(ramp_tdfs(cfg.fabric.link_bps, ramp_rates(cfg.parameters.target)), tdf)


def _counted_run(ctx: _Ctx, wi: int, si: int, rep: int) -> None:
    """Repetition ``rep`` of workload ``wi`` under scheme ``si``, judged by the step-back
    policy: when it steps, the fabric takes the next slower rate of the ramp and the
    invalid repetitions of the policy's window run again there, each as a new repetition
    with the seeds of the one it replaces (``rerun_of``; that one stays on record as
    invalid)."""
    cfg = ctx.run.cfg
    todo: list[tuple[int, int, int, int | None]] = [(wi, si, rep, None)]
    while todo:
        wi, si, rep, of = todo.pop(0)
        if si != ctx.scheme_i:
            ctx.be.set_scheme(ctx.emu.schemes[si])
            ctx.scheme_i = si
        rows = _timed_run(ctx, cfg.workloads[wi], ctx.emu.workloads[wi], cfg.schemes[si], rep,
                          ctx.tdf, of)
        if ctx.policy is None:
            continue
        reason = next((r for r in (capacity_reason(x.valid, x.invalid_reason) for x in rows)
                       if r), None)
        stuck = ctx.policy.stuck
        step = ctx.policy.add((wi, si, rep), reason)
        if ctx.policy.stuck and not stuck:
            ctx.progress.log(f"runs invalid at TDF {ctx.tdf:g} ({ctx.policy.stuck}), the "
                             "slowest rate of calibration's ramp: not stepping back further")
            assert ctx.log is not None, "made with the policy"
            ctx.log.stuck = ctx.policy.stuck
            ctx.run.meta["step_back"] = ctx.log.to_dict()
        if step is None:
            continue
        ctx.tdf = step.to_tdf
        ctx.emu = dilate(cfg, ctx.tdf)
        ctx.be.adopt(ctx.emu, ctx.emu.schemes[ctx.scheme_i], ctx.tdf)
        for w in cfg.workloads:   # the runs so far took the faster rate's time: estimate anew
            ctx.plan.walls.pop(w.name, None)
            ctx.plan.prior_s[w.name] = RunPlan.prior(
                ctx.ideals.get(w.name, 0.0), ctx.tdf, cfg.parameters.start_margin_s) \
                * (w.bsp.iterations if w.bsp else 1)
        again = []
        for key in step.rerun:
            kw, ks, kr = cast(tuple[int, int, int], key)   # as added above
            w, label = cfg.workloads[kw], cfg.schemes[ks].label
            new = ctx.reps[w.name][label]
            ctx.reps[w.name][label] = new + 1
            ctx.reruns[(w.name, label)] = ctx.reruns.get((w.name, label), 0) + 1
            todo.append((kw, ks, new, kr))
            iters = w.bsp.iterations if w.bsp else 1
            ctx.plan.pending[w.name] = ctx.plan.pending.get(w.name, 0) + iters
            ctx.total += iters
            again.append(Rerun(w.name, label, kr, new))
        assert ctx.log is not None, "made with the policy"
        ctx.log.steps.append(StepTaken(len(ctx.run.runs), cfg.workloads[wi].name,
                                       cfg.schemes[si].label, rep, step.from_tdf, step.to_tdf,
                                       step.reason, tuple(again)))
        ctx.run.meta["step_back"] = ctx.log.to_dict()
        _write_meta(ctx.run)
        ctx.progress.total(ctx.total)
        ctx.progress.log(f"{len(again)} of the last {ctx.policy.window} repetitions invalid at "
                         f"TDF {step.from_tdf:g} ({step.reason}): stepping back to TDF "
                         f"{step.to_tdf:g} for the rest of the experiment and running them "
                         "again")
        from .calibrate import step_back_cache

        if step_back_cache(cfg, step.from_tdf, step.to_tdf, step.reason) is not None:
            ctx.progress.log(f"calibration cache: TDF {step.to_tdf:g} from now on on this "
                             "machine (sudo make calibrate measures again)")
        ctx.progress.tdf(ctx.tdf)


def _timed_run(ctx: _Ctx, w: WorkloadConfig, w_emu: WorkloadConfig, scheme: SchemeConfig,
               rep: int, tdf: float, rerun_of: int | None = None) -> list[RunRow]:
    """One repetition, its wall time in the phases and the plan, its tables on disk; its
    rows (one per BSP iteration)."""
    phases = ctx.run.meta["phases"]
    key = f"traffic {w.name} {scheme.label}"
    t0 = time.perf_counter()
    rows = _run_workload(ctx.run, ctx.be, ctx.rec, ctx.spec, w, scheme, rep, ctx.progress,
                         w_emu, tdf, ctx, rerun_of)
    ctx.rec.flush()
    phases[key] = phases.get(key, 0.0) + time.perf_counter() - t0
    return rows


def needs_calibration(cfg: ExperimentConfig) -> bool:
    """The experiment's TDF is ``auto`` on the Mininet backend and nothing is cached."""
    if cfg.backend == "sim" or cfg.fabric is None or cfg.parameters.tdf != TDF_AUTO:
        return False
    from .calibrate import cached
    return cached(cfg) is None


def _settle_close_calls(run: ExperimentRun, cfg: ExperimentConfig, w: WorkloadConfig,
                        reps: dict[str, int],
                        beyond_cap: dict[str, list[str]] | None = None) -> list[str]:
    """The schemes of workload ``w`` that need one more repetition: those in a close call of
    the grouping over their valid runs so far (experiments.stats.close_calls), below
    ``cfg.max_repetitions``; empty when the grouping is robust or the cap is reached. An
    unresolved overlap (stats.EQUIVALENCE) whose estimate asks for more than twice the cap is
    left alone: a few more runs would not settle it and would take the budget from calls they
    can settle (the estimate comes from few runs, hence the factor of two); this round's are
    noted in ``beyond_cap`` (workload -> ["a vs b (~N each)"]), so that the summary does not
    call the workload settled."""
    cap = cfg.max_repetitions or cfg.repetitions
    ivs = [(s.label, stats.t_interval(
        r.cct for r in run.runs if r.workload == w.name and r.scheme == s.label
        and r.ok and r.valid and r.cct is not None))
        for s in cfg.schemes]
    out: list[str] = []
    notes: list[str] = []
    if beyond_cap is not None:   # this round's: the last round decides what is left
        beyond_cap[w.name] = notes
    for c in stats.close_calls(ivs):
        if c.unresolved and c.repetitions is not None and c.repetitions > 2 * cap:
            notes.append(f"{c.a} vs {c.b} (~{c.repetitions} each)")
            continue
        for label in (c.a, c.b):
            if label not in out and reps[label] < cap:
                out.append(label)
    return out


def _tighten_ratios(run: ExperimentRun, cfg: ExperimentConfig, w: WorkloadConfig,
                    reps: dict[str, int], reference: Mapping[tuple[str, str], float],
                    log: AdaptiveLog) -> list[str]:
    """The schemes of workload ``w`` whose emulated/simulated CCT ratio has a 95 % interval
    wider than ``stats.RATIO_TIGHT`` over their valid runs so far, below the cap: one more
    repetition each. A run that retransmitted after a tail drop the simulator did not have
    moves one scheme's mean by ~10 % in three runs; more runs say whether it is the scheme
    or the one run, instead of a widened band. Records every scheme's ratio and the
    schemes still wide in ``log`` (what the cap or the budget leaves wide is reported)."""
    cap = cfg.max_repetitions or cfg.repetitions
    out: list[str] = []
    ratios = log.ratio.setdefault(w.name, {})
    wide: list[str] = []
    for s in cfg.schemes:
        ref = reference.get((w.name, s.label))
        if ref is None:
            continue
        iv = stats.t_interval(r.cct for r in run.runs if r.workload == w.name
                              and r.scheme == s.label and r.ok and r.valid
                              and r.cct is not None)
        if iv.n == 0:
            continue
        ratio = stats.ratio_interval(iv, ref)
        ratios[s.label] = (ratio.mean, ratio.half)
        if stats.ratio_wide(ratio):
            wide.append(s.label)
            if reps[s.label] < cap:
                out.append(s.label)
    log.ratio_wide[w.name] = wide
    return out


def _tighten_reference(run: ExperimentRun, cfg: ExperimentConfig, w: WorkloadConfig,
                       reps: dict[str, int], tight: float, log: AdaptiveLog) -> list[str]:
    """The schemes of workload ``w`` whose own mean CCT is not known yet, below the cap: one
    more repetition each. Known: the valid runs so far agree within stats.REFERENCE_SAME,
    or there are stats.REFERENCE_MIN_REPETITIONS of them and their mean's 95 % interval is
    within ``tight`` × that mean. On the simulator a scheme varies with the hosts' start
    skew (each repetition one draw, sim.network's ``start_skew_us``); as the emulation's
    reference its mean must be known as well as the ratio is asked to be, not be one or
    three draws. Records the schemes still wide in ``log``."""
    cap = cfg.max_repetitions or cfg.repetitions
    out: list[str] = []
    wide: list[str] = []
    for s in cfg.schemes:
        ccts = [r.cct for r in run.runs if r.workload == w.name and r.scheme == s.label
                and r.ok and r.valid and r.cct is not None]
        iv = stats.t_interval(ccts)
        if iv.n == 0 or (iv.n > 1 and (
                max(ccts) - min(ccts) <= stats.REFERENCE_SAME * iv.mean
                or (iv.n >= stats.REFERENCE_MIN_REPETITIONS and iv.half <= tight * iv.mean))):
            continue
        wide.append(s.label)
        if reps[s.label] < cap:
            out.append(s.label)
    log.reference_wide[w.name] = wide
    return out


def _write_meta(run: ExperimentRun) -> None:
    if run.adaptive is not None:
        run.meta["adaptive"] = run.adaptive.to_dict()
    (run.root / "experiment.json").write_text(json.dumps(run.meta, indent=1, default=str))


def _install_sigterm() -> Any:
    def handler(signum: int, frame: Any) -> None:  # noqa: ARG001
        raise Interrupted(f"signal {signum}")
    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        return signal.getsignal(signal.SIGTERM)


def emulation_tdf(cfg: ExperimentConfig) -> float:
    """The time-dilation factor this run uses: 1 on the simulator and for files without a
    fabric block; ``auto``: this machine's calibrated TDF (experiments.calibrate)."""
    if cfg.backend == "sim" or cfg.fabric is None:
        return 1.0
    if cfg.parameters.tdf == TDF_AUTO:
        from .calibrate import calibrated_tdf
        return calibrated_tdf(cfg)
    return float(cfg.parameters.tdf)


def fabric_samples(s: RunSamples, tdf: float) -> RunSamples:
    """A backend's samples with their times in fabric seconds (÷ tdf)."""
    if tdf == 1:
        return s
    def frame(df: pd.DataFrame) -> pd.DataFrame:
        scaled = {c: df[c] / tdf for c in ("t", "read_s") if c in df.columns}
        return df.assign(**scaled)
    return dataclasses.replace(
        s, links=frame(s.links), queues=frame(s.queues), counters=frame(s.counters),
        events=[dataclasses.replace(e, time=e.time / tdf) for e in s.events],
        failure_at=None if s.failure_at is None else s.failure_at / tdf,
        restore_at=None if s.restore_at is None else s.restore_at / tdf)


def _run_workload(run: ExperimentRun, be: Backend, rec: Recorder, spec: Any,
                  w: WorkloadConfig, scheme: SchemeConfig, rep: int,
                  progress: Progress, w_emu: WorkloadConfig | None = None,
                  tdf: float = 1.0, ctx: _Ctx | None = None,
                  rerun_of: int | None = None) -> list[RunRow]:
    """One repetition of a workload under a scheme; BSP workloads run iteration by iteration
    so that LB-BSP can re-size the batches between them. ``w_emu``: the workload as the
    backend runs it (dilated); everything recorded is in fabric units (times ÷ ``tdf``).
    ``rerun_of``: the repetition this one replaces after a step back (its seeds are taken:
    the same schedule and random draws, as the simulator beside it runs). Returns its rows."""
    out_rows: list[RunRow] = []
    w_emu = w_emu or w
    cfg = run.cfg
    hosts = cfg.hosts_of(w, spec)
    n = len(hosts)
    seed = cfg.parameters.seed + 1000 * (rep if rerun_of is None else rerun_of)
    iters = w.bsp.iterations if w.bsp else 1
    shares = [1.0 / n] * n
    base = Path("runs") / w.name / _safe(scheme.label) / f"rep{rep}"
    for it in range(iters):
        rel = base / f"iter{it}" if w.bsp else base
        what = f"{w.name} · {scheme.label} · rep {rep}" + (f" · iter {it}" if w.bsp else "")
        progress.start(what)
        t_it = time.perf_counter()
        speeds = speed_factors(shares) if w.bsp else None
        sched = (w_emu.schedule_for(n, speeds=speeds, iterations=1, seed=seed + it) if w.bsp
                 else w_emu.schedule_for(n, seed=seed))
        out = run.root / rel
        out.mkdir(parents=True, exist_ok=True)
        be.seed_data_plane(seed + it)
        t0 = time.time()
        samples = fabric_samples(be.run(sched, hosts, w_emu, out), tdf)
        wall = time.time() - t0
        ranks = load_ranks(out / "traffic", tdf)
        row = _record(rec, spec, w, scheme, rep, it if w.bsp else None, sched, hosts, ranks,
                      samples, wall, str(rel), tdf)
        row.batch_shares = json.dumps([round(s, 4) for s in shares]) if w.bsp else None
        row.tdf = tdf
        row.rerun_of = rerun_of
        rec.add("runs", [row.to_dict()])
        run.runs.append(row)
        out_rows.append(row)
        eta = Eta(0.0, 0.0)
        if ctx is not None:
            ctx.plan.done(w.name, time.perf_counter() - t_it)
            eta = Eta(time.perf_counter() - ctx.t_since, ctx.plan.remaining_s(), ctx.budget,
                      ctx.adaptive)
        progress.done(what, row, eta)
        if w.bsp and w.bsp.lb_bsp:
            shares = rebalance(shares, compute_times(ranks, n))
    return out_rows


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in label)


def _record(rec: Recorder, spec: Any, w: WorkloadConfig, scheme: SchemeConfig, rep: int,
            iteration: int | None, sched: Any, hosts: list[str], ranks: list[RankMetrics],
            s: RunSamples, wall: float, rel: str, tdf: float = 1.0) -> RunRow:
    tags = {"workload": w.name, "scheme": scheme.label, "repetition": rep}
    if iteration is not None:
        tags["iteration"] = iteration
    summ = merge_ranks(ranks, sched.ranks)
    it_times = iteration_times(ranks)
    rows = []
    for c in summ.collectives:
        name = c.name if iteration is None else f"{c.name.split('[')[0]}[{iteration}]"
        rows.append({"collective": c.collective if iteration is None else iteration,
                     "name": name, "start": c.start, "finish": c.finish,
                     "cct": c.cct, "iteration_s": it_times.get(c.collective),
                     "ok": summ.completed})
    rec.add("ccts", rows, **tags)
    for r in ranks:
        flows = [{"rank": r.rank, "direction": "local" if f.local else "send",
                  "flow": f.flow, "src": f.src, "dst": f.dst, "bytes": f.bytes,
                  "packets": f.packets, "fct": f.fct, "retransmissions": f.retransmissions,
                  "timeouts": f.timeouts}
                 for f in r.flows]
        flows += [{"rank": r.rank, "direction": "recv", "flow": x.flow, "src": x.src,
                   "dst": x.dst, "bytes": x.bytes, "packets": x.packets,
                   "reordered": x.reordered, "duplicates": x.duplicates}
                  for x in r.received]
        rec.add("flows", flows, **tags)
    rec.add("links", s.links, **tags)
    rec.add("queues", s.queues, **tags)
    rec.add("counters", s.counters, **tags)
    rec.add("events", [dataclasses.asdict(e) for e in s.events], **tags)
    util = metrics.link_utilisation(s.links.assign(**tags), spec) if not s.links.empty \
        else pd.DataFrame()
    up_bytes = int(util.loc[util["tier"].isin(["edge->agg", "leaf->spine"]), "bytes"].sum()) \
        if not util.empty else None
    need = metrics.inter_edge_wire_bytes(spec, sched, hosts, w.mss)
    drops = host_rx = None
    drop_reasons: dict[str, int] = {}
    if not s.counters_before.empty and not s.counters_after.empty:
        delta = metrics.counter_delta(s.counters_before, s.counters_after)
        drops = metrics.drops(delta)
        drop_reasons = metrics.drop_reasons(delta)
        host_rx = metrics.host_port_bytes(delta, spec, hosts)
    qmax = int(s.queues["qdepth_max"].max()) if not s.queues.empty else None
    reroute = None
    if s.failure_at is not None:
        a, b = w.failure.link if w.failure else ("", "")
        later = [e.time for e in s.events   # the loop's detection of THIS link going down
                 if e.time >= s.failure_at and e.loop in ("failure", "sim")
                 and a in e.what and b in e.what]
        reroute = (min(later) - s.failure_at) if later else None
    v = verdict(s, spec, w, tdf, ranks)
    tcp, fct = summ.tcp, summ.fct
    return RunRow(
        workload=w.name, scheme=scheme.label, repetition=rep, iteration=iteration,
        ok=summ.completed, cct=metrics.job_cct(summ.collectives), wall_s=round(wall, 3),
        guard=v,
        bytes_sent=summ.bytes_sent, bytes_received=summ.bytes_received,
        bytes_conserved=summ.bytes_conserved, packets_sent=summ.packets_sent,
        retransmissions=summ.retransmissions, reordered=summ.reordered,
        timeouts=summ.timeouts, nacks=summ.nacks, trim_nacks=summ.trim_nacks,
        fct_min_us=fct.min_us, fct_p50_us=fct.p50_us, fct_p99_us=fct.p99_us,
        fct_tail_us=fct.tail_us, fct_spread=fct.spread,
        trims=v.trims if v.measured else s.trims, trim=s.trim,
        cc=summ.cc, spurious=summ.spurious, ce_fraction=summ.ce_fraction,
        mean_window=summ.mean_window, mean_rate=summ.mean_rate,
        tcp_total_retrans=tcp.total_retrans if tcp else None,
        tcp_reord_seen=tcp.reord_seen if tcp else None, drops=drops, qdepth_max=qmax,
        uplink_bytes=up_bytes, inter_edge_wire_bytes=need,
        counter_ratio=(up_bytes / need) if up_bytes is not None and need else None,
        host_data_wire_bytes=metrics.data_wire_bytes(sched, hosts, w.mss),
        switch_host_rx_bytes=host_rx, host_tx_bytes=s.host_tx_bytes,
        drop_reasons=json.dumps(drop_reasons) if drop_reasons else None,
        failure_at=s.failure_at, reroute_s=reroute,
        failure_after_start_s=(s.failure_at - min(c.start for c in summ.collectives))
        if s.failure_at is not None and summ.collectives else None,
        errors="; ".join([*summ.errors, *s.errors])[:2000] or None, dir=rel)


def check_root(backend: str) -> str | None:
    """Why this backend cannot run here (None: it can)."""
    if backend == "mininet" and os.geteuid() != 0:
        return ("the Mininet fabric needs root (network namespaces): run it with sudo; "
                "`make demo-batch` runs the single-switch demo without root")
    return None


if __name__ == "__main__":
    sys.exit("use: python -m experiments.run CONFIG")
