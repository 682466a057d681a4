"""``python -m experiments.validate PLAN``: simulator runs with pass/fail targets, as htsim's
validation suite checks its tail FCTs.

A plan is YAML::

    name: k4-smoke
    runs:
      - name: perm spraying
        args: [--k, "4", --tm, perm16.cm, --scheme, random, --mtu, "4150"]
        expect:
          ok: true
          fct_tail_us: {max: 60}
          fct_spread: {max: 1.2}
          timeouts: 0

Each run is ``python -m sim ARGS --json --quiet`` (a relative ``--tm`` or ``--export-cm`` path is
the plan's directory's); each target names a figure of its summary (``ok``, ``cct_us``,
``fct_tail_us``, ``fct_p99_us``, ``fct_spread``, ``retransmissions``, ``timeouts``, ``nacks``,
``trims``, ``tail_drops``, ...) and either a value it must equal or ``{min: X, max: Y}``. One
line per run, PASS or FAIL with every target's figure; the exit status is 1 if any failed, 2 for
a bad plan (one line).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_PATH_FLAGS = ("--tm",)


class PlanError(ValueError):
    """A malformed plan; the message names the field."""


@dataclass(frozen=True)
class Target:
    metric: str
    equal: Any = None
    lo: float | None = None
    hi: float | None = None

    def check(self, summary: dict[str, Any]) -> tuple[bool, str]:
        if self.metric not in summary:
            return False, f"{self.metric} missing"
        v = summary[self.metric]
        if self.lo is None and self.hi is None:
            ok = v == self.equal
            return ok, f"{self.metric} {v!r} {'==' if ok else '!='} {self.equal!r}"
        if v is None:
            return False, f"{self.metric} none"
        parts = []
        ok = True
        if self.lo is not None:
            ok &= v >= self.lo
            parts.append(f"{self.lo:g} <=")
        parts.append(f"{self.metric} {v:g}")
        if self.hi is not None:
            ok &= v <= self.hi
            parts.append(f"<= {self.hi:g}")
        return ok, " ".join(parts)


@dataclass(frozen=True)
class Run:
    name: str
    args: list[str]
    targets: list[Target]


def _target(metric: str, spec: Any, where: str) -> Target:
    if isinstance(spec, dict):
        extra = set(spec) - {"min", "max"}
        if extra or not spec:
            raise PlanError(f"{where}: a range is {{min: X, max: Y}}, got {spec!r}")
        lo, hi = spec.get("min"), spec.get("max")
        for name, v in (("min", lo), ("max", hi)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
                raise PlanError(f"{where}.{name}: {v!r} is not a number")
        return Target(metric, lo=lo, hi=hi)
    if isinstance(spec, bool | int | float | str):
        return Target(metric, equal=spec)
    raise PlanError(f"{where}: expected a value or {{min, max}}, got {spec!r}")


def load_plan(path: Path) -> tuple[str, list[Run]]:
    try:
        d = yaml.safe_load(path.read_text())
    except OSError as e:
        raise PlanError(f"{path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise PlanError(f"{path}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(d, dict) or not isinstance(d.get("runs"), list) or not d["runs"]:
        raise PlanError(f"{path}: a plan is a mapping with a non-empty list 'runs'")
    runs = []
    for i, r in enumerate(d["runs"]):
        w = f"{path}: runs[{i}]"
        if not isinstance(r, dict) or set(r) - {"name", "args", "expect"}:
            raise PlanError(f"{w}: a run has name, args and expect")
        args = r.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str | int | float)
                                                 for a in args):
            raise PlanError(f"{w}.args: a list of command-line words")
        words = [str(a) for a in args]
        for j, a in enumerate(words[:-1]):   # files named relative to the plan
            if a in _PATH_FLAGS and not Path(words[j + 1]).is_absolute():
                words[j + 1] = str(path.parent / words[j + 1])
        expect = r.get("expect")
        if not isinstance(expect, dict) or not expect:
            raise PlanError(f"{w}.expect: a mapping of targets")
        runs.append(Run(str(r.get("name", f"run {i}")), words,
                        [_target(str(m), s, f"{w}.expect.{m}") for m, s in expect.items()]))
    return str(d.get("name", path.stem)), runs


def run_sim(args: list[str]) -> tuple[dict[str, Any] | None, str]:
    """The summary of ``python -m sim ARGS --json --quiet``, or None and why not."""
    p = subprocess.run([sys.executable, "-m", "sim", *args, "--json", "--quiet"],
                       capture_output=True, text=True, check=False)
    text = p.stdout
    if "\n}" not in text:
        lines = (p.stderr or text).strip().splitlines()
        return None, lines[-1] if lines else f"exit status {p.returncode}"
    s = json.loads(text[:text.index("\n}") + 2])
    if s.get("cct_s") is not None:
        s["cct_us"] = s["cct_s"] * 1e6
    return s, ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.validate",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("plan", type=Path)
    a = ap.parse_args(argv)
    try:
        name, runs = load_plan(a.plan)
    except PlanError as e:
        print(f"python -m experiments.validate: error: {e}", file=sys.stderr)
        return 2
    failed = 0
    for r in runs:
        summary, why = run_sim(r.args)
        if summary is None:
            failed += 1
            print(f"FAIL {r.name}: the run failed: {why}", flush=True)
            continue
        checks = [t.check(summary) for t in r.targets]
        ok = all(c[0] for c in checks)
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {r.name}: "
              + "; ".join(text for _, text in checks), flush=True)
    print(f"{name}: {len(runs) - failed}/{len(runs)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
