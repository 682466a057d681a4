"""Ranking schemes by CCT over repetitions (experiments/fidelity.py): separation by non-overlapping
ranges, the separability-aware agreement of two sides' rankings, Kendall's tau-b, and the
experiment file the sim-vs-Mininet ranking runs (pure: no root, no simulation)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from experiments import fidelity as F
from experiments.config import load

CONFIG = Path(__file__).resolve().parents[2] / "experiments/configs/fidelity_rank_1m.yaml"


def R(*ccts: float | None) -> F.CctRange:
    return F.CctRange.of(ccts)


def test_range_median_and_bounds() -> None:
    r = R(3.0, 1.0, 2.0, 10.0)
    assert (r.median, r.lo, r.hi) == (2.5, 1.0, 10.0)
    # a run that did not finish is slower than any that did
    r = R(1.0, None, 2.0)
    assert (r.median, r.lo, r.hi) == (2.0, 1.0, math.inf)
    with pytest.raises(ValueError):
        F.CctRange.of([])


@pytest.mark.parametrize("a, b, want", [
    (R(1, 2), R(3, 4), -1),          # disjoint, a faster
    (R(3, 4), R(1, 2), 1),           # disjoint, b faster
    (R(1, 3), R(2, 4), 0),           # overlapping
    (R(1, 2), R(2, 3), 0),           # touching ends: a tie, not separated
    (R(2, 2, 2), R(2, 2), 0),        # identical deterministic runs
    (R(5, 5), R(5.001), -1),         # zero-width ranges separate on any difference
    (R(1, None), R(2, 3), 0),        # a failed run widens the range to infinity
    (R(2, 3), R(None), -1),          # ... and a scheme that never finished is last
])
def test_order(a: F.CctRange, b: F.CctRange, want: int) -> None:
    assert F.order(a, b) == want
    assert F.order(b, a) == -want


def test_rank_by_median_keeps_the_given_order_on_ties() -> None:
    r = {"x": R(3, 1, 2), "y": R(2, 2), "z": R(0.5, 9, 9), "w": R(1, 1, 1)}
    assert F.rank_by_median(r) == ["w", "x", "y", "z"]


@pytest.mark.parametrize("x, y, want", [
    ({"a": 1, "b": 2, "c": 3}, {"a": 10, "b": 20, "c": 30}, 1.0),
    ({"a": 1, "b": 2, "c": 3}, {"a": 3, "b": 2, "c": 1}, -1.0),
    # one swap of 6 pairs: (5 - 1) / 6
    ({"a": 1, "b": 2, "c": 3, "d": 4}, {"a": 1, "b": 3, "c": 2, "d": 4}, 4 / 6),
    # tau-b with a tie in x: pairs 3, ties_x 1, C = 2, D = 0 -> 2 / sqrt(2 * 3)
    ({"a": 1, "b": 1, "c": 2}, {"a": 1, "b": 2, "c": 3}, 2 / math.sqrt(6)),
    # ties on both sides on the same pair: 2 / sqrt(2 * 2) = 1
    ({"a": 1, "b": 1, "c": 2}, {"a": 5, "b": 5, "c": 7}, 1.0),
    ({"a": 1, "b": 1}, {"a": 1, "b": 2}, None),           # x all tied: undefined
    ({"a": math.inf, "b": 1, "c": 2}, {"a": 9, "b": 1, "c": 2}, 1.0),
])
def test_kendall_tau(x: dict[str, float], y: dict[str, float], want: float | None) -> None:
    got = F.kendall_tau(x, y)
    if want is None:
        assert got is None
    else:
        assert got == pytest.approx(want)
        assert F.kendall_tau(y, x) == pytest.approx(want)  # symmetric


def test_kendall_tau_needs_the_same_schemes() -> None:
    with pytest.raises(ValueError):
        F.kendall_tau({"a": 1, "b": 2}, {"a": 1, "c": 2})


def test_rankings_agree_when_every_pair_separated_on_both_sides_is_in_order() -> None:
    mn = {"ecmp": R(9, 10, 11), "wam": R(5, 6, 7), "random": R(6.5, 7.5, 8)}
    sim = {"ecmp": R(7.2, 7.2), "wam": R(5.1, 5.1), "random": R(5.0, 5.3)}
    ag = F.compare_rankings(mn, sim)
    assert ag.agree
    assert sorted(ag.both) == [("random", "ecmp"), ("wam", "ecmp")]
    assert ag.conflicts == [] and ag.mininet_only == [] and ag.sim_only == []
    assert ag.neither == [("wam", "random")]  # overlap on both sides: no order claimed
    # medians: Mininet wam 6 < random 7.5 < ecmp 10; sim random 5.15 ~ wam 5.1 -> wam < random
    assert ag.tau == pytest.approx(1.0)


def test_one_side_separated_only_is_listed_not_a_conflict() -> None:
    mn = {"a": R(1, 2), "b": R(3, 4), "c": R(1.5, 3.5)}
    sim = {"a": R(3, 5), "b": R(4, 6), "c": R(0.1, 0.2)}
    ag = F.compare_rankings(mn, sim)
    assert ag.agree and ag.both == []            # nothing separated on both: vacuous
    assert ag.mininet_only == [("a", "b")]
    assert sorted(ag.sim_only) == [("c", "a"), ("c", "b")]
    assert ag.neither == []


def test_opposite_orders_are_a_conflict() -> None:
    mn = {"ecmp": R(1, 2), "rotate": R(3, 4), "wam": R(5, 6)}
    sim = {"ecmp": R(5, 6), "rotate": R(3, 4), "wam": R(1, 1)}
    ag = F.compare_rankings(mn, sim)
    assert not ag.agree
    # (faster on Mininet, faster in the sim)
    assert sorted(ag.conflicts) == [("ecmp", "rotate"), ("ecmp", "wam"), ("rotate", "wam")]
    assert ag.tau == pytest.approx(-1.0)


def test_ties_never_separate() -> None:
    same = {"a": R(2, 2), "b": R(2, 2)}
    ag = F.compare_rankings(same, same)
    assert ag.agree and ag.both == [] and ag.neither == [("a", "b")]
    assert ag.tau is None


def test_both_sides_must_have_run_the_same_schemes() -> None:
    with pytest.raises(ValueError):
        F.compare_rankings({"a": R(1)}, {"b": R(1)})


def test_rank_report_says_what_was_found() -> None:
    ranges = {"mininet": {"ecmp": R(9, 10, 11), "rotate": R(5, 6, 7)},
              "sim": {"ecmp": R(7.2, 7.2, 7.2), "rotate": R(5.0, 5.0, 5.0)}}
    res = F.FidelityResult(3, {}, ranges, F.rank_by_median(ranges["mininet"]),
                           F.rank_by_median(ranges["sim"]),
                           F.compare_rankings(ranges["mininet"], ranges["sim"]))
    text = "\n".join(F.rank_report(res))
    assert "| ecmp | 10.0000 | [9.0000, 11.0000] | 7.2000 | [7.2000, 7.2000] | identical" in text
    assert "AGREE on all 1 pairs" in text and "rotate < ecmp" in text
    res.ranges["sim"] = {"ecmp": R(4, 4.5, 5), "rotate": R(6, 6, 6)}
    res.agreement = F.compare_rankings(res.ranges["mininet"], res.ranges["sim"])
    text = "\n".join(F.rank_report(res))
    assert "DISAGREE: 1 of the 1 pairs" in text and "rotate vs ecmp" in text


def test_the_ranking_config_loads_and_its_schedule_builds() -> None:
    cfg = load(CONFIG)
    assert cfg.repetitions == 3 and len(cfg.schemes) == 5
    assert cfg.topology.k == 4 and cfg.topology.bw_mbps == 1
    w = cfg.workloads[0]
    assert w.placement == "random"
    spec = cfg.spec()
    hosts = cfg.hosts_of(w, spec)
    assert sorted(hosts) == sorted(spec.hosts)
    sched = w.schedule_for(len(hosts), seed=cfg.parameters.seed)
    steps = len(sched.programs[0])
    assert steps == len(hosts) - 1  # ring AllGather: N-1 steps, one flow per rank each
    paths = F.path_classes(spec, sched, hosts)
    assert sum(paths.values()) == len(sched.sends()) == steps * len(hosts)
    # the point of the random placement: most ring flows cross the core (many paths)
    assert paths["core"] >= 0.75 * len(sched.sends())
    # each step is link-bound: several full packets per flow
    assert min(s.bytes for _r, _i, s in sched.sends()) >= 8 * w.mss


def test_path_classes_by_hand() -> None:
    cfg = load(CONFIG)
    spec = cfg.spec()
    w = cfg.workloads[0]
    block = sorted(spec.hosts, key=lambda h: spec.hosts[h].index)  # h1 h2 on edge1, h3 h4 ...
    sched = w.schedule_for(len(block))
    # block placement: ring neighbours 2r -> 2r+1 share an edge, odd -> even change edge:
    # inside the pod (h2 -> h3) or across it (h4 -> h5), and the wrap-around h16 -> h1
    per_step = {"edge": 8, "pod": 4, "core": 4}
    assert F.path_classes(spec, sched, block) == {k: v * 15 for k, v in per_step.items()}


def test_vs_mininet_repeats_each_side_and_reseeds_only_the_sim(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver's plumbing with the Mininet side stubbed by more simulator runs (no root):
    N runs per scheme and side, the sim's repetition i seeded with seed + i (random spraying's
    choices change, ECMP's do not), ranges, rankings and the agreement built from all runs."""
    from experiments.config import from_dict

    cfg = from_dict({**F.FIDELITY_EXPERIMENT, "schemes": ["ecmp", "random"],
                     "workloads": [{"name": "a2a", "schedule": "alltoall", "size": "16KB",
                                    "window": 4, "timeout_s": 60}]})
    calls: list[int] = []

    def mininet_side(cfg: object, workdir: Path, n: int, log: object) -> dict:
        calls.append(n)
        return {s.label: [F.run_sim_side(cfg, cfg.workloads[0], s, seed=50 + i)
                          for i in range(n)] for s in cfg.schemes}

    monkeypatch.setattr(F, "run_mininet_side", mininet_side)
    res = F.vs_mininet(cfg, tmp_path / "out", log=lambda *_: None, repetitions=2)
    assert calls == [2] and res.repetitions == 2
    ecmp, rnd = res.schemes["ecmp"], res.schemes["random"]
    assert len(ecmp.sim_runs) == len(rnd.mininet_runs) == 2
    assert ecmp.sim is ecmp.sim_runs[0] and ecmp.table is not None and rnd.table is None
    assert ecmp.sim_runs[0].frames and not ecmp.sim_runs[1].frames  # kept for rep 1

    def same(a: F.SideRun, b: F.SideRun) -> bool:
        return a.counters.reset_index(drop=True).equals(b.counters.reset_index(drop=True))

    assert same(*ecmp.sim_runs)           # the seed does not touch ECMP
    assert not same(*rnd.sim_runs)        # ... and does change random spraying's choices
    assert res.ranges["sim"]["ecmp"].ccts == tuple(r.cct_s for r in ecmp.sim_runs)
    assert sorted(res.rank_sim) == ["ecmp", "random"]
    assert isinstance(res.agreement, F.RankAgreement)
    text = F.report(cfg.spec(), res)
    assert "CCT over 2 repetition(s)" in text and "rankings: " in text


def test_repetitions_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        F.main(["--vs-mininet", "--repetitions", "0"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "error: argument --repetitions: '0' is not a positive integer" in err[-1]
