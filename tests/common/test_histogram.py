"""The log-linear histogram behind the fidelity guard's quantiles (common/histogram.py): every
value lands in a bucket that holds it, buckets tile the range, and a quantile is within the
stated RELATIVE_ERROR of numpy's (exact below 2·SUB µs) — so a threshold is not decided by a
bucket edge."""

from __future__ import annotations

import numpy as np
import pytest

from common import histogram
from common.histogram import BUCKETS, RELATIVE_ERROR, SUB, LogHistogram, bucket_of, bucket_range


def test_buckets_tile_the_range_and_hold_their_values() -> None:
    for i in range(BUCKETS - 1):
        assert bucket_range(i)[1] + 1 == bucket_range(i + 1)[0]
    rng = np.random.default_rng(7)
    values = [*range(300), *rng.integers(0, histogram.MAX_US, 20_000).tolist()]
    for v in values:
        low, high = bucket_range(bucket_of(v))
        assert low <= v <= high
        if v >= 2 * SUB:
            assert (high - low + 1) / low <= 1 / SUB
    assert bucket_of(-5) == 0 and bucket_of(histogram.MAX_US * 4) == BUCKETS - 1


@pytest.mark.parametrize("q", [0.01, 0.5, 0.9, 0.99, 1.0])
@pytest.mark.parametrize("scale", [3.0, 400.0, 32_768.0, 3e6])
def test_quantiles_within_the_stated_relative_error(q: float, scale: float) -> None:
    rng = np.random.default_rng(int(scale) + int(q * 100))
    values = np.floor(rng.lognormal(np.log(scale), 0.8, 5000)).astype(int)
    h = LogHistogram()
    h.add_many(values.tolist())
    true = float(np.quantile(values, q, method="inverted_cdf"))   # nearest rank, as ours
    assert h.n == 5000
    assert abs(h.quantile(q) - true) <= RELATIVE_ERROR * true   # exact below 2·SUB


def test_the_old_power_of_two_edge_is_not_a_reading() -> None:
    # 17-30 ms of lag used to read 32.8 ms (the 2^15 µs bucket edge) whatever it was
    for ms in (17, 23, 30):
        h = LogHistogram()
        h.add_many([ms * 1000] * 100)
        assert h.quantile(0.99) == pytest.approx(ms * 1000, rel=RELATIVE_ERROR)


def test_sparse_and_dense_forms_merge_and_subtract() -> None:
    a = LogHistogram()
    a.add_many([0, 5, 5, 1000, 70_000])
    assert LogHistogram.of(a.sparse()).counts == a.counts
    assert LogHistogram.of(list(a.counts)).counts == a.counts
    assert LogHistogram.of(None).n == 0
    b = LogHistogram.of(a)
    b.add_many([5, 2_000_000])
    d = b.minus(a)
    assert d.n == 2 and d.sparse() == {str(bucket_of(5)): 1, str(bucket_of(2_000_000)): 1}
    assert LogHistogram().quantile(0.99) == 0.0
