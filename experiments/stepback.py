"""When an experiment's runs turn invalid at the calibrated rate: step the rate back.

Calibration (experiments/calibrate.py) promises that the experiment's runs stay valid at the
rate it picks, but it judges a probe or two on a machine whose load changes. When runs of the
experiment then turn invalid for a reason that is the machine's capacity (hosts that cannot
pace, a hidden queue, a switch out of CPU, frames dropped outside the pipeline, a control
plane whose probes come late) the runner takes the next slower rate of calibration's ramp for
the rest of the experiment and runs the invalid repetitions again there, so that no scheme
drops out of the ranking. :class:`StepBack` decides when (pure: fed one verdict per
repetition); the runner applies it (experiments/runner.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from common.jsontypes import JsonObject

CAPACITY_REASONS = ("hosts cannot pace", "hidden queue", "CPU-bound",
                    "dropped at a host's receive socket", "dropped outside the P4 pipeline",
                    "control plane lagged")
"""Fragments of the guard's reasons (topo/guard.judge) that say the machine could not keep up
at this rate: a slower rate gives it time. Not among them: loss no counter saw (a gap in the
accounting, not a rate) and a run that did not complete (the scheme's doing as well)."""
INVALID = 2
WINDOW = 6
"""Step back when ``INVALID`` of the last ``WINDOW`` repetitions were invalid for a capacity
reason: one such run on a shared machine can be a neighbour's burst (it is left out of the
ranking like any invalid run); two close together say the rate does not hold."""


def capacity_reason(valid: bool, invalid_reason: str | None) -> str | None:
    """The guard's reason of an invalid run when it is the machine's capacity, else None."""
    if valid:
        return None
    why = invalid_reason or ""
    return why if any(f in why for f in CAPACITY_REASONS) else None


@dataclass(frozen=True)
class Step:
    """One step back: from ``from_tdf`` to ``to_tdf`` after ``reason``; ``rerun`` are the keys
    of the window's invalid repetitions, oldest first (to run again at ``to_tdf``)."""

    from_tdf: float
    to_tdf: float
    reason: str
    rerun: tuple[Hashable, ...]


@dataclass
class StepBack:
    """The policy over a ladder of TDFs (calibration's ramp, any order): ``add`` takes each
    repetition's key and capacity reason (None: valid, or invalid for another reason) and
    returns a :class:`Step` when the rate must go back; never beyond the ladder's largest TDF
    (then ``stuck`` holds the reason, once)."""

    ladder: Sequence[float]
    tdf: float
    invalid: int = INVALID
    window: int = WINDOW
    recent: deque[tuple[Hashable, str | None]] = field(default_factory=deque)
    stuck: str | None = None

    def next_tdf(self) -> float | None:
        """The ladder's next slower rate's TDF (None: none is slower)."""
        slower = [t for t in self.ladder if t > self.tdf * (1 + 1e-9)]
        return min(slower) if slower else None

    def add(self, key: Hashable, reason: str | None) -> Step | None:
        self.recent.append((key, reason))
        while len(self.recent) > self.window:
            self.recent.popleft()
        bad = [(k, r) for k, r in self.recent if r is not None]
        if len(bad) < self.invalid:
            return None
        to = self.next_tdf()
        if to is None:
            if self.stuck is None:
                self.stuck = reason or bad[-1][1]
            return None
        step = Step(self.tdf, to, bad[-1][1] or "", tuple(k for k, _ in bad))
        self.tdf = to
        self.recent.clear()
        return step


@dataclass(frozen=True, slots=True)
class Rerun:
    """A repetition run again after a step back: ``repetition`` of (workload, scheme) ran
    again as repetition ``as_rep`` (``as`` in experiment.json)."""

    workload: str
    scheme: str
    repetition: int
    as_rep: int

    def to_dict(self) -> JsonObject:
        return {"workload": self.workload, "scheme": self.scheme,
                "repetition": self.repetition, "as": self.as_rep}


@dataclass(frozen=True, slots=True)
class StepTaken:
    """One step back as the runner took it: after how many runs, the repetition whose
    verdict decided it, from and to which TDF, why, and the repetitions run again."""

    after_runs: int
    workload: str
    scheme: str
    repetition: int
    from_tdf: float
    to_tdf: float
    reason: str
    rerun: tuple[Rerun, ...]

    def to_dict(self) -> JsonObject:
        return {"after_runs": self.after_runs, "workload": self.workload,
                "scheme": self.scheme, "repetition": self.repetition,
                "from_tdf": self.from_tdf, "to_tdf": self.to_tdf, "reason": self.reason,
                "rerun": [r.to_dict() for r in self.rerun]}


@dataclass(slots=True)
class StepBackLog:
    """What the step-back policy did in an experiment (experiment.json ``step_back``): its
    ladder and thresholds, the steps taken, and ``stuck`` (the reason runs stayed invalid at
    the ladder's slowest rate; None: they did not)."""

    ladder: list[float]
    invalid: int
    window: int
    steps: list[StepTaken] = field(default_factory=list)
    stuck: str | None = None

    def to_dict(self) -> JsonObject:
        d: JsonObject = {"ladder": list(self.ladder), "invalid": self.invalid,
                         "window": self.window, "steps": [s.to_dict() for s in self.steps]}
        return d if self.stuck is None else {**d, "stuck": self.stuck}

    @classmethod
    def from_dict(cls, d: object) -> StepBackLog:
        """The log as :meth:`to_dict` wrote it; ValueError (one line) when it is not one."""
        try:
            if not isinstance(d, Mapping):
                raise TypeError(f"not an object but {type(d).__name__}")
            steps = [StepTaken(int(s["after_runs"]), str(s["workload"]), str(s["scheme"]),
                               int(s["repetition"]), float(s["from_tdf"]), float(s["to_tdf"]),
                               str(s["reason"]),
                               tuple(Rerun(str(r["workload"]), str(r["scheme"]),
                                           int(r["repetition"]), int(r["as"]))
                                     for r in s["rerun"]))
                     for s in d.get("steps") or []]
            stuck = d.get("stuck")
            return cls([float(t) for t in d.get("ladder") or []], int(d.get("invalid", 0)),
                       int(d.get("window", 0)), steps, None if stuck is None else str(stuck))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"experiment.json step_back: {type(e).__name__}: {e}") from None
