"""The hosts' start skew (SimConfig.start_skew_us): drawn from the seed and the host's name
alone, so a seed gives one run — in one process or split over two — and seeds give different
runs of a scheme that is otherwise the same in every repetition (ECMP)."""

from __future__ import annotations

import functools

import pytest

from model.spec import FabricSpec, fat_tree
from sim.network import SimConfig, SimNetwork, start_offset_us
from traffic.schedules import ring_allreduce

HOSTS = [f"h{i}" for i in range(1, 17)]


@functools.cache
def k4() -> FabricSpec:
    return fat_tree(4, bw_mbps=100_000)


def ring_run(seed: int, skew_us: float, workers: int = 1) -> tuple[float, list[float]]:
    """The k=4 ring of 8 ranks (one per edge switch) under ECMP: CCT (µs) and each rank's
    start (µs)."""
    s = ring_allreduce(8, 720_000)
    s.placement = HOSTS[::2]
    net = SimNetwork(k4(), "ecmp", SimConfig(seed=seed, start_skew_us=skew_us,
                                             prop_delay_us=0.1, workers=workers))
    res = net.run(s, until_us=1e6)
    assert res.ok
    return res.cct_s * 1e6, [r.start * 1e6 for r in sorted(res.ranks, key=lambda r: r.rank)]


@pytest.mark.parametrize("seed", [0, 1, 1001])
@pytest.mark.parametrize("skew", [0.1, 0.5, 3.0])
def test_offsets_are_the_seeds_and_hosts_alone(seed: int, skew: float) -> None:
    offsets = [start_offset_us(seed, h, skew) for h in HOSTS]
    assert offsets == [start_offset_us(seed, h, skew) for h in HOSTS]   # no hidden state
    assert all(0 <= x < skew for x in offsets)
    assert len(set(offsets)) == len(HOSTS)                              # hosts differ
    assert offsets != [start_offset_us(seed + 1, h, skew) for h in HOSTS]  # seeds differ
    assert [start_offset_us(seed, h, 0.0) for h in HOSTS] == [0.0] * len(HOSTS)


@pytest.mark.parametrize("bad", [-0.1, float("nan")])
def test_a_negative_skew_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="start skew"):
        start_offset_us(0, "h1", bad)


@pytest.mark.parametrize("seed", [3, 4])
def test_a_seed_gives_one_run_in_one_process_or_two(seed: int) -> None:
    one = ring_run(seed, 0.5)
    assert ring_run(seed, 0.5) == one
    assert ring_run(seed, 0.5, workers=2) == one
    cct, starts = one
    want = [start_offset_us(seed, h, 0.5) for h in HOSTS[::2]]
    assert starts == pytest.approx(want)        # each rank starts at its host's offset


def test_ecmp_ring_is_one_draw_without_skew_and_varies_with_it() -> None:
    still = {ring_run(seed, 0.0)[0] for seed in range(3)}
    assert len(still) == 1        # ECMP's paths and the event order ignore the seed
    skewed = {ring_run(seed, 0.5)[0] for seed in range(3)}
    assert len(skewed) == 3
