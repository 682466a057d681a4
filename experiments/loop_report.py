"""Which control loops ran on each side of an experiment and what they did, for the report.

Both backends run the controller's own loops (controller.loops): the emulated fabric in the
controller's thread, the simulator in virtual time (sim.control). Their actions are read back
from the runs' events (events.csv) with ``controller.loops.loop_actions``, so the two sides are
counted the same way.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from controller.loops import ControlLoop, loop_actions

KEYS = ["workload", "scheme", "repetition"]


def _config(meta: dict[str, Any]) -> Any:
    """The experiment file a results directory ran (None if it does not parse)."""
    from .config import ConfigError, from_dict

    try:
        return from_dict(meta.get("config", {}))
    except (ConfigError, TypeError, ValueError):
        return None


def loops_ran(meta: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(loops that ran, notes) for a results directory's experiment.json: the file's
    ``parameters.loops`` (its default when absent); the simulator has nothing to reconcile."""
    cfg = _config(meta)
    names = [str(n) for n in cfg.parameters.loops] if cfg is not None else []
    if meta.get("backend") == "sim" and ControlLoop.RECONCILE in names:
        return ([n for n in names if n != ControlLoop.RECONCILE],
                ["reconcile: no switch reconnects in the simulator"])
    return names, []


def action_counts(runs: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Per run (workload, scheme, repetition of runs.csv): the loops' weight changes and the
    links they declared down, 0 for a run without such events."""
    if runs.empty:
        return pd.DataFrame(columns=[*KEYS, "weight_changes", "links_down"])
    out = runs[KEYS].drop_duplicates().copy()
    counts: dict[tuple[Any, ...], tuple[int, int]] = {}
    if not events.empty and set(KEYS) <= set(events.columns):
        for key, g in events.groupby(KEYS, sort=False):
            a = loop_actions(g.to_dict("records"))
            counts[tuple(key)] = (a.weight_changes, a.links_down)
    keys = list(zip(out["workload"], out["scheme"], out["repetition"], strict=True))
    out["weight_changes"] = [counts.get(k, (0, 0))[0] for k in keys]
    out["links_down"] = [counts.get(k, (0, 0))[1] for k in keys]
    return out.reset_index(drop=True)


def _wam_labels(cfg: Any) -> set[str]:
    """Labels of the file's schemes whose groups the Whack-a-Mole loop re-weights."""
    if cfg is None:
        return set()
    return {s.label for s in cfg.schemes if s.build().control_loop == ControlLoop.WAM}


def _period(cfg: Any) -> str:
    p = float(cfg.parameters.control_period_s) if cfg is not None else 0.5
    return f"{p * 1e6:g} µs" if p < 1e-3 else f"{p * 1e3:g} ms" if p < 1 else f"{p:g} s"


def side_line(side: str, meta: dict[str, Any], runs: pd.DataFrame,
              events: pd.DataFrame) -> str:
    """One report line: the loops one side ran and what they did per run."""
    cfg = _config(meta)
    names, notes = loops_ran(meta)
    clock = "virtual time" if meta.get("backend") == "sim" else (
        "fabric time" if cfg is not None and cfg.fabric is not None else "wall-clock time")
    ran = (f"ran {', '.join(names)} every {_period(cfg)} of {clock}" if names
           else "ran no control loop")
    if notes:
        ran += f" ({'; '.join(notes)})"
    counts = action_counts(runs, events)
    parts = []
    if ControlLoop.WAM in names:
        wam = _wam_labels(cfg)
        shown = counts[counts["scheme"].isin(wam) | (counts["weight_changes"] > 0)]
        per = [f"{w} {s}: {', '.join(str(int(n)) for n in g['weight_changes'])}"
               for (w, s), g in shown.groupby(["workload", "scheme"], sort=False)]
        total = int(shown["weight_changes"].sum())
        n = len(shown)
        parts.append(f"Whack-a-Mole weight changes: {total} in {n} run{'s' * (n != 1)}"
                     + (f" (per run — {'; '.join(per)})" if per else ""))
    if ControlLoop.FAILURE in names:
        parts.append(f"links declared down: {int(counts['links_down'].sum())}")
    did = "; ".join(parts)
    return f"- **{side}** {ran}." + (f" {did[0].upper()}{did[1:]}." if did else "")


def loops_section(meta: dict[str, Any], runs: pd.DataFrame, events: pd.DataFrame,
                  sim: tuple[dict[str, Any], pd.DataFrame, pd.DataFrame] | None = None
                  ) -> list[str]:
    """The report's "Control loops" section: this run's side, and the simulator's beside it."""
    if runs.empty:
        return []
    side = "Simulated" if meta.get("backend") == "sim" else "Emulated"
    md = ["## Control loops", "",
          "The controller's loops (controller.loops), as each side ran them; a weight change "
          "is one group re-weighted in one period.", "",
          side_line(side, meta, runs, events)]
    if sim is not None and not sim[1].empty:
        md.append(side_line("Simulated", *sim))
    return md + [""]
