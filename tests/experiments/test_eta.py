"""The runner's time plan: a workload's prior from its ideal bound until its first run is
measured, the due runs' remaining time, how many adaptive repetitions a wall budget still
admits, and the progress line's ETA text."""

from __future__ import annotations

import json

import pytest

from experiments import run as run_cli
from experiments.eta import PRIOR_FIXED_S, PRIOR_OVERSHOOT, AdaptiveLog, RunPlan, adaptive_text
from experiments.runner import Eta


def test_the_prior_gives_way_to_the_measured_mean() -> None:
    prior = RunPlan.prior(100e-6, 100_000, 1.0)   # a 100 µs bound at TDF 100,000: 10 s wall
    assert prior == pytest.approx(10 * PRIOR_OVERSHOOT + 1.0 + PRIOR_FIXED_S)
    plan = RunPlan({"ring": prior, "moe": 5.0}, {"ring": 3, "moe": 2}, tail_s=3.0)
    assert plan.remaining_s() == pytest.approx(3 * prior + 2 * 5.0 + 3.0)
    plan.done("ring", 14.0)
    plan.done("ring", 16.0)
    assert plan.run_s("ring") == 15.0 and plan.pending["ring"] == 1
    assert plan.remaining_s() == pytest.approx(15.0 + 10.0 + 3.0)
    plan.done("ring", 15.0)
    plan.done("ring", 15.0)   # an extra run: nothing due goes below zero
    assert plan.pending["ring"] == 0 and plan.run_s("ring") == 15.0


def test_extra_runs_fit_into_what_the_budget_leaves_after_the_due_runs() -> None:
    plan = RunPlan({"ring": 15.0, "moe": 7.0}, {"ring": 0, "moe": 2}, tail_s=3.0)
    # 100 s budget, 40 s gone, 17 s still due (2 MoE runs + teardown): 43 s free
    assert plan.extra_runs_fitting("ring", 4, 40.0, 100.0) == 2
    assert plan.extra_runs_fitting("moe", 9, 40.0, 100.0) == 6
    assert plan.extra_runs_fitting("ring", 4, 90.0, 100.0) == 0
    assert plan.extra_runs_fitting("ring", 4, 1e6, None) == 4   # no budget: all of them


def test_the_eta_line_says_what_is_due_and_what_the_budget_allows() -> None:
    assert run_cli.clock(65) == "1:05" and run_cli.clock(3725) == "1:02:05"
    due = Eta(elapsed_s=120.0, remaining_s=300.0)
    assert run_cli.eta_text(due, 20.0) == "elapsed 2:00, ETA 5:20"
    ad = Eta(elapsed_s=120.0, remaining_s=300.0, budget_s=510.0, adaptive=True)
    assert ad.at_most_s == 390.0
    assert run_cli.eta_text(ad, 20.0) == ("elapsed 2:00, ETA 5:20 (+ adaptive repetitions, "
                                          "at most 6:50 in all: budget 8:30)")
    assert Eta(600.0, 10.0, 510.0, adaptive=True).at_most_s == 10.0   # past the budget
    assert Eta(1.0, 10.0, None, adaptive=True).at_most_s is None
    assert adaptive_text(AdaptiveLog()) == "" and adaptive_text(None) == ""
    assert adaptive_text(AdaptiveLog(6, 510.0, added={"ring": {"wam": 2, "rotate": 1}},
                                     left_by_budget={"ring": ["wam", "rotate"]})) == (
        "adaptive repetitions (up to 6 per scheme, wall budget 510 s): ring +3 (wam 2, "
        "rotate 1); the budget left close calls unsettled: ring: wam, rotate")
    assert adaptive_text(AdaptiveLog(6)) == (
        "adaptive repetitions (up to 6 per scheme): none needed")
    assert adaptive_text(AdaptiveLog(6, 9.0, left_by_budget={"moe": ["ecmp", "wam"]})).endswith(
        "none added; the budget left close calls unsettled: moe: ecmp, wam")
    # a close call too far from settling is not "none needed" (the report calls it unresolved)
    beyond = AdaptiveLog(6, beyond_cap={"ring": ["random vs rotate (~19 each)"], "moe": []})
    assert AdaptiveLog.from_dict(json.loads(json.dumps(beyond.to_dict()))) == beyond
    with pytest.raises(ValueError, match="^experiment.json adaptive: "):
        AdaptiveLog.from_dict({"added": {"ring": {"wam": "two"}}})
    assert adaptive_text(beyond) == (
        "adaptive repetitions (up to 6 per scheme): none added; close calls that need more "
        "than twice 6, left unsettled: ring: random vs rotate (~19 each)")


def test_the_ratio_record_round_trips_and_reads() -> None:
    log = AdaptiveLog(6, 330.0, added={"moe": {"random": 3}}, ratio_tight=0.05,
                      ratio={"moe": {"random": (1.04, 0.07), "ecmp": (1.01, float("nan"))}},
                      ratio_wide={"moe": ["random"], "ring": []})
    d = json.loads(json.dumps(log.to_dict()))   # strict JSON: no NaN
    assert d["ratio"]["moe"]["ecmp"] == [1.01, None]
    back = AdaptiveLog.from_dict(d)
    assert back.ratio_wide == log.ratio_wide and back.ratio["moe"]["random"] == (1.04, 0.07)
    assert adaptive_text(back).endswith(
        "; the emulated/simulated ratio's 95 % interval (tight at ± 0.05) stayed wide for "
        "moe: random (1.04 ± 0.07)")
    tight = AdaptiveLog(6, ratio_tight=0.05, ratio={"moe": {"random": (1.0, 0.01)}},
                        ratio_wide={"moe": []})
    assert adaptive_text(tight).endswith("(tight at ± 0.05) tight for every scheme")
    assert "ratio" not in AdaptiveLog(6).to_dict()


def test_the_reference_record_round_trips_and_reads() -> None:
    log = AdaptiveLog(12, added={"ring": {"ecmp": 9}}, reference_tight=0.05,
                      reference_wide={"ring": ["ecmp"], "moe": []})
    back = AdaptiveLog.from_dict(json.loads(json.dumps(log.to_dict())))
    assert back == log
    assert adaptive_text(back) == (
        "adaptive repetitions (up to 12 per scheme): ring +9 (ecmp 9); the simulator's own "
        "mean (tight at ± 0.05 of it) stayed wide for ring: ecmp")
    assert "reference_tight" not in AdaptiveLog(6).to_dict()
