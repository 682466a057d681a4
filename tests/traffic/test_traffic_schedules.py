"""Generators produce the collective algorithms the literature describes; files round-trip."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traffic.schedules import (
    GENERATORS,
    ScheduleError,
    alltoall,
    bsp_training,
    dump,
    expert_popularity,
    from_dict,
    halving_doubling_allreduce,
    load,
    moe_alltoall,
    parse_size,
    place,
    recursive_doubling_allreduce,
    ring_allgather,
    ring_allreduce,
    ring_reduce_scatter,
    split,
    to_dict,
)


def step_bytes(s, r, k):
    return sum(x.bytes for x in s.programs[r][k].sends)


@pytest.mark.parametrize("n", [2, 3, 4, 7, 16])
def test_ring_allreduce_steps_neighbours_and_bytes(n):
    size = n * 1000
    s = ring_allreduce(n, size)
    for r in range(n):
        prog = s.programs[r]
        assert len(prog) == 2 * (n - 1)
        for st_ in prog:
            assert [x.dst for x in st_.sends] == [(r + 1) % n]
            assert [x.src for x in st_.recvs] == [(r - 1) % n]
            assert step_bytes(s, r, prog.index(st_)) == size // n
        assert s.bytes_sent(r) == 2 * (n - 1) * size // n == s.bytes_received(r)


def test_ring_allreduce_uneven_chunks_conserve_bytes():
    n, size = 5, 1003
    s = ring_allreduce(n, size)
    total = sum(s.bytes_sent(r) for r in range(n))
    assert total == 2 * (n - 1) * size  # every chunk travels N-1 hops in each phase
    assert sorted(split(size, n)) == sorted([step_bytes(s, r, 0) for r in range(n)])


def test_ring_allgather_and_reduce_scatter():
    for gen in (ring_allgather, ring_reduce_scatter):
        s = gen(6, 6000)
        assert all(len(p) == 5 for p in s.programs)
        assert all(s.bytes_sent(r) == 5000 for r in range(6))


def test_allgather_forwards_what_was_received():
    s = ring_allgather(4, 4 * 1000 + 3)  # chunk sizes 1001,1001,1001,1000 identify chunks
    for r in range(4):
        for k in range(1, 3):
            got = s.programs[r][k - 1].recvs[0].flow
            got_bytes = s.flow_index()[got][1].bytes
            assert step_bytes(s, r, k) == got_bytes


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_halving_doubling_partners_and_sizes(n):
    size = 64 * n
    s = halving_doubling_allreduce(n, size)
    m = int(math.log2(n))
    expected = [size >> (k + 1) for k in range(m)] + [size * (1 << k) // n for k in range(m)]
    for r in range(n):
        assert len(s.programs[r]) == 2 * m
        assert [step_bytes(s, r, k) for k in range(2 * m)] == expected
        dists = [n >> (k + 1) for k in range(m)] + [1 << k for k in range(m)]
        for k, d in enumerate(dists):
            assert [x.dst for x in s.programs[r][k].sends] == [r ^ d]
        assert s.bytes_sent(r) == 2 * (n - 1) * size // n


def test_recursive_doubling_exchanges_whole_buffer():
    s = recursive_doubling_allreduce(8, 100)
    assert all(len(p) == 3 for p in s.programs)
    assert all(s.bytes_sent(r) == 300 for r in range(8))


def test_butterfly_rejects_non_power_of_two():
    with pytest.raises(ScheduleError) as e:
        halving_doubling_allreduce(6, 100)
    assert e.value.field == "ranks"


@pytest.mark.parametrize("algo", ["direct", "scattered", "pairwise"])
def test_alltoall_pairs(algo):
    n = 5
    s = alltoall(n, n * 100, algorithm=algo)
    pairs = [(r, x.dst, x.bytes) for r, _, x in s.sends()]
    assert sorted((a, b) for a, b, _ in pairs) == [(a, b) for a in range(n) for b in range(n)
                                                   if a != b]
    assert all(b == 100 for _, _, b in pairs)
    assert len(s.programs[0]) == (1 if algo in ("direct", "scattered") else n - 1)
    # the order each rank posts its sends in: the i-th sends of all ranks go to one rank
    # (direct) or to every rank once (scattered)
    order = [[x.dst for x in s.programs[r][0].sends] for r in range(n)]
    if algo == "direct":
        assert all(o == [d for d in range(n) if d != r] for r, o in enumerate(order))
    elif algo == "scattered":
        assert all(o == [(r + k) % n for k in range(1, n)] for r, o in enumerate(order))
        for i in range(n - 1):
            assert sorted(o[i] for o in order) == list(range(n))
    if algo == "pairwise":
        for r in range(n):
            for st_ in s.programs[r]:
                assert len(st_.sends) == 1 and len(st_.recvs) == 1


def test_moe_exact_follows_zipf():
    n, size, alpha = 8, 800_000, 1.0
    s = moe_alltoall(n, size, skew="zipf", alpha=alpha, seed=3, combine=False)
    p = np.array(s.meta["popularity"])
    assert sorted(p, reverse=True)[0] / sorted(p, reverse=True)[1] == pytest.approx(2 ** alpha)
    recv = np.array([s.bytes_received(r) for r in range(n)])
    # everyone but e itself sends size * p_e to expert e (rounding: < 1 byte per sender)
    assert np.all(np.abs(recv - (n - 1) * size * p) < n)


def test_moe_sampled_hot_experts():
    n, tokens = 8, 40_000
    s = moe_alltoall(n, tokens * 10, skew="hot", hot=2, hot_fraction=0.75, tokens=tokens,
                     seed=1, combine=True)
    p = np.array(s.meta["popularity"])
    assert sorted(p, reverse=True)[:3] == pytest.approx([0.375, 0.375, 0.25 / 6])
    dispatch = np.zeros(n)
    for r, _, x in s.sends():
        if s.programs[r][0].sends and x in s.programs[r][0].sends:
            dispatch[x.dst] += x.bytes / 10
    expect = (n - 1) * tokens * p
    sigma = np.sqrt(expect)
    assert np.all(np.abs(dispatch - expect) < 6 * sigma)
    assert len(s.collectives) == 2 and len(s.programs[0]) == 2  # dispatch + combine


def test_moe_popularity_rejects_bad_skew():
    with pytest.raises(ScheduleError) as e:
        expert_popularity(4, skew="pareto")
    assert e.value.field == "skew"


def test_bsp_iterations_and_stragglers():
    s = bsp_training(lambda: ring_allreduce(4, 4000), iterations=3, compute_us=1000,
                     stragglers=[2], straggler_factor=3.0)
    assert all(len(p) == 3 * 6 for p in s.programs)
    assert len(s.collectives) == 3
    for it in range(3):
        first = [s.programs[r][it * 6].compute_us for r in range(4)]
        assert first == [1000, 1000, 3000, 1000]
        assert all(s.programs[r][it * 6 + 1].compute_us == 0 for r in range(4))
    flows = [x.flow for _, _, x in s.sends()]
    assert len(flows) == len(set(flows))


def test_bsp_heterogeneous_speeds_and_bad_straggler():
    s = bsp_training(lambda: alltoall(3, 300), 2, 10, speeds=[1, 2, 4])
    assert [s.programs[r][0].compute_us for r in range(3)] == [10, 20, 40]
    with pytest.raises(ScheduleError) as e:
        bsp_training(lambda: alltoall(3, 300), 2, 10, stragglers=[5])
    assert e.value.field == "stragglers[0]"


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(sorted(GENERATORS)), log_n=st.integers(1, 4),
       size=st.integers(16, 1 << 20))
def test_every_generator_conserves_bytes(name, log_n, size):
    n = 1 << log_n
    s = GENERATORS[name](n, size)
    assert sum(s.bytes_sent(r) for r in range(n)) == sum(s.bytes_received(r) for r in range(n))
    assert from_dict(to_dict(s)) is not None  # validates


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_file_round_trip(tmp_path, suffix):
    s = place(bsp_training(lambda: moe_alltoall(4, 4000), 2, 50.0, jitter=0.2),
              ["h1", "h2"], "round_robin")
    s.programs[1][0].at_us = 12.5
    s.programs[1][0].wait_sends = False
    path = tmp_path / f"s{suffix}"
    dump(s, path)
    back = load(path)
    assert to_dict(back) == to_dict(s)
    assert back.placement == ["h1", "h2", "h1", "h2"]


def test_placement_block():
    s = place(ring_allreduce(4, 100), ["a", "b"], "block")
    assert s.placement == ["a", "a", "b", "b"]


BASE = to_dict(ring_allreduce(3, 300))


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda d: d["programs"][1]["steps"][0]["sends"][0].update(dst=7),
     "programs[1].steps[0].sends[0].dst"),
    (lambda d: d["programs"][0]["steps"][2]["sends"][0].update(bytes=-1),
     "programs[0].steps[2].sends[0].bytes"),
    (lambda d: d["programs"][0]["steps"][1]["sends"][0].update(bytes="big"),
     "programs[0].steps[1].sends[0].bytes"),
    (lambda d: d["programs"][2]["steps"][0]["recvs"][0].pop("flow"),
     "programs[2].steps[0].recvs[0].flow"),
    (lambda d: d["programs"][0]["steps"][0].update(colour="red"),
     "programs[0].steps[0].colour"),
    (lambda d: d["programs"][0]["steps"][0]["recvs"][0].update(src=1),
     "programs[0].steps[0].recvs[0].src"),
    (lambda d: d["programs"][1]["steps"][0]["recvs"].clear(), "programs[1]"),
    (lambda d: d.update(ranks=4), "programs"),
    (lambda d: d.update(version=9), "version"),
    (lambda d: d.pop("programs"), "programs"),
    (lambda d: d["programs"][0]["steps"][0].update(compute_us=-5),
     "programs[0].steps[0].compute_us"),
    (lambda d: d["programs"][0].update(steps={}), "programs[0].steps"),
])
def test_bad_schedule_names_field(mutate, field):
    d = copy.deepcopy(BASE)
    mutate(d)
    with pytest.raises(ScheduleError) as e:
        from_dict(d)
    assert e.value.field == field
    assert str(e.value).startswith(field + ":")


def test_deadlock_is_detected():
    d = copy.deepcopy(BASE)
    # rank 0 waits in its first step for what rank 2 only sends in its last step,
    # while rank 2's earlier steps need rank 0's sends: a cycle
    p0 = d["programs"][0]["steps"]
    p0[0]["recvs"], p0[-1]["recvs"] = p0[-1]["recvs"], p0[0]["recvs"]
    with pytest.raises(ScheduleError) as e:
        from_dict(d)
    assert "deadlock" in str(e.value) and e.value.field.endswith(".recvs")


def test_load_rejects_garbage(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("ranks: [1, 2\n")
    with pytest.raises(ScheduleError) as e:
        load(p)
    assert e.value.field == "<file>"


@pytest.mark.parametrize(("text", "value"), [("4096", 4096), ("1MB", 10**6), ("1MiB", 1 << 20),
                                             ("1M", 1 << 20), ("64KiB", 65536),
                                             ("1.5KB", 1500)])
def test_parse_size(text, value):
    assert parse_size(text) == value


def test_parse_size_rejects_unknown_unit():
    with pytest.raises(ValueError):
        parse_size("3 parsecs")


def _broken(edit) -> ScheduleError:  # noqa: ANN001
    """A valid 3-rank AllToAll with one send or receive replaced by ``edit(step)``."""
    from traffic.schedules import Recv, Send

    s = alltoall(3, 300)
    edit(s.programs[0][0], Send, Recv)
    with pytest.raises(ScheduleError) as e:
        s.validate()
    return e.value


@pytest.mark.parametrize("edit, field, msg", [
    (lambda st, S, R: st.sends.__setitem__(0, S(7, 100, st.sends[0].flow)),
     "programs[0].steps[0].sends[0].dst", "rank 7 out of range 0..2"),
    (lambda st, S, R: st.sends.__setitem__(0, S(0, 100, st.sends[0].flow)),
     "programs[0].steps[0].sends[0].dst", "rank 0 sends to itself"),
    (lambda st, S, R: st.sends.__setitem__(1, S(st.sends[1].dst, 0, st.sends[1].flow)),
     "programs[0].steps[0].sends[1].bytes", "must be > 0, got 0"),
    (lambda st, S, R: st.sends.__setitem__(0, S(st.sends[0].dst, 100, 1 << 32)),
     "programs[0].steps[0].sends[0].flow", "must fit 32 bits"),
    (lambda st, S, R: st.sends.__setitem__(1, S(st.sends[1].dst, 100, st.sends[0].flow)),
     "programs[0].steps[0].sends[1].flow", "is sent twice"),
    (lambda st, S, R: st.recvs.__setitem__(0, R(st.recvs[0].src, 999)),
     "programs[0].steps[0].recvs[0].flow", "no rank sends flow 999"),
    (lambda st, S, R: st.recvs.__setitem__(0, R(st.recvs[1].src, st.recvs[0].flow)),
     "programs[0].steps[0].recvs[0].src", "is sent by rank"),
    (lambda st, S, R: st.recvs.__setitem__(1, R(st.recvs[0].src, st.recvs[0].flow)),
     "programs[0].steps[0].recvs[1]", "received twice"),
])
def test_validate_locates_each_kind_of_bad_transfer(edit, field, msg):  # noqa: ANN001
    e = _broken(edit)
    assert str(e.field).startswith(field) and msg in str(e)


@pytest.mark.parametrize("slots", [2, 4, 8])
@pytest.mark.parametrize("gen", [ring_allreduce, ring_allgather, ring_reduce_scatter])
def test_pipelined_ring_bounds_unacked_steps_and_keeps_data_dependencies(gen, slots):
    n = 5
    base, piped = gen(n, 10_000), gen(n, 10_000, slots=slots)
    for r in range(n):
        pb, pp = base.programs[r], piped.programs[r]
        # the same transfers in the same steps: the data dependencies are the default's
        assert [(s.sends, s.recvs) for s in pb] == [(s.sends, s.recvs) for s in pp]
        assert all(s.wait_sends and not s.wait_acked for s in pb)   # the default: lock-step
        step_of = {x.flow: k for k, stp in enumerate(pp) for x in stp.sends}
        freed: set[int] = set()   # steps whose sends some completed step waited for
        for k, stp in enumerate(pp):
            assert not stp.wait_sends
            # posting step k: steps <= k not yet known acknowledged hold a slot each
            assert len([j for j in range(k + 1) if j not in freed]) <= slots
            freed |= {step_of[f] for f in stp.wait_acked}
            assert all(step_of[f] <= k for f in stp.wait_acked)
        assert len(pp) < slots or freed, "a slot must be freed somewhere"
    assert piped.meta["slots"] == slots
    again = from_dict(to_dict(piped))
    assert [[s.wait_acked for s in p] for p in again.programs] == \
        [[s.wait_acked for s in p] for p in piped.programs]


def test_pipelined_ring_rejects_bad_slots_and_foreign_wait_acked():
    with pytest.raises(ScheduleError, match="slots"):
        ring_allreduce(4, 4000, slots=-1)
    assert to_dict(ring_allreduce(4, 4000, slots=1)) == to_dict(ring_allreduce(4, 4000))
    s = ring_allreduce(4, 4000, slots=2)
    d = to_dict(s)
    d["programs"][0]["steps"][1]["wait_acked"] = [d["programs"][1]["steps"][0]["sends"][0]["flow"]]
    with pytest.raises(ScheduleError, match="wait_acked"):
        from_dict(d)
