"""Statistics of repeated runs: mean ± a Student-t confidence interval per scheme, and a
ranking that groups schemes whose intervals overlap (or whose means are within EQUIVALENCE)
instead of naming a winner by noise.

Pure functions on the runner's tables (no I/O). With one repetition there is no interval (NaN
half-width): every scheme is then its own group only if the means differ by more than
EQUIVALENCE, which the report flags as "one repetition: no interval".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """``mean`` ± ``half``: the two-sided ``confidence`` interval of the mean of ``n`` values
    (``half`` NaN when n < 2)."""

    mean: float
    half: float
    n: int
    confidence: float = CONFIDENCE

    @property
    def low(self) -> float:
        return self.mean - self.half

    @property
    def high(self) -> float:
        return self.mean + self.half

    def overlaps(self, other: Interval) -> bool:
        """The two intervals share a point (an unknown interval overlaps only an equal mean)."""
        if math.isnan(self.half) or math.isnan(other.half):
            return self.mean == other.mean
        return self.low <= other.high and other.low <= self.high


def t_interval(values: Iterable[float], confidence: float = CONFIDENCE) -> Interval:
    """Mean and half-width t_{(1+c)/2, n-1} · s / √n (s: sample standard deviation)."""
    v = np.asarray([x for x in values if x is not None and not math.isnan(x)], dtype=float)
    n = int(v.size)
    if n == 0:
        return Interval(math.nan, math.nan, 0, confidence)
    mean = float(v.mean())
    if n < 2:
        return Interval(mean, math.nan, n, confidence)
    s = float(v.std(ddof=1))
    half = float(sps.t.ppf((1 + confidence) / 2, n - 1)) * s / math.sqrt(n)
    return Interval(mean, half, n, confidence)


RATIO_TIGHT = 0.05
"""The emulated/simulated CCT ratio's interval is tight when its half-width is at most this:
half the 0.9-1.1 band in which the two backends are said to agree, so that a ratio read
inside the band is not there by one lucky or unlucky repetition."""


REFERENCE_TIGHT = RATIO_TIGHT / 2
"""The simulator's mean CCT, as the reference of that ratio, is tight when its own 95 %
interval's half-width is at most this fraction of it: half the ratio's own tolerance, so that
the reference adds little to the ratio's uncertainty (± 0.056 instead of ± 0.05; at ± 0.05 it
would be ± 0.071). A scheme that gives the same CCT for every seed is tight at once; one that
varies with the hosts' start skew (ECMP's collided ring flows: ~6 % per run) gets more
simulated runs: the demo's first six seeds drew 275.1 µs on average, its first 40 260.3."""

REFERENCE_MIN_REPETITIONS = 6
"""Below this many runs a scheme whose runs differ by more than :data:`REFERENCE_SAME` is not
called tight: a spread estimated from three draws is itself a guess (the demo's ring under
ECMP once drew 265.0, 271.8 and 271.1 µs, a 3.5 % interval, from a distribution with a 6 %
spread per run)."""

REFERENCE_SAME = 0.01
"""Runs whose range is within this fraction of their mean are one value to the reference: the
start skew's own share of a spraying scheme's ring (at most 0.5 µs of ~134 µs)."""

REFERENCE_MAX_REPETITIONS = 24
"""The most simulated repetitions of a scheme that :data:`REFERENCE_TIGHT` adds: what a 6 %
spread per run needs for ± 2.5 % (each run costs 0.25-0.5 s of wall time on the 2-core
machine)."""


def ratio_interval(emulated: Interval, simulated_mean: float) -> Interval:
    """The emulated/simulated CCT ratio: the emulated mean's interval over the simulator's
    mean. The simulator's side runs until its own mean is tight (:data:`REFERENCE_TIGHT`),
    so its mean is taken as the fixed reference and the spread as the emulation's."""
    if not simulated_mean > 0 or math.isnan(simulated_mean):
        return Interval(math.nan, math.nan, emulated.n, emulated.confidence)
    return Interval(emulated.mean / simulated_mean, emulated.half / simulated_mean,
                    emulated.n, emulated.confidence)


def ratio_wide(ratio: Interval, tight: float = RATIO_TIGHT) -> bool:
    """The ratio's interval is unknown (fewer than two runs) or wider than ``tight``."""
    return math.isnan(ratio.half) or ratio.half > tight


def equivalent(x: Interval, y: Interval) -> bool:
    """The means are at most EQUIVALENCE (of the faster) apart: indistinguishable in practice,
    however narrow the intervals."""
    lo = min(x.mean, y.mean)
    return not math.isnan(lo) and abs(x.mean - y.mean) <= EQUIVALENCE * lo


def same_group(lead: Interval, other: Interval) -> bool:
    """``other`` joins ``lead``'s group: their intervals overlap (indistinguishable at this
    confidence) or their means are :func:`equivalent`."""
    return lead.overlaps(other) or equivalent(lead, other)


def groups(intervals: Sequence[tuple[str, Interval]]) -> list[list[str]]:
    """Schemes ranked into groups, fastest first. Sorted by mean; a group is led by the fastest
    scheme not yet placed and holds every later scheme indistinguishable from the leader
    (:func:`same_group`: intervals that overlap, or means within EQUIVALENCE). Schemes without
    a mean are left out.

    Why equivalence too: a demo run at TDF 100,000 measured the ring's rotate at 134.7 ± 0.10 µs
    and random at 138.2 ± 2.9 µs — disjoint intervals, 2.6 % apart (the simulator: 133.9 and
    136.5) — so precision alone split the spraying schemes into two groups, a split that the
    next run's wider intervals need not repeat, over a gap no one would rank schemes by."""
    ordered = sorted((iv for iv in intervals if not math.isnan(iv[1].mean)),
                     key=lambda x: x[1].mean)
    out: list[list[str]] = []
    placed: set[str] = set()
    for name, lead in ordered:
        if name in placed:
            continue
        g = [n for n, iv in ordered if n not in placed and (n == name or same_group(lead, iv))]
        placed.update(g)
        out.append(g)
    return out


def rank_table(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (one row per workload and scheme with ``mean`` and ``ci95``) with ``rank``:
    the scheme's group, 1 = fastest; equal ranks are indistinguishable."""
    t = table.copy()
    t["rank"] = np.nan
    for _, g in t.groupby("workload", sort=False):
        ivs = [(s, Interval(m, h, 2)) for s, m, h in zip(g["scheme"], g["mean"], g["ci95"],
                                                         strict=True)]
        for i, members in enumerate(groups(ivs), start=1):
            t.loc[g.index[g["scheme"].isin(members)], "rank"] = i
    return t


def same_grouping(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, bool]:
    """Per workload in both: do two ranked tables put the schemes in the same groups, in the
    same order?"""
    out = {}
    for w in sorted(set(a["workload"]) & set(b["workload"])):
        ga = a[a["workload"] == w].set_index("scheme")["rank"]
        gb = b[b["workload"] == w].set_index("scheme")["rank"]
        common = ga.index.intersection(gb.index)
        out[w] = bool((ga[common] == gb[common]).all())
    return out


def distinguished(x: Interval, y: Interval) -> bool:
    """Does a side tell these two schemes apart? Their intervals are disjoint (for a scheme
    with one run, or a deterministic simulator's zero-width intervals, the means differ) *and*
    the means are more than EQUIVALENCE apart: a smaller gap is indistinguishable in
    practice however narrow the intervals."""
    if math.isnan(x.mean) or math.isnan(y.mean) or equivalent(x, y):
        return False
    if math.isnan(x.half) or math.isnan(y.half):
        return True
    return not x.overlaps(y)


def rankings_agree(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, bool]:
    """Per workload in both: no pair of schemes that both tables tell apart
    (:func:`distinguished`, on the pair's own intervals) is ordered one way by one and the
    other way by the other. Pairwise, not by rank group: a group's members are only
    indistinguishable from its leader, so a member of group 1 may still overlap a scheme of
    group 2, and their order is then no claim of that side."""
    out = {}
    for w in sorted(set(a["workload"]) & set(b["workload"])):
        ia, ib = _intervals(a, w), _intervals(b, w)
        common = sorted(ia.keys() & ib.keys())
        out[w] = not any(
            distinguished(ia[x], ia[y]) and distinguished(ib[x], ib[y])
            and (ia[x].mean < ia[y].mean) != (ib[x].mean < ib[y].mean)
            for i, x in enumerate(common) for y in common[i + 1:])
    return out


def _intervals(t: pd.DataFrame, workload: str) -> dict[str, Interval]:
    """A summary table's schemes of ``workload`` as intervals (``mean``, ``ci95``, ``n``)."""
    g = t[t["workload"] == workload]
    n = g["n"] if "n" in g else pd.Series(2, index=g.index)
    return {str(s): Interval(float(m), float(h), int(k))
            for s, m, h, k in zip(g["scheme"], g["mean"], g["ci95"], n, strict=True)}


FRAGILE_SE = 2.0
"""A grouping decision (two schemes' intervals overlap or not) is robust when it is at least
this many standard errors of their difference away from flipping: a repetition of the whole
experiment moves the difference of two means by about one such standard error."""
MAX_REPETITIONS = 30
EQUIVALENCE = 0.05
"""Two schemes whose means differ by less than this fraction of the faster one's are
indistinguishable in practice. Overlapping intervals with a larger gap are absence of evidence,
not evidence of absence: the decision is *unresolved* (a close call however far its margin),
because more repetitions narrow the intervals and separate them. Two demo runs on one machine
showed it: MoE ECMP 62.4 ± 7.2 µs vs rotate 55.2 ± 7.0 µs with 3 runs each (overlap, "3 standard
errors from flipping"), 60.6 ± 1.9 vs 56.1 ± 2.8 with 4 and 6 runs (separated) — the same 12 %
gap both times."""


@dataclass(frozen=True)
class CloseCall:
    """A leader and a scheme whose overlap test (the grouping's) is within FRAGILE_SE of
    flipping, or whose intervals overlap although their means differ by more than EQUIVALENCE
    (``unresolved``)."""

    a: str
    b: str
    margin_se: float
    """How far (in standard errors of the difference) the decision is from its boundary."""
    repetitions: int | None
    """Repetitions each that would put a separation this large beyond the margin (None: the
    means are too close for MAX_REPETITIONS: treat them as indistinguishable)."""
    unresolved: bool = False
    """The intervals overlap but the means are more than EQUIVALENCE apart: too few runs to
    call the two equal."""
    gap: float = 0.0
    """The means' difference as a fraction of the faster mean."""


def _sd(iv: Interval) -> float:
    return iv.half * math.sqrt(iv.n) / float(sps.t.ppf((1 + iv.confidence) / 2, iv.n - 1))


def repetitions_to_separate(gap: float, sd: float, confidence: float = CONFIDENCE) -> int | None:
    """The fewest repetitions n per scheme (equal spread ``sd``) for which two means ``gap``
    apart have non-overlapping intervals with FRAGILE_SE standard errors to spare:
    gap ≥ (2·t_{n-1} + FRAGILE_SE·√2) · sd / √n."""
    if sd <= 0:
        return 2
    for n in range(2, MAX_REPETITIONS + 1):
        t = float(sps.t.ppf((1 + confidence) / 2, n - 1))
        if gap >= (2 * t + FRAGILE_SE * math.sqrt(2)) * sd / math.sqrt(n):
            return n
    return None


def _decisions(intervals: Sequence[tuple[str, Interval]]
               ) -> list[tuple[tuple[str, Interval], tuple[str, Interval]]]:
    """The (leader, scheme) overlap tests :func:`groups` makes, in its order."""
    ordered = sorted((iv for iv in intervals if not math.isnan(iv[1].mean)),
                     key=lambda x: x[1].mean)
    placed: set[str] = set()
    out = []
    for name, lead in ordered:
        if name in placed:
            continue
        placed.add(name)
        for other in ordered:
            if other[0] not in placed:
                out.append(((name, lead), other))
        placed.update(n for n, iv in ordered if n not in placed and same_group(lead, iv))
    return out


def close_calls(intervals: Sequence[tuple[str, Interval]]) -> list[CloseCall]:
    """The overlap tests the grouping makes (a group's leader against each scheme not yet
    placed, as :func:`groups`) that are within FRAGILE_SE standard errors of flipping, or that
    overlap with means more than EQUIVALENCE apart while more runs (up to MAX_REPETITIONS)
    would separate them: there the grouping of two invocations may differ. Schemes with fewer
    than 2 runs are left out. Closest first."""
    out = []
    for (a, x), (b, y) in _decisions(intervals):
        if x.n < 2 or y.n < 2 or math.isnan(x.half) or math.isnan(y.half):
            continue
        sx, sy = _sd(x), _sd(y)
        se = math.sqrt(sx * sx / x.n + sy * sy / y.n)
        if se == 0:
            continue
        gap = abs(x.mean - y.mean)
        # the decision is "overlap or equivalent": how far each test is from flipping, and
        # what flips the decision (both tests when it holds by both, the holding one when by
        # one, either when by neither)
        m_overlap = abs(gap - (x.half + y.half)) / se
        m_equiv = abs(gap - EQUIVALENCE * min(x.mean, y.mean)) / se
        by_overlap, by_equiv = x.overlaps(y), equivalent(x, y)
        if by_overlap and by_equiv:
            margin = max(m_overlap, m_equiv)
        elif by_overlap or by_equiv:
            margin = m_overlap if by_overlap else m_equiv
        else:
            margin = min(m_overlap, m_equiv)
        rel = gap / min(x.mean, y.mean) if min(x.mean, y.mean) > 0 else 0.0
        need = repetitions_to_separate(gap, max(sx, sy), x.confidence)
        unresolved = by_overlap and not by_equiv and need is not None and need > min(x.n, y.n)
        if margin < FRAGILE_SE or unresolved:
            lo, hi = (a, b) if x.mean <= y.mean else (b, a)
            out.append(CloseCall(lo, hi, margin, need, unresolved and margin >= FRAGILE_SE, rel))
    return sorted(out, key=lambda c: c.margin_se)
