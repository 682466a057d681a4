"""Egress queue semantics with synthetic time: depth/tail drop, BMv2-style queueing metadata,
exact pacing at a configured rate."""

from __future__ import annotations

import pytest

from p4switch.pipeline.api import EgressJob
from p4switch.queues import DEFAULT_QUEUE_DEPTH, EgressQueue, EgressQueues


def job(i: int, port: int = 1) -> EgressJob:
    return EgressJob(egress_port=port, instance_type=0, packet_length=64, state=i)


def test_default_depth_is_64_and_tail_drop_is_counted():
    q = EgressQueue(port=1, rate_pps=1000)
    assert q.depth == DEFAULT_QUEUE_DEPTH == 64
    accepted = [q.enqueue(job(i), now_us=0) for i in range(100)]
    assert accepted == [True] * 64 + [False] * 36
    assert len(q) == 64
    assert q.stats.tail_drops == 36
    assert q.stats.enqueued == 64
    assert q.stats.max_depth_seen == 64


def test_queueing_metadata_matches_simple_switch():
    """enq_qdepth: packets ahead at enqueue; deq_qdepth: packets left after dequeue;
    deq_timedelta: time spent; enq_timestamp: enqueue time."""
    q = EgressQueue(port=3, depth=8, rate_pps=1000)  # one packet per 1000 µs
    for i in range(4):
        assert q.enqueue(job(i, 3), now_us=100 + i)
    out = []
    t = 100
    while len(q):
        item = q.dequeue(t)
        if item is not None:
            out.append((t, item))
        t += 1
    assert [it[1][0].state for it in out] == [0, 1, 2, 3]
    metas = [it[1][1] for it in out]
    assert [m.enq_qdepth for m in metas] == [0, 1, 2, 3]
    assert [m.deq_qdepth for m in metas] == [3, 2, 1, 0]
    assert [m.enq_timestamp for m in metas] == [100, 101, 102, 103]
    # paced departures: 100, 1100, 2100, 3100
    assert [it[0] for it in out] == [100, 1100, 2100, 3100]
    assert [m.deq_timedelta for m in metas] == [0, 999, 1998, 2997]


def test_rate_catches_up_when_served_late_but_never_exceeds_long_run_rate():
    q = EgressQueue(port=1, depth=64, rate_pps=10_000)  # 100 µs per packet
    for i in range(20):
        q.enqueue(job(i), now_us=0)
    # the loop wakes up late, at 1000 µs: 11 packets are due (0, 100, ..., 1000)
    assert len(list(q.drain(1000))) == 11
    assert len(list(q.drain(1000))) == 0
    assert len(list(q.drain(1899))) == 8  # 1100..1800
    assert q.next_departure_us() == 1900


def test_idle_queue_does_not_bank_credit():
    q = EgressQueue(port=1, rate_pps=1000)
    q.enqueue(job(0), 0)
    assert q.dequeue(0) is not None
    # long idle, then a burst: the first leaves at once, the next one interval later
    q.enqueue(job(1), 1_000_000)
    q.enqueue(job(2), 1_000_000)
    assert q.dequeue(1_000_000) is not None
    assert q.dequeue(1_000_500) is None
    assert q.dequeue(1_001_000) is not None


def test_unlimited_queue_passes_through_only_when_empty():
    q = EgressQueue(port=1)
    m = q.pass_through(job(0), now_us=42)
    assert m is not None and m.enq_timestamp == 42 and m.enq_qdepth == 0 and m.deq_qdepth == 0
    q.set_rate(100)
    assert q.pass_through(job(1), 43) is None
    q.set_rate(None)
    q.enqueue(job(2), 44)
    assert q.pass_through(job(3), 45) is None  # keep FIFO order behind the queued one
    assert q.stats.enqueued == 2 and q.stats.dequeued == 1


def test_flush_and_per_port_overrides():
    qs = EgressQueues(depth=4, rate_pps=None)
    qs.set_rate(2, 500)
    qs.set_depth(3, 2)
    assert qs.get(1).rate_pps is None and qs.get(1).depth == 4
    assert qs.get(2).rate_pps == 500
    assert qs.get(3).depth == 2
    qs.set_rate(None, 100)  # all ports
    assert all(q.rate_pps == 100 for q in qs.queues.values())
    assert qs.get(9).rate_pps == 100
    for i in range(3):
        qs.get(2).enqueue(job(i, 2), 0)
    qs.backlogged.add(2)
    assert qs.flush() == 3
    assert not qs.backlogged and len(qs.get(2)) == 0 and qs.get(2).stats.flushed == 3


def test_bad_depth_rejected():
    with pytest.raises(ValueError):
        EgressQueue(port=1, depth=0)
    with pytest.raises(ValueError):
        EgressQueues(depth=0)
