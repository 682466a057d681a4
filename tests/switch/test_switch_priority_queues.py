"""Strict-priority egress queues (BMv2's ``--priority-queues``) with synthetic time: a packet
of a higher ``standard_metadata.priority`` leaves before queued data and is never tail-dropped
behind it, each FIFO has its own depth and its own queueing metadata (qid = priority), the
FIFOs share the port's link rate. (fabric.p4's side: tests/p4src/test_fabric_priority.py.)"""

from __future__ import annotations

import pytest

from p4switch.pipeline.api import EgressJob
from p4switch.queues import MAX_PRIORITIES, EgressQueue, EgressQueues


def job(i: int, priority: int = 0, length: int = 1000) -> EgressJob:
    return EgressJob(egress_port=1, instance_type=0, packet_length=length, state=i,
                     priority=priority)


def _full_queue(priorities: int) -> EgressQueue:
    """A 10 Mbit/s port whose priority-0 FIFO holds its 64 packets (an incast)."""
    q = EgressQueue(port=1, rate_bps=10e6, priorities=priorities)
    assert all(q.enqueue(job(i), now_us=0) for i in range(64))
    assert not q.enqueue(job(64), now_us=0)  # full: data is tail-dropped
    return q


def test_probe_gets_through_a_full_queue_only_with_a_priority_queue() -> None:
    q = _full_queue(priorities=1)
    assert not q.enqueue(job("probe", priority=1, length=60), now_us=10)  # dropped with data
    q = _full_queue(priorities=2)
    first = q.dequeue(0)  # the head of the data FIFO starts onto the wire at 0
    assert first is not None and first[0].state == 0
    assert q.enqueue(job("probe", priority=1, length=60), now_us=10)
    assert q.stats.tail_drops == 1 and q.stats.priority_enqueued == 1
    # the probe is next on the wire, as soon as the frame being sent is out (1000 B: 800 µs)
    assert q.next_departure_us() == pytest.approx(800)
    assert q.dequeue(799) is None
    probe, meta = q.dequeue(800)
    assert probe.state == "probe"
    assert (meta.qid, meta.enq_qdepth, meta.deq_qdepth, meta.deq_timedelta) == (1, 0, 0, 790)
    # then data again, paced after the probe's own 48 µs on the wire
    nxt, meta = q.dequeue(848)
    assert nxt.state == 1 and meta.qid == 0 and meta.deq_qdepth == 62


def test_each_priority_fifo_has_its_own_depth_and_counts_its_own_depth() -> None:
    q = EgressQueue(port=1, depth=4, rate_pps=1000, priorities=3)
    assert [q.enqueue(job(i, priority=2), 0) for i in range(6)] == [True] * 4 + [False] * 2
    assert all(q.enqueue(job(10 + i), 0) for i in range(4))  # priority 0 unaffected
    assert q.enqueue(job(20, priority=1), 0)
    assert len(q) == 9 and q.depth_of(2) == 4 and q.depth_of(1) == 1 and q.depth_of(0) == 4
    order, t = [], 0
    while len(q):
        item = q.dequeue(t)
        if item is not None:
            order.append((item[0].state, item[1].qid, item[1].enq_qdepth))
        t += 100
    # strict priority: 2 before 1 before 0; enq_qdepth counts the packet's own FIFO
    assert order == [(0, 2, 0), (1, 2, 1), (2, 2, 2), (3, 2, 3), (20, 1, 0),
                     (10, 0, 0), (11, 0, 1), (12, 0, 2), (13, 0, 3)]
    assert q.stats.tail_drops == 2


def test_priorities_share_the_link_rate() -> None:
    """One link: however the FIFOs take turns, departures stay one frame time apart."""
    q = EgressQueue(port=1, rate_pps=1000, priorities=2)  # 1000 µs per packet
    for i in range(3):
        q.enqueue(job(i), 0)
        q.enqueue(job(10 + i, priority=1), 0)
    times, t = [], 0
    while len(q):
        if q.dequeue(t) is not None:
            times.append(t)
        t += 50
    assert times == [0, 1000, 2000, 3000, 4000, 5000]


def test_priority_beyond_the_queues_is_served_by_the_highest() -> None:
    q = EgressQueue(port=1, rate_pps=1000, priorities=2)
    q.enqueue(job(0), 0)
    q.enqueue(job(1, priority=7), 0)
    item = q.dequeue(0)
    assert item[0].state == 1 and item[1].qid == 1
    one = EgressQueue(port=1, rate_pps=1000)  # a single FIFO: priorities do not matter
    one.enqueue(job(0), 0)
    one.enqueue(job(1, priority=5), 0)
    assert [one.dequeue(0)[0].state, one.dequeue(1000)[0].state] == [0, 1]


def test_unlimited_empty_queue_passes_priority_through_and_flush_empties_all() -> None:
    q = EgressQueue(port=1, priorities=2)
    meta = q.pass_through(job(0, priority=1), 5)
    assert meta is not None and meta.qid == 1 and q.stats.priority_enqueued == 1
    paced = EgressQueue(port=1, rate_pps=10, priorities=4)
    for p in range(4):
        paced.enqueue(job(p, priority=p), 0)
    assert paced.pass_through(job(9, priority=3), 0) is None  # not empty: must queue
    assert paced.flush() == 4 and len(paced) == 0 and paced.next_departure_us() is None


def test_fewer_priorities_flush_what_the_removed_fifos_held() -> None:
    qs = EgressQueues(rate_pps=10, priorities=3)
    q = qs.get(1)
    q.enqueue(job(0), 0)
    q.enqueue(job(1, priority=2), 0)
    qs.set_priorities(2)
    assert len(q) == 1 and q.stats.flushed == 1 and qs.get(2).priorities == 2
    for bad in (0, MAX_PRIORITIES + 1, True, 1.5):
        with pytest.raises(ValueError):
            EgressQueues(priorities=bad)

