"""Event loop, link and queue timing of the simulator against hand-computed answers."""

from __future__ import annotations

import pytest

from p4switch import Drop, EgressJob, EgressResult, IngressResult, Output
from sim.events import EventLoop
from sim.link import Link
from sim.switch import SimSwitch


def test_events_run_in_time_order_ties_in_scheduling_order() -> None:
    loop = EventLoop()
    seen: list[tuple[float, str]] = []
    for t, tag in ((5.0, "c"), (1.0, "a"), (5.0, "d"), (2.5, "b")):
        loop.schedule(t, lambda now, x: seen.append((now, x)), tag)
    assert loop.run() == 5.0
    assert seen == [(1.0, "a"), (2.5, "b"), (5.0, "c"), (5.0, "d")]
    assert loop.events_run == 4


def test_events_scheduled_from_callbacks_until_and_stop() -> None:
    loop = EventLoop()
    seen: list[float] = []

    def tick(now: float, n: int) -> None:
        seen.append(now)
        if n:
            loop.schedule(now + 10.0, tick, n - 1)
        if now >= 30.0:
            loop.stop()

    loop.schedule(0.0, tick, 10)
    assert loop.run(until=15.0) == 15.0
    assert seen == [0.0, 10.0]
    loop.run()
    assert seen == [0.0, 10.0, 20.0, 30.0]  # stop() after the event at 30
    loop.schedule(-1.0, tick, 0)  # the past is clamped to now
    loop.run()
    assert seen[-1] == 30.0


def test_events_run_in_slices_of_max_events_as_in_one_go() -> None:
    def trace(slice_: int | None) -> tuple[list[float], list[int]]:
        loop = EventLoop()
        seen: list[float] = []
        ran: list[int] = []

        def tick(now: float, n: int) -> None:
            seen.append(now)
            if n:
                loop.schedule(now + 1.5, tick, n - 1)
                loop.schedule(now + 1.5, lambda t, _: seen.append(-t))

        loop.schedule(0.0, tick, 6)
        while not loop.done:
            before = loop.events_run
            loop.run(until=7.0, max_events=slice_)
            ran.append(loop.events_run - before)
        return seen, ran

    whole, ran_whole = trace(None)
    sliced, ran_sliced = trace(3)
    assert sliced == whole and whole[-1] == -6.0   # nothing after until=7.0 ran
    assert ran_whole == [9] and ran_sliced == [3, 3, 3, 0]  # the last slice finds 7.5 > until


def test_link_serialisation_propagation_and_failure() -> None:
    ln = Link("a", 1, "b", 2, rate_bps=1e9, prop_us=5.0)
    assert ln.serialisation_us(1250) == pytest.approx(10.0)  # 10,000 bits at 1 Gb/s
    assert ln.arrival_us(100.0, 1250) == pytest.approx(115.0)
    ln.fail(200.0)
    assert ln.arrival_us(201.0, 1250) is None
    assert (ln.tx_packets, ln.lost_packets) == (1, 1)
    ln.restore()
    assert ln.arrival_us(300.0, 125) == pytest.approx(306.0)
    with pytest.raises(ValueError):
        Link("a", 1, "b", 2, rate_bps=0.0)


class ForwardPipeline:
    """A stand-in pipeline: every packet from port 1 goes to port 2; egress records the
    queueing metadata it is given."""

    def __init__(self) -> None:
        self.egress_seen: list[tuple[int, int, int, int, int]] = []

    def ingress(self, data: bytes, port: int, now_us: int) -> IngressResult:
        if data.startswith(b"drop"):
            return IngressResult(drops=[Drop("mark_to_drop")])
        return IngressResult(jobs=[EgressJob(2, 0, len(data), data)])

    def egress(self, job: EgressJob, now_us: int, q) -> EgressResult:  # noqa: ANN001
        self.egress_seen.append((now_us, q.enq_timestamp, q.enq_qdepth, q.deq_timedelta,
                                 q.deq_qdepth))
        return EgressResult(outputs=[Output(job.egress_port, job.state)])


class FastForwardPipeline(ForwardPipeline):
    """The same with a fused path, as p4switch's Pipeline has."""

    def __init__(self) -> None:
        super().__init__()
        self.fast = 0

    def process_fast(self, data: bytes, port: int, now_us: int):  # noqa: ANN201
        self.fast += 1
        self.egress_seen.append((now_us, now_us, 0, 0, 0))
        return (2, data)


def _one_switch(pipe: object, depth: int = 64) -> tuple[EventLoop, SimSwitch, list]:
    loop = EventLoop()
    sw = SimSwitch("s1", pipe, loop, queue_depth=depth, uptime_us=0.0)
    got: list[tuple[float, bytes]] = []
    out = Link("s1", 2, "sink", 0, rate_bps=1e9, prop_us=5.0)
    sw.connect(2, out, lambda t, arg: got.append((t, arg[1])), 0)
    return loop, sw, got


@pytest.mark.parametrize("pipe_cls", [ForwardPipeline, FastForwardPipeline])
def test_switch_queue_serialises_at_link_rate_with_v1model_metadata(pipe_cls: type) -> None:
    """Three 1250-byte frames arrive together: they leave 10 µs apart (1 Gb/s) and arrive
    5 µs later; the queue reports what BMv2 would (enq/deq depth, time in queue)."""
    pipe = pipe_cls()
    loop, sw, got = _one_switch(pipe)
    for i in range(3):
        loop.schedule(0.0, sw.receive, (1, bytes([i]) * 1250))
    loop.run()
    assert [t for t, _ in got] == pytest.approx([15.0, 25.0, 35.0])
    assert [f[0] for _, f in got] == [0, 1, 2]
    # (egress time, enq_timestamp, enq_qdepth, deq_timedelta, deq_qdepth)
    assert pipe.egress_seen == [(0, 0, 0, 0, 0), (10, 0, 0, 10, 1), (20, 0, 1, 20, 0)]
    q = sw.queue(2)
    assert (q.stats.enqueued, q.stats.dequeued, q.stats.tail_drops) == (3, 3, 0)
    if pipe_cls is FastForwardPipeline:
        assert pipe.fast == 1  # only the first found the switch idle


def test_fast_path_copies_onto_one_port_leave_back_to_back() -> None:
    """A packet whose fused path yields two outputs on one port (a clone or replica onto the
    same port): the second follows the first once the wire is free, nothing is left queued."""
    from p4switch import ProcessResult

    class Twice(FastForwardPipeline):
        def process_fast(self, data: bytes, port: int, now_us: int):  # noqa: ANN201
            self.fast += 1
            return ProcessResult(outputs=[Output(2, data), Output(2, data[::-1])])

    pipe = Twice()
    loop, sw, got = _one_switch(pipe)
    loop.schedule(0.0, sw.receive, (1, b"ab" * 625))   # 1250 bytes: 10 µs at 1 Gb/s
    loop.run()
    assert [t for t, _ in got] == pytest.approx([15.0, 25.0])
    assert [f[:2] for _, f in got] == [b"ab", b"ba"]
    q = sw.queue(2)
    assert len(q) == 0 and (q.stats.enqueued, q.stats.dequeued) == (2, 2)
    assert q.link_free_us == pytest.approx(20.0) and pipe.fast == 1


def test_switch_tail_drops_at_queue_depth() -> None:
    pipe = ForwardPipeline()
    loop, sw, got = _one_switch(pipe, depth=2)
    for i in range(5):
        loop.schedule(0.0, sw.receive, (1, bytes([i]) * 1250))
    loop.schedule(0.0, sw.receive, (1, b"drop" * 10))
    loop.run()
    # the first leaves at once, two wait, the last two find the queue full
    assert [f[0] for _, f in got] == [0, 1, 2]
    assert sw.tail_drops() == 2
    assert sw.pipeline_drops == 1
    assert sw.packets_in == 6


def test_switch_output_to_unconnected_port_is_counted() -> None:
    class ToNowhere(ForwardPipeline):
        def ingress(self, data: bytes, port: int, now_us: int) -> IngressResult:
            return IngressResult(jobs=[EgressJob(7, 0, len(data), data)])

    loop, sw, got = _one_switch(ToNowhere())
    loop.schedule(0.0, sw.receive, (1, b"x" * 100))
    loop.run()
    assert got == [] and sw.unconnected == 1


def test_link_delivers_in_order_with_one_event_per_busy_wire() -> None:
    """Frames on a wire arrive in order at their times; only the head has an event."""
    loop = EventLoop()
    got: list[tuple[float, int, bytes]] = []
    ln = Link("a", 1, "b", 2, rate_bps=8e6, prop_us=5.0)   # 1 µs per byte
    ln.attach(loop, lambda t, arg: got.append((t, *arg)), 7)
    for i, start in enumerate((0.0, 10.0, 10.5)):
        ln.send(start, bytes([i]) * 10)
    assert len(loop) == 1
    loop.run()
    assert got == [(15.0, 7, b"\x00" * 10), (25.0, 7, b"\x01" * 10),
                   (25.5, 7, b"\x02" * 10)]
    assert ln.tx_packets == 3 and ln.tx_bytes == 30
    ln.prop_us = 0.0   # a model that would let a later frame overtake: refused
    ln.send(100.0, b"x" * 10)
    with pytest.raises(ValueError, match="before the one sent ahead"):
        ln.send(100.0, b"y")
