"""Confidence intervals against scipy's t-interval, and the overlap grouping on hand-made
data (experiments/stats.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from experiments import metrics
from experiments.stats import (
    Interval,
    groups,
    rank_table,
    rankings_agree,
    same_grouping,
    t_interval,
)


@pytest.mark.parametrize("values", [[1.0, 2.0, 4.0], [10.0, 10.5], [3.2, 3.1, 3.3, 2.9, 3.0]])
def test_t_interval_equals_scipys(values: list[float]) -> None:
    iv = t_interval(values)
    lo, hi = sps.t.interval(0.95, len(values) - 1, loc=np.mean(values),
                            scale=sps.sem(values))
    assert iv.low == pytest.approx(lo) and iv.high == pytest.approx(hi)
    # and by hand for n = 3: t_{0.975, 2} = 4.3027
    if len(values) == 3:
        assert iv.half == pytest.approx(4.302653 * np.std(values, ddof=1) / math.sqrt(3),
                                        rel=1e-5)


def test_one_value_has_no_interval() -> None:
    iv = t_interval([5.0])
    assert iv.mean == 5.0 and math.isnan(iv.half) and iv.n == 1
    assert t_interval([]).n == 0


def test_groups_put_overlapping_schemes_together_and_order_by_mean() -> None:
    ivs = [("ecmp", Interval(10.0, 1.0, 3)), ("rotate", Interval(5.0, 0.5, 3)),
           ("random", Interval(5.4, 0.3, 3)), ("wam", Interval(6.2, 0.5, 3)),
           ("flowlet", Interval(10.5, 0.2, 3))]
    # rotate [4.5, 5.5] overlaps random [5.1, 5.7]; wam [5.7, 6.7] touches random but not
    # the leader rotate: no chaining, wam leads group 2
    assert groups(ivs) == [["rotate", "random"], ["wam"], ["ecmp", "flowlet"]]
    assert groups([("a", Interval(1.0, 0.1, 3))]) == [["a"]]


def test_summary_table_ranks_groups_and_leaves_invalid_runs_out() -> None:
    rows = []
    for scheme, ccts in (("ecmp", [10, 11, 12]), ("random", [5, 5.5, 6]),
                         ("rotate", [5.2, 5.4, 5.9]), ("wam", [8, 8.1, 8.2])):
        for rep, c in enumerate(ccts):
            rows.append({"workload": "ring", "scheme": scheme, "repetition": rep,
                         "collective": 0, "cct": c, "ok": True})
    t = metrics.scheme_table(pd.DataFrame(rows)).set_index("scheme")
    assert t.loc["random", "rank"] == t.loc["rotate", "rank"] == 1
    assert t.loc["wam", "rank"] == 2 and t.loc["ecmp", "rank"] == 3
    assert t.loc["ecmp", "ci95"] == pytest.approx(t_interval([10, 11, 12]).half)
    t2 = metrics.scheme_table(pd.DataFrame(rows), invalid=[("ring", "ecmp", 2)])
    t2 = t2.set_index("scheme")
    assert t2.loc["ecmp", "n"] == 2 and t2.loc["ecmp", "invalid"] == 1
    assert t2.loc["ecmp", "mean"] == 10.5 and t2.loc["wam", "invalid"] == 0
    # two repetitions widen ECMP's interval (t = 12.7) until it overlaps the leader's
    assert t2.loc["ecmp", "rank"] == 1 and t2.loc["wam", "rank"] == 2
    assert same_grouping(t.reset_index(), t2.reset_index()) == {"ring": False}
    assert same_grouping(t.reset_index(), t.reset_index()) == {"ring": True}


def _summary(rows: dict[str, tuple[float, float, int]]) -> pd.DataFrame:
    """A summary table of workload "w": scheme -> (mean, ci95, n)."""
    return pd.DataFrame([{"workload": "w", "scheme": s, "mean": m, "ci95": h, "n": n}
                         for s, (m, h, n) in rows.items()])


def test_rankings_agree_unless_a_pair_both_sides_tell_apart_is_reversed() -> None:
    emu = _summary({"ecmp": (66.8, 4.1, 5), "flowlet": (59.6, 8.6, 3), "rotate": (56.4, 2.3, 5)})
    # grouped by leader: {rotate, flowlet} < {ecmp}; but flowlet's own interval overlaps ECMP's
    assert rank_table(emu.assign(rank=0)).set_index("scheme")["rank"].to_dict() == {
        "ecmp": 2, "flowlet": 1, "rotate": 1}
    # a one-run simulator with flowlet slowest: emulated flowlet vs ECMP is no claim, and
    # rotate vs ECMP (0.4 % apart in the simulator) is a tie there
    sim = _summary({"ecmp": (57.2, math.nan, 1), "flowlet": (60.6, math.nan, 1),
                    "rotate": (57.0, math.nan, 1)})
    assert rankings_agree(emu, sim) == {"w": True}
    # the simulator puts ECMP clearly first: rotate < ECMP is reversed
    fast_ecmp = _summary({"ecmp": (50.0, 0.0, 3), "flowlet": (60.6, 0.0, 3),
                          "rotate": (57.0, 0.0, 3)})
    assert rankings_agree(emu, fast_ecmp) == {"w": False}
    assert rankings_agree(emu, emu) == {"w": True}


def test_distinguished_needs_disjoint_intervals_and_a_gap_beyond_equivalence() -> None:
    from experiments.stats import EQUIVALENCE, distinguished

    assert distinguished(Interval(100, 1, 3), Interval(110, 1, 3))
    assert not distinguished(Interval(100, 6, 3), Interval(110, 6, 3))       # overlap
    close = 100 * (1 + EQUIVALENCE / 2)
    assert not distinguished(Interval(100, 0, 3), Interval(close, 0, 3))     # within 5 %
    assert distinguished(Interval(100, math.nan, 1), Interval(110, math.nan, 1))
    assert not distinguished(Interval(100, 1, 3), Interval(math.nan, math.nan, 0))


def test_close_calls_flag_decisions_near_their_boundary() -> None:
    from experiments.stats import FRAGILE_SE, close_calls, repetitions_to_separate

    far = t_interval([100.0, 101.0, 99.0])       # sd 1
    other = t_interval([150.0, 151.0, 149.0])    # 50 apart: separated by ~40 SE
    near = t_interval([106.0, 107.0, 105.0])     # 6 apart: half-widths 2.48 each, SE 0.82
    same = t_interval([100.5, 101.5, 99.5])      # overlaps `far` by most of its width
    assert close_calls([("a", far), ("b", other)]) == []
    assert close_calls([("a", far), ("s", same)]) == []
    calls = close_calls([("b", near), ("a", far)])
    assert len(calls) == 1 and (calls[0].a, calls[0].b) == ("a", "b")
    # two ways to flip "different groups": overlap (|6 - 4.97| / 0.816 = 1.26 standard errors
    # away) or a gap within 5 % of 100 (|6 - 5| / 0.816 = 1.22): the nearer one counts
    se = np.sqrt(2 / 3)
    assert calls[0].margin_se == pytest.approx(min((6 - 2 * far.half) / se, (6 - 5) / se),
                                               rel=1e-6)
    assert calls[0].margin_se < FRAGILE_SE and calls[0].repetitions == 4
    # the repetitions rule: gap >= (2 t_{n-1} + 2 sqrt 2) sd / sqrt n
    assert repetitions_to_separate(50.0, 1.0) == 2
    assert repetitions_to_separate(6.0, 1.0) == 4
    assert repetitions_to_separate(0.1, 1.0) is None


def test_an_overlap_of_means_far_apart_is_unresolved_not_equal() -> None:
    from experiments.stats import EQUIVALENCE, FRAGILE_SE, Interval, close_calls

    # two demo runs' MoE ECMP vs rotate: the same 12-13 % gap, overlapping with 3 runs each
    ecmp, rotate = Interval(62.4, 7.16, 3), Interval(55.2, 7.01, 3)
    calls = close_calls([("ecmp", ecmp), ("rotate", rotate)])
    assert len(calls) == 1
    c = calls[0]
    assert (c.a, c.b) == ("rotate", "ecmp") and c.unresolved
    assert c.margin_se >= FRAGILE_SE          # the old rule called this robust
    assert c.gap == pytest.approx(7.2 / 55.2) and c.gap > EQUIVALENCE
    assert c.repetitions is not None and c.repetitions > 3
    # the same means with intervals that separate them: no call
    assert close_calls([("ecmp", Interval(62.4, 1.5, 6)), ("rotate", Interval(55.2, 1.5, 6))]) == []
    # overlap with means within EQUIVALENCE: equal in practice, no call
    assert close_calls([("a", Interval(100.0, 6.0, 3)), ("b", Interval(103.0, 6.0, 3))]) == []


def test_means_within_equivalence_share_a_group_however_narrow_their_intervals() -> None:
    from experiments.stats import close_calls

    rotate, random = t_interval([134.6, 134.7, 134.8]), t_interval([137.0, 138.2, 139.4])
    assert not rotate.overlaps(random)                 # disjoint, 2.6 % apart
    assert groups([("rotate", rotate), ("random", random)]) == [["rotate", "random"]]
    ecmp = t_interval([260.0, 265.0, 270.0])
    assert groups([("ecmp", ecmp), ("random", random), ("rotate", rotate)]) == [
        ["rotate", "random"], ["ecmp"]]
    # 2.6 % is many standard errors from the 5 % boundary: a robust decision, no close call
    assert close_calls([("rotate", rotate), ("random", random)]) == []
    # one run each: within 5 % is one group, beyond it two
    one = [("a", Interval(100.0, math.nan, 1)), ("b", Interval(104.0, math.nan, 1)),
           ("c", Interval(106.0, math.nan, 1))]
    assert groups(one) == [["a", "b"], ["c"]]


def test_a_gap_near_the_equivalence_boundary_is_a_close_call() -> None:
    from experiments.stats import EQUIVALENCE, close_calls

    lo = t_interval([100.0, 100.1, 99.9])
    near = t_interval([x + 100 * EQUIVALENCE for x in (99.5, 100.0, 100.5)])  # 5 % apart
    calls = close_calls([("lo", lo), ("near", near)])
    assert len(calls) == 1 and calls[0].margin_se < 2


def test_the_emulated_simulated_ratio_interval_is_the_emulated_interval_over_the_reference() -> None:
    from experiments.stats import RATIO_TIGHT, ratio_interval, ratio_wide

    # make demo's ring flowlet, first fresh clone: two of six runs retransmitted after tail
    # drops the simulator (133.6 µs) did not have
    emu = t_interval([145.7, 144.2, 145.9, 163.2, 161.5, 142.1])
    r = ratio_interval(emu, 133.6)
    assert r.mean == pytest.approx(emu.mean / 133.6) and r.half == pytest.approx(emu.half / 133.6)
    assert r.n == 6 and ratio_wide(r) and r.half > RATIO_TIGHT
    assert not ratio_wide(ratio_interval(t_interval([137.0, 134.9, 137.0, 136.9]), 134.0))
    assert ratio_wide(ratio_interval(t_interval([137.0]), 134.0))   # one run: no interval
    assert math.isnan(ratio_interval(emu, 0.0).mean)                 # no reference
