"""LB-BSP re-sizing: shares follow measured speed, and the predicted compute evens out."""

from __future__ import annotations

import pytest

from experiments.lbbsp import rebalance, speed_factors


def test_a_straggler_gets_a_smaller_batch_and_compute_evens_out() -> None:
    n = 4
    even = [1 / n] * n
    per_unit = [1.0, 1.0, 1.0, 2.0]          # worker 3 is twice as slow per sample
    took = [s * u for s, u in zip(even, per_unit, strict=True)]
    new = rebalance(even, took)
    assert sum(new) == pytest.approx(1.0)
    assert new[3] == pytest.approx(new[0] / 2)
    predicted = [s * u for s, u in zip(new, per_unit, strict=True)]
    assert max(predicted) == pytest.approx(min(predicted))
    assert max(predicted) < max(took)        # the iteration's compute phase got shorter
    assert rebalance(new, predicted) == pytest.approx(new)   # a fixed point


def test_speed_factors_and_edge_cases() -> None:
    assert speed_factors([0.25, 0.25, 0.5]) == pytest.approx([0.75, 0.75, 1.5])
    assert rebalance([0.5, 0.5], [0.0, 0.0]) == [0.5, 0.5]
    assert rebalance([0.5, 0.5], [1.0, 0.0]) == pytest.approx([0.5, 0.5])
    tiny = rebalance([0.5, 0.5], [1.0, 1e9], floor=0.1)
    assert tiny[1] == pytest.approx(0.05 / 1.05, rel=1e-3)   # floored at 0.1 of an even share
    with pytest.raises(ValueError):
        rebalance([0.5], [1.0, 2.0])
