"""``python -m experiments.sweep CONFIG``: fan an experiment's runs out as Ray tasks.

CONFIG is either an experiment file (experiments/configs/*.yaml: every scheme x workload x
repetition becomes one task) or a sweep file that names one and a grid of overrides::

    experiment: configs/demo.yaml        # relative to the sweep file, or an inline mapping
    grid:                                # dotted paths into the experiment; one task per point
      topology.k: [4, 8]
      workloads.0.size: [64KB, 1MB]
    retries: 2                           # default for --retries

Each task is a one-scheme, one-workload, one-repetition experiment run by
``experiments.runner.run_experiment`` on the worker (``backend: sim`` runs anywhere; ``mininet``
tasks run one at a time: the machine has one fabric). Repetition r runs with seed + 1000 r, as
the runner does. ``ray.init()`` starts a local Ray by default; ``--address`` joins a cluster
(``ray start --head`` on one node, ``ray start --address=HEAD:6379`` on the others, then
``--address HEAD:6379 --working-dir .`` ships this checkout to the workers). A failed task is
retried (``--retries``); what still fails is listed, the rest is merged: ``runs.csv`` (one row
per run, tagged with the grid point), ``sweep.json`` and ``sweep.png`` (CCT by scheme per grid
point) under ``--out``/<sweep name>/<UTC time>/. Each task's raw results stay where it ran.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import socket
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from common.jsontypes import JsonObject

from .config import ConfigError, from_dict


class SweepError(ValueError):
    """A bad sweep file or grid; the message names the offending field."""


class TaskFailed(RuntimeError):
    """A task's run stopped early (the runner keeps what it measured and says why)."""


@dataclass(frozen=True)
class Task:
    index: int
    label: str
    tags: dict[str, Any]
    experiment: dict[str, Any]


@dataclass
class Sweep:
    name: str
    tasks: list[Task]
    retries: int = 1
    backend: str = "sim"
    source: dict[str, Any] = field(default_factory=dict)


# ---- building the task list ---------------------------------------------------------------------
def _set(d: Any, path: str, value: Any) -> None:
    """Set a dotted path (``workloads.0.size``) in nested dicts/lists; the path must exist up to
    its last part."""
    parts = path.split(".")
    cur = d
    for i, p in enumerate(parts[:-1]):
        nxt = _child(cur, p, ".".join(parts[:i + 1]))
        if nxt is None:
            nxt = {}
            cur[p] = nxt
        cur = nxt
    last = parts[-1]
    if isinstance(cur, list):
        idx = _index(cur, last, path)
        cur[idx] = value
    elif isinstance(cur, dict):
        cur[last] = value
    else:
        raise SweepError(f"grid.{path}: {'.'.join(parts[:-1])} is not a mapping or list")


def _index(lst: list[Any], part: str, path: str) -> int:
    try:
        idx = int(part)
    except ValueError:
        raise SweepError(f"grid.{path}: {part!r} is not a list index") from None
    if not 0 <= idx < len(lst):
        raise SweepError(f"grid.{path}: index {idx} out of range (list has {len(lst)})")
    return idx


def _child(cur: Any, part: str, path: str) -> Any:
    if isinstance(cur, list):
        return cur[_index(cur, part, path)]
    if isinstance(cur, dict):
        return cur.get(part)
    raise SweepError(f"grid.{path}: not a mapping or list")


def _scheme_name(s: Any) -> str:
    return s if isinstance(s, str) else str(s.get("name", s)) if isinstance(s, dict) else str(s)


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep or experiment file (every task's experiment is validated
    before anything runs)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise SweepError(f"cannot read {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise SweepError(f"{path} is not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise SweepError(f"{path}: expected a mapping at the top level")
    if "experiment" in data:
        unknown = set(data) - {"experiment", "grid", "retries", "name"}
        if unknown:
            raise SweepError(f"{sorted(unknown)[0]}: unknown field (sweep files have "
                             "experiment, grid, retries, name)")
        exp = data["experiment"]
        if isinstance(exp, str):
            exp_path = (path.parent / exp) if not Path(exp).is_absolute() else Path(exp)
            try:
                exp = yaml.safe_load(exp_path.read_text())
            except OSError as e:
                raise SweepError(f"experiment: cannot read {exp_path}: {e.strerror}") from None
        if not isinstance(exp, dict):
            raise SweepError("experiment: expected a file name or a mapping")
        grid = data.get("grid") or {}
        retries = data.get("retries", 1)
        name = data.get("name") or f"sweep-{exp.get('name', path.stem)}"
    else:
        exp, grid, retries, name = data, {}, 1, f"sweep-{data.get('name', path.stem)}"
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise SweepError("grid: expected a mapping of dotted paths to non-empty lists")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise SweepError(f"retries: expected an integer >= 0, got {retries!r}")
    return Sweep(str(name), expand(exp, grid), retries, str(exp.get("backend", "mininet")),
                 data)


def expand(exp: dict[str, Any], grid: dict[str, list[Any]]) -> list[Task]:
    """Grid points x schemes x workloads x repetitions -> validated one-run experiments."""
    try:
        from_dict(exp)
    except ConfigError as e:
        raise SweepError(f"experiment: {e}") from None
    keys = list(grid)
    tasks: list[Task] = []
    for point in itertools.product(*(grid[k] for k in keys)):
        d = copy.deepcopy(exp)
        for k, v in zip(keys, point, strict=True):
            _set(d, k, v)
        try:
            cfg = from_dict(d)
        except ConfigError as e:
            where = ", ".join(f"{k}={v}" for k, v in zip(keys, point, strict=True))
            raise SweepError(f"grid point {where}: {e}") from None
        seed = cfg.parameters.seed
        for wi, w in enumerate(d["workloads"]):
            for si, s in enumerate(d["schemes"]):
                for rep in range(cfg.repetitions):
                    one = copy.deepcopy(d)
                    one["workloads"] = [w]
                    one["schemes"] = [s]
                    one["repetitions"] = 1
                    one.setdefault("parameters", {})
                    one["parameters"] = {**(one["parameters"] or {}), "seed": seed + 1000 * rep}
                    one["name"] = f"{cfg.name}-t{len(tasks)}"
                    tags = {**{k: v for k, v in zip(keys, point, strict=True)},
                            "workload": cfg.workloads[wi].name,
                            "scheme": cfg.schemes[si].label, "repetition": rep}
                    label = " · ".join(str(v) for v in tags.values())
                    tasks.append(Task(len(tasks), label, tags, one))
    return tasks


# ---- running -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TaskResult:
    """What a task sends back from its node: its runs.csv rows tagged with the task's grid
    values and index, its results directory and the node's name."""

    rows: list[JsonObject]
    dir: str
    node: str


@dataclass(frozen=True, slots=True)
class TaskFailure:
    """A task that failed after its retries, and the last line of why."""

    task: int
    label: str
    error: str

    def to_dict(self) -> JsonObject:
        return {"task": self.task, "label": self.label, "error": self.error}


@dataclass(frozen=True, slots=True)
class SweepSummary:
    """A sweep's outcome (sweep.json): tasks run and succeeded, the failures, the retries
    allowed, where it ran, its wall time, each task's node:directory and the sweep file."""

    name: str
    tasks: int
    succeeded: int
    failed: list[TaskFailure]
    retries: int
    address: str
    wall_s: float
    task_dirs: dict[int, str]
    source: dict[str, Any]

    def to_dict(self) -> JsonObject:
        return {"name": self.name, "tasks": self.tasks, "succeeded": self.succeeded,
                "failed": [f.to_dict() for f in self.failed], "retries": self.retries,
                "address": self.address, "wall_s": self.wall_s,
                "task_dirs": {str(k): v for k, v in self.task_dirs.items()},
                "source": self.source}


def run_task(task: Task, out_root: str) -> TaskResult:
    """One task, on whichever node Ray picked: run the experiment, return its run rows."""
    from .runner import run_experiment

    cfg = from_dict(task.experiment)
    run = run_experiment(cfg, out_root=out_root, report=False)
    why = run.meta.get("interrupted")
    if why:
        raise TaskFailed(f"task {task.index} ({task.label}): {why}")
    rows: list[JsonObject] = [{**r.to_dict(), **task.tags, "task": task.index}
                              for r in run.runs]
    return TaskResult(rows, str(run.root), socket.gethostname())


def _progress() -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), transient=False)


def init_ray(address: str | None = None, cpus: int | None = None,
             working_dir: str | None = None) -> None:
    """Join the cluster at ``address`` (shipping ``working_dir`` to its workers), or start a
    local Ray on ``cpus`` CPUs (None: all)."""
    import ray

    if address:
        runtime_env = {"working_dir": working_dir, "excludes": [".venv", "results", ".git"]} \
            if working_dir else None
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=False)
    else:
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)


def run_sweep(sweep: Sweep, out: Path, address: str | None = None, cpus: int | None = None,
              retries: int | None = None, working_dir: str | None = None,
              show_progress: bool = True) -> SweepSummary:
    """Run every task as a Ray task; merge what came back under ``out``; returns the summary."""
    import ray

    retries = sweep.retries if retries is None else retries
    owns_ray = not ray.is_initialized()  # a caller that started Ray keeps it
    if owns_ray:
        init_ray(address, cpus, working_dir)
    remote = ray.remote(num_cpus=1, max_retries=retries, retry_exceptions=True)(run_task)
    # one emulated fabric per machine: Mininet tasks go one at a time
    window = 1 if sweep.backend == "mininet" else len(sweep.tasks)
    out.mkdir(parents=True, exist_ok=True)
    task_root = str((out / "tasks").resolve())
    rows: list[JsonObject] = []
    failed: list[TaskFailure] = []
    dirs: dict[int, str] = {}
    t0 = time.perf_counter()
    queue = list(sweep.tasks)
    pending: dict[Any, Task] = {}
    bar = _progress() if show_progress else None
    try:
        if bar:
            bar.start()
            bid = bar.add_task(sweep.name, total=len(queue))
        while queue or pending:
            while queue and len(pending) < window:
                t = queue.pop(0)
                pending[remote.remote(t, task_root)] = t
            done, _ = ray.wait(list(pending), num_returns=1)
            ref = done[0]
            t = pending.pop(ref)
            try:
                res: TaskResult = ray.get(ref)
                rows.extend(res.rows)
                dirs[t.index] = f"{res.node}:{res.dir}"
            except Exception as e:  # noqa: BLE001 - a task that failed after its retries
                failed.append(TaskFailure(t.index, t.label,
                                          str(e).strip().splitlines()[-1][:500]))
            if bar:
                bar.update(bid, advance=1, description=f"{sweep.name}: {t.label}")
    finally:
        if bar:
            bar.stop()
        if owns_ray:
            ray.shutdown()
    df = pd.DataFrame(rows)
    df.to_csv(out / "runs.csv", index=False)
    summary = SweepSummary(sweep.name, len(sweep.tasks), len(dirs), failed, retries,
                           address or "local", round(time.perf_counter() - t0, 3), dirs,
                           sweep.source)
    if not df.empty:
        from .plots import save, sweep_bars
        save(sweep_bars(df), out / "sweep", formats=("png",))
    (out / "sweep.json").write_text(json.dumps(summary.to_dict(), indent=1, default=str))
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.sweep",
                                 description="Run an experiment's runs as Ray tasks and merge "
                                             "the results.")
    ap.add_argument("config", help="sweep file, or an experiment file")
    ap.add_argument("--address", help="Ray cluster address (default: start a local Ray)")
    ap.add_argument("--working-dir", help="with --address: ship this directory to the workers")
    ap.add_argument("--cpus", type=int, help="local Ray: CPUs to use (default: all)")
    ap.add_argument("--retries", type=int, help="retries of a failed task (default: the "
                                                "file's, else 1)")
    ap.add_argument("--out", default="results/sweeps", help="results root (default %(default)s)")
    ap.add_argument("--dry-run", action="store_true", help="list the tasks and stop")
    a = ap.parse_args(argv)
    if a.cpus is not None and a.cpus < 1:
        ap.error("--cpus must be >= 1")
    if a.retries is not None and a.retries < 0:
        ap.error("--retries must be >= 0")
    try:
        sweep = load_sweep(a.config)
    except SweepError as e:
        ap.error(str(e))
    if a.dry_run:
        for t in sweep.tasks:
            print(f"{t.index:4d}  {t.label}")
        return 0
    try:
        import ray  # noqa: F401
    except ImportError:
        ap.error("Ray is not installed: .venv/bin/pip install -e '.[sweep]'")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(a.out) / sweep.name / stamp
    s = run_sweep(sweep, out, a.address, a.cpus, a.retries, a.working_dir)
    print(f"{s.succeeded}/{s.tasks} tasks ok in {s.wall_s:.1f}s -> {out}")
    for f in s.failed:
        print(f"FAILED task {f.task} ({f.label}): {f.error}", file=sys.stderr)
    return 0 if not s.failed else 1


if __name__ == "__main__":
    sys.exit(main())
