"""Egress queue semantics with synthetic time: depth/tail drop, BMv2-style queueing metadata,
exact pacing at a configured packet rate or bit rate (serialisation time = len * 8 / rate), and
the bit-rate parser behind ``--port-rate``."""

from __future__ import annotations

import math

import pytest

from p4switch.pipeline.api import EgressJob
from p4switch.queues import (
    DEFAULT_QUEUE_DEPTH,
    EgressQueue,
    EgressQueues,
    format_bit_rate,
    parse_bit_rate,
)


def job(i: int, port: int = 1, length: int = 64) -> EgressJob:
    return EgressJob(egress_port=port, instance_type=0, packet_length=length, state=i)


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


@pytest.mark.parametrize("rate", [{"rate_bps": 8e9}, {"rate_pps": 1e6}, {}])
def test_transit_counts_and_clocks_as_enqueue_then_dequeue(rate):
    """The simulator's cut-through: same stats and departure clock as enqueue + dequeue at
    the same instant, and no transit while the queue holds packets or the link is busy."""
    a, b = EgressQueue(port=1, **rate), EgressQueue(port=1, **rate)
    t = 10.0
    for length in (1000, 64, 1500):
        assert a.enqueue(job(0, length=length), t) and a.dequeue(t) is not None
        free = b.transit(length, t)
        assert free == max(t, a._next_free_us) and a._next_free_us == b._next_free_us
        assert a.stats == b.stats
        t = free
    if a.limited:  # the link is busy until ``free``: no cut-through before then
        assert b.transit(64, t - 0.5) is None
    assert b.enqueue(job(1), t) and b.transit(64, t + 100) is None
    assert b.stats.enqueued == a.stats.enqueued + 1 and b.stats.dequeued == a.stats.dequeued


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


def test_bit_rate_serialises_each_frame_for_its_length():
    """100 Mbps: a 1500-byte frame takes 120 µs, a 64-byte one 5.12 µs, 1000 bytes 80 µs.
    The first leaves at its enqueue time, each next one when the previous one's bits are out."""
    q = EgressQueue(port=2, depth=8, rate_bps=100e6)
    assert q.limited and q.rate_pps is None
    for i, length in enumerate((1500, 64, 1000, 1500)):
        assert q.enqueue(job(i, 2, length), now_us=10)
    departures = []
    while len(q):
        due = q.next_departure_us()
        assert due is not None
        t = math.ceil(due)  # the first whole µs at or after the due time
        if departures:
            assert q.dequeue(t - 1) is None  # one µs early: still serialising the previous one
        item = q.dequeue(t)
        assert item is not None
        departures.append(due)
        assert item[1].deq_timedelta == t - 10
    assert departures == pytest.approx([10, 130, 135.12, 215.12])


def test_bit_rate_metadata_reflects_congestion():
    """10 frames of 1250 bytes offered at once to a 10 Mbps port (1000 µs each): the program
    sees depth ahead at enqueue 0..9, depth left 9..0 and queueing delay k * 1000 µs."""
    q = EgressQueue(port=1, depth=64, rate_bps=10e6)
    for i in range(10):
        q.enqueue(job(i, 1, 1250), now_us=0)
    got = [q.dequeue(k * 1000) for k in range(10)]
    assert all(g is not None for g in got)
    metas = [g[1] for g in got if g is not None]
    assert [m.enq_qdepth for m in metas] == list(range(10))
    assert [m.deq_qdepth for m in metas] == list(range(9, -1, -1))
    assert [m.deq_timedelta for m in metas] == [k * 1000 for k in range(10)]
    # one µs early is too early for a paced head
    q.enqueue(job(10, 1, 1250), now_us=9500)
    assert q.next_departure_us() == 10_000
    assert q.dequeue(9999) is None and q.dequeue(10_000) is not None


def test_bit_rate_long_run_rate_is_exact_when_served_late():
    q = EgressQueue(port=1, depth=64, rate_bps=8e6)  # 1 byte per µs
    for i in range(30):
        q.enqueue(job(i, 1, 100), now_us=0)  # 100 µs each
    assert len(list(q.drain(1000))) == 11  # due at 0, 100, ..., 1000
    assert len(list(q.drain(2950))) == 19  # 1100..2900: all
    assert q.stats.dequeued == 30


def test_rate_change_applies_from_the_next_departure_and_kinds_exclude_each_other():
    q = EgressQueue(port=1, depth=8, rate_bps=8e6)
    for i in range(3):
        q.enqueue(job(i, 1, 500), now_us=0)
    assert q.dequeue(0) is not None  # busy until 500
    q.set_rate_bps(16e6)  # the next frame (500 bytes) now takes 250 µs once it starts
    assert q.next_departure_us() == 500
    assert q.dequeue(500) is not None
    assert q.next_departure_us() == 750
    q.set_rate(1000)  # packets/s replaces the bit rate
    assert q.rate_bps is None and q.rate_pps == 1000
    q.set_rate_bps(1e6)
    assert q.rate_pps is None and q.rate_bps == 1e6
    q.set_rate_bps(0)
    assert not q.limited and len(list(q.drain(750))) == 1
    with pytest.raises(ValueError):
        EgressQueue(port=1, rate_pps=10, rate_bps=1e6)


def test_queues_default_bit_rate_with_per_port_packet_rate():
    qs = EgressQueues(depth=4, rate_bps=100e6)
    assert not qs.all_unlimited()
    qs.set_rate(3, 500)
    assert qs.get(1).rate_bps == 100e6 and qs.get(1).rate_pps is None
    assert qs.get(3).rate_pps == 500 and qs.get(3).rate_bps is None
    assert qs.rate(7).bps == 100e6  # not created yet: the default
    qs.set_rate_bps(None, None)
    assert qs.get(1).rate_bps is None
    assert qs.get(3).rate_pps is None  # "all ports" replaces the override
    assert qs.all_unlimited()
    qs.set_rate_bps(5, 1e9)
    assert not qs.all_unlimited() and qs.get(5).rate_bps == 1e9


@pytest.mark.parametrize(
    "text, bps",
    [
        ("100Mbps", 100e6), ("1Gbps", 1e9), ("10M", 10e6), ("2.5G", 2.5e9), ("64kbps", 64e3),
        ("1500000", 1.5e6), ("100mbit", 100e6), ("1e9", 1e9), ("0", 0.0), (" 40 Gbit/s ", 40e9),
        (25_000_000, 25e6),
    ],
)
def test_parse_bit_rate(text, bps):
    assert parse_bit_rate(text) == pytest.approx(bps)


@pytest.mark.parametrize("text", ["fast", "100MBps", "-5M", "", "10 Mpps", "1.2.3G", "inf",
                                  float("nan"), -1, True, [1]])
def test_parse_bit_rate_rejects_with_one_line(text):
    with pytest.raises(ValueError) as e:
        parse_bit_rate(text)
    assert "\n" not in str(e.value) and "rate" in str(e.value)


def test_format_bit_rate():
    assert [format_bit_rate(r) for r in (100e6, 2.5e9, 64e3, 12, None)] == [
        "100Mbps", "2.5Gbps", "64kbps", "12bps", "unlimited"]
