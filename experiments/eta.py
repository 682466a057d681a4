"""How long the rest of an experiment will take, from what its runs took so far.

The runner keeps one :class:`RunPlan`: the runs still due per workload and each run's measured
wall time (everything between two runs included: scheme change, settle, probes, counters,
writing the tables). It answers two questions: the progress line's ETA, and whether another
adaptive repetition (``max_repetitions``) still fits into ``parameters.wall_budget_s`` (and
:func:`adaptive_text` says afterwards what was added and left, for the CLI and the report). Before
a workload's first run its duration is a prior from the topology's ideal bound (the fastest
the fabric could carry it) times the TDF, with the measured spraying overshoot and the fixed
per-run costs on top; the first measured run replaces it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from common.jsontypes import JsonObject

PRIOR_OVERSHOOT = 1.3
"""A run's CCT over the ideal bound before anything was measured: the demo's spraying schemes
took 1.17-1.42x on the emulated ring, ECMP up to 1.8x; 1.3x sits in between."""
PRIOR_FIXED_S = 2.0
"""Wall seconds of a run besides the collective and the start margin: probes, counter reads,
the agents' exit, the tables (0.6-1.6 s measured on the demo's k=4 fabric)."""


@dataclass
class RunPlan:
    """Runs due per workload and the wall seconds each took (pure bookkeeping: the runner
    feeds it, tests feed it by hand)."""

    prior_s: dict[str, float]
    """Per workload: one run's wall seconds before any was measured."""
    pending: dict[str, int]
    """Per workload: the runs still due (``repetitions`` x schemes x BSP iterations)."""
    tail_s: float = 0.0
    """Wall seconds after the last run (teardown)."""
    walls: dict[str, list[float]] = field(default_factory=dict)

    @staticmethod
    def prior(ideal_s: float, tdf: float, start_margin_s: float) -> float:
        """One run's wall seconds from its ideal bound in fabric seconds."""
        return ideal_s * tdf * PRIOR_OVERSHOOT + start_margin_s + PRIOR_FIXED_S

    def run_s(self, workload: str) -> float:
        """The expected wall seconds of one more run of ``workload``: the mean of its runs so
        far, else the prior."""
        w = self.walls.get(workload)
        return sum(w) / len(w) if w else self.prior_s.get(workload, 0.0)

    def done(self, workload: str, wall_s: float) -> None:
        """One run of ``workload`` took ``wall_s`` (a due run if any is left, else an extra)."""
        self.walls.setdefault(workload, []).append(wall_s)
        if self.pending.get(workload, 0) > 0:
            self.pending[workload] -= 1

    def remaining_s(self) -> float:
        """Wall seconds until the due runs and the tail are done."""
        return sum(n * self.run_s(w) for w, n in self.pending.items()) + self.tail_s

    def extra_runs_fitting(self, workload: str, wanted: int, elapsed_s: float,
                           budget_s: float | None) -> int:
        """How many of ``wanted`` extra runs of ``workload`` fit into ``budget_s`` after
        ``elapsed_s``, keeping the time the due runs and the tail need (all of them without
        a budget)."""
        if budget_s is None:
            return wanted
        free = budget_s - elapsed_s - self.remaining_s()
        per = self.run_s(workload)
        if per <= 0:
            return wanted
        return max(0, min(wanted, int(free // per)))


@dataclass(slots=True)
class AdaptiveLog:
    """What the adaptive repetitions did in an experiment (experiment.json ``adaptive``): the
    cap and the wall budget, per workload the runs added per scheme, the close calls the
    budget left unsettled and those too far from settling to try, and the seconds spent
    before the runner started (the budget counts them). With the simulator's CCTs as the
    reference (``make demo``'s --beside-sim), also the emulated/simulated ratio's interval
    per workload and scheme (``ratio``: [ratio, half-width]) and the schemes whose interval
    stayed wider than ``ratio_tight`` when the cap or the budget stopped them."""

    max_repetitions: int | None = None
    wall_budget_s: float | None = None
    added: dict[str, dict[str, int]] = field(default_factory=dict)
    left_by_budget: dict[str, list[str]] = field(default_factory=dict)
    beyond_cap: dict[str, list[str]] = field(default_factory=dict)
    before_runner_s: float = 0.0
    ratio_tight: float | None = None
    ratio: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    ratio_wide: dict[str, list[str]] = field(default_factory=dict)
    reference_tight: float | None = None
    """The simulator's side as the reference (stats.REFERENCE_TIGHT): a scheme's own mean is
    tight when its 95 % half-width is at most this fraction of it."""
    reference_wide: dict[str, list[str]] = field(default_factory=dict)
    """Per workload, the schemes whose own mean stayed wider than that."""

    def to_dict(self) -> JsonObject:
        added: JsonObject = {w: dict(d) for w, d in self.added.items()}
        left: JsonObject = {w: list(v) for w, v in self.left_by_budget.items()}
        beyond: JsonObject = {w: list(v) for w, v in self.beyond_cap.items()}
        out: JsonObject = {"max_repetitions": self.max_repetitions,
                           "wall_budget_s": self.wall_budget_s,
                           "added": added, "left_by_budget": left, "beyond_cap": beyond,
                           "before_runner_s": self.before_runner_s}
        if self.ratio_tight is not None:
            ratio: JsonObject = {w: {k: [_json_num(r), _json_num(h)] for k, (r, h) in d.items()}
                                 for w, d in self.ratio.items()}
            wide: JsonObject = {w: list(v) for w, v in self.ratio_wide.items()}
            out.update(ratio_tight=self.ratio_tight, ratio=ratio, ratio_wide=wide)
        if self.reference_tight is not None:
            out.update(reference_tight=self.reference_tight,
                       reference_wide={w: list(v) for w, v in self.reference_wide.items()})
        return out

    @classmethod
    def from_dict(cls, d: object) -> AdaptiveLog:
        """The log as :meth:`to_dict` wrote it (missing parts empty); ValueError (one line)
        when it is not one."""
        try:
            if not isinstance(d, Mapping):
                raise TypeError(f"not an object but {type(d).__name__}")
            cap, budget = d.get("max_repetitions"), d.get("wall_budget_s")
            return cls(None if cap is None else int(cap),
                       None if budget is None else float(budget),
                       {str(w): {str(k): int(v) for k, v in a.items()}
                        for w, a in (d.get("added") or {}).items()},
                       {str(w): [str(x) for x in v]
                        for w, v in (d.get("left_by_budget") or {}).items()},
                       {str(w): [str(x) for x in v]
                        for w, v in (d.get("beyond_cap") or {}).items()},
                       float(d.get("before_runner_s") or 0.0),
                       None if d.get("ratio_tight") is None else float(d["ratio_tight"]),
                       {str(w): {str(k): (_num(v[0]), _num(v[1])) for k, v in a.items()}
                        for w, a in (d.get("ratio") or {}).items()},
                       {str(w): [str(x) for x in v]
                        for w, v in (d.get("ratio_wide") or {}).items()},
                       None if d.get("reference_tight") is None
                       else float(d["reference_tight"]),
                       {str(w): [str(x) for x in v]
                        for w, v in (d.get("reference_wide") or {}).items()})
        except (AttributeError, TypeError, ValueError) as e:
            raise ValueError(f"experiment.json adaptive: {type(e).__name__}: {e}") from None


def adaptive_text(adaptive: AdaptiveLog | None) -> str:
    """What the adaptive repetitions did: runs added per workload, close calls the wall
    budget left unsettled and those too far from settling to try (empty without
    max_repetitions)."""
    if adaptive is None or not adaptive.max_repetitions:
        return ""
    added = adaptive.added
    left = adaptive.left_by_budget
    beyond = {w: v for w, v in adaptive.beyond_cap.items() if v}
    budget = adaptive.wall_budget_s
    parts = [f"{w} +{sum(d.values())} ({', '.join(f'{k} {v}' for k, v in d.items())})"
             for w, d in added.items()] or ["none added" if left or beyond else "none needed"]
    text = (f"adaptive repetitions (up to {adaptive.max_repetitions} per scheme"
            + (f", wall budget {budget:g} s" if budget else "") + "): " + "; ".join(parts))
    if left:
        text += ("; the budget left close calls unsettled: "
                 + "; ".join(f"{w}: {', '.join(v)}" for w, v in left.items()))
    if beyond:
        text += (f"; close calls that need more than twice {adaptive.max_repetitions}, "
                 "left unsettled: " + "; ".join(f"{w}: {', '.join(v)}"
                                                for w, v in beyond.items()))
    if adaptive.ratio_tight is not None:
        wide = {w: v for w, v in adaptive.ratio_wide.items() if v}
        text += (f"; the emulated/simulated ratio's 95 % interval "
                 f"(tight at ± {adaptive.ratio_tight:g}) "
                 + ("stayed wide for " + "; ".join(
                     f"{w}: " + ", ".join(
                         f"{k} ({_ratio(adaptive.ratio.get(w, {}).get(k))})" for k in v)
                     for w, v in wide.items()) if wide else "tight for every scheme"))
    if adaptive.reference_tight is not None:
        wide = {w: v for w, v in adaptive.reference_wide.items() if v}
        if wide:
            text += (f"; the simulator's own mean (tight at ± {adaptive.reference_tight:g} of "
                     "it) stayed wide for " + "; ".join(f"{w}: {', '.join(v)}"
                                                       for w, v in wide.items()))
    return text


def _json_num(x: float) -> float | None:
    """JSON has no NaN: an unknown half-width (one run) is null."""
    return None if x != x else round(x, 4)


def _num(x: object) -> float:
    return float("nan") if x is None else float(cast(float, x))


def _ratio(r: tuple[float, float] | None) -> str:
    if r is None:
        return "no interval"
    return f"{r[0]:.2f} ± {r[1]:.2f}" if r[1] == r[1] else f"{r[0]:.2f}, one run"
