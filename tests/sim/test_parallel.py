"""A run split over processes (sim.parallel) gives the results of one loop, exactly."""

from __future__ import annotations

import multiprocessing as mp

import pytest

# tests/sim/golden.py, importable as a sibling (see test_sim_fabric.py)
from golden import cases, run_case  # noqa: E402

from model.spec import fat_tree, leaf_spine
from sim.events import EventLoop
from sim.frameblob import FrameBlob
from sim.network import SimConfig, SimNetwork
from sim.partition import partition
from sim.results import member_counters
from traffic.schedules import alltoall


@pytest.mark.parametrize("name", sorted(cases()))
def test_split_run_equals_one_loop(name: str) -> None:
    """Every golden case — five schemes, drops and retransmissions, a failure and its
    reroute — hashes alike over 1 and 2 processes: CCT, every flow, every frame every
    switch received with its time, every LB member counter."""
    assert run_case(name, workers=2) == run_case(name, workers=1)


def test_three_parts_with_a_failure_equal_one_loop() -> None:
    assert run_case("wam-failure", workers=3) == run_case("wam-failure", workers=1)


def test_split_run_brings_the_whole_fabric_back() -> None:
    """After a split run the caller's network holds every part's counters and registers."""
    sched = alltoall(16, 16 * 4_000)
    nets = {}
    for w in (1, 2):
        net = SimNetwork(fat_tree(4, bw_mbps=10_000), "flowlet", SimConfig(workers=w))
        res = net.run(sched)
        assert res.ok
        nets[w] = (net, res)
    (one, r1), (two, r2) = nets[1], nets[2]
    timing = dict.fromkeys(("wall_s", "hops_per_s", "build_s", "install_s"), 0)
    assert r2.summary() | timing == r1.summary() | timing
    assert member_counters(two).equals(member_counters(one))
    for name, sw in one.switches.items():
        other = two.switches[name]
        assert other.packets_in == sw.packets_in and other.tail_drops() == sw.tail_drops()
        for reg, arr in sw.pipe.registers.items():
            assert other.pipe.registers[reg].values == arr.values, (name, reg)
        for t in set(sw.pipe.direct_counters.values()):
            assert ([(e.packets, e.bytes) for e in other.pipe.table_entries(t)]
                    == [(e.packets, e.bytes) for e in sw.pipe.table_entries(t)])
    for h, host in one.hosts.items():
        assert two.hosts[h].frames_received == host.frames_received
    assert [d.tx_packets for p in two.links for d in p] == [
        d.tx_packets for p in one.links for d in p]
    assert two.split.windows > 1 and two.split.exchanged > 0 and two.split.parts == [18, 18]
    assert r2.events == r1.events


def test_until_ends_a_split_run_where_it_ends_one_loop() -> None:
    sched = alltoall(16, 16 * 8_000)
    ends = []
    for w in (1, 2):
        net = SimNetwork(fat_tree(4, bw_mbps=10_000), "ecmp", SimConfig(workers=w))
        res = net.run(sched, until_us=30.0)
        ends.append((res.ok, res.end_us, res.packet_hops, res.events))
    assert ends[0] == ends[1] and ends[0][:2] == (False, 30.0)


def test_partition_halves_a_fat_tree_by_pods_and_cores() -> None:
    spec = fat_tree(4)
    part = partition(spec, 2)
    assert set(part) == set(spec.switches) | set(spec.hosts)
    for name, s in spec.switches.items():
        if s.pod is not None:
            assert part[name] == (0 if s.pod < 2 else 1)
    cores = sorted((s.index, part[n]) for n, s in spec.switches.items() if s.role == "core")
    assert [p for _, p in cores] == [0, 0, 1, 1]
    for lk in spec.links:  # a host goes with its edge switch
        if lk.a in spec.hosts:
            assert part[lk.a] == part[lk.b]
        if lk.b in spec.hosts:
            assert part[lk.b] == part[lk.a]
    ls = leaf_spine(4, 2, 2)
    lp = partition(ls, 2)
    assert sorted(lp.values()).count(0) == sorted(lp.values()).count(1)
    assert partition(spec, 1) == dict.fromkeys(part, 0)
    with pytest.raises(ValueError, match="parts must be >= 1"):
        partition(spec, 0)


def test_split_run_refuses_what_it_cannot_do() -> None:
    sched = alltoall(4, 4 * 1_000)
    net = SimNetwork(fat_tree(4), "ecmp", SimConfig(workers=2, prop_delay_us=0.0))
    with pytest.raises(ValueError, match="propagation delay > 0"):
        net.run(sched)
    with pytest.raises(ValueError, match="workers must be >= 1"):
        SimNetwork(fat_tree(4), "ecmp", SimConfig(workers=0)).run(sched)


def test_a_failing_part_fails_the_run_and_leaves_no_process() -> None:
    net = SimNetwork(fat_tree(4, bw_mbps=10_000), "ecmp", SimConfig(workers=2))
    part = partition(net.spec, 2)
    victim = next(n for n in net.switches if part[n] == 1 and n.startswith("core"))

    class Broken:
        def process_fast(self, *a: object) -> None:
            raise RuntimeError("model bug in part 1")

        ingress_fast = process_fast

    net.switches[victim].pipe = Broken()
    with pytest.raises(RuntimeError, match=r"part 1 of the split run failed(.|\n)*model bug"):
        net.run(alltoall(16, 16 * 4_000))
    assert not mp.active_children()


def test_same_time_events_keyed_by_their_causes() -> None:
    """Ties: an event's children in scheduling order, an event scheduled earlier first; the
    keys do not depend on the loop — two loops running the halves of a job order each
    event as one loop does."""
    loop = EventLoop()
    seen: list[str] = []

    def parent(now: float, tag: str) -> None:
        for i in range(3):
            loop.schedule(10.0, lambda t, x: seen.append(x), f"{tag}{i}")

    loop.schedule(1.0, parent, "a")
    loop.schedule(5.0, parent, "b")
    loop.schedule(10.0, lambda t, x: seen.append(x), "root")
    loop.run()
    assert seen[0] == "root"  # scheduled at 0, before a's children (at 1) and b's (at 5)
    assert seen.index("a0") < seen.index("a1") < seen.index("a2") < seen.index("b0")
    assert seen.index("b0") < seen.index("b1") < seen.index("b2")

    def keys(loop: EventLoop, roots: list[int]) -> list:
        out = []
        for r in roots:
            with loop.root(r):
                loop.schedule(1.0, lambda t, x: out.append((t, loop.ticket())), r)
        loop.run()
        return sorted(out)

    both = keys(EventLoop(), [1, 2, 3, 4])
    assert sorted(keys(EventLoop(), [1, 3]) + keys(EventLoop(), [2, 4])) == both


def test_stop_before_and_windows() -> None:
    loop = EventLoop()
    seen: list[float] = []
    for t in (1.0, 2.0, 3.0, 4.0):
        loop.schedule(t, lambda now, _: seen.append(now))
    assert loop.run(before=2.0) == 1.0 and seen == [1.0] and not loop.done
    assert loop.next_time == 2.0
    loop.stop_before(3.0)
    loop.stop_before(3.5)  # the earliest bound wins
    loop.run()
    assert seen == [1.0, 2.0] and loop.done and loop.horizon == 3.0
    assert not loop.reached_until


def test_split_run_reports_progress_to_the_end() -> None:
    sched = alltoall(16, 16 * 4_000)
    net = SimNetwork(fat_tree(4, bw_mbps=10_000), "random", SimConfig(workers=2))
    seen: list = []
    res = net.run(sched, progress=seen.append, progress_every=500)
    assert len(seen) > 3 and all(p.flows_total == 240 for p in seen)
    for a, b in zip(seen, seen[1:], strict=False):
        assert b.events >= a.events and b.packet_hops >= a.packet_hops
        assert b.flows_done >= a.flows_done and b.now_us >= a.now_us
    assert seen[0].flows_done < 240
    assert (seen[-1].flows_done, seen[-1].packet_hops, seen[-1].events) == (
        240, res.packet_hops, res.events)


def test_a_python_part_reads_the_c_cores_frames_as_its_own() -> None:
    """The C core hands a window's frames for another part over as one FrameBlob (their
    bytes without the zero tail); read frame by frame (a part on the Python loop) they are
    the (link, arrival, ticket, frame) a Python loop's outbox holds for the same sends."""
    outs = []
    for core in ("python", "c"):
        net = SimNetwork(fat_tree(4, bw_mbps=10_000), "ecmp", SimConfig(core=core))
        net.engage_core()
        d = net.links[3][1]
        d.index = 7   # the link's place in [d for pair in net.links for d in pair]
        box: list = []
        d.outbox = box
        for i, frame in enumerate([bytes(100), b"\x01" * 60 + bytes(4000), b"\x02" * 94]):
            d.send(float(i), frame)
        outs.append([f for item in box
                     for f in (item.frames() if isinstance(item, FrameBlob) else [item])])
        assert all(isinstance(x, FrameBlob) for x in box) == (core == "c")
    assert outs[0] == outs[1] and len(outs[0]) == 3
