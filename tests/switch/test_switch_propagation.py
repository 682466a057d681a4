"""Propagation delay emulated by the switch (p4switch/propagation.py, ``set_port_delay``): a
frame leaves the egress queue as before and reaches its port no earlier than the delay later,
in order, on each of the switch's packet paths; the control channel and the CLI set it."""

from __future__ import annotations

import time

import pytest
from switch_fakes import FAKES, fake_factory, frame

from p4switch.control import ControlServer
from p4switch.ports import MemoryPort
from p4switch.propagation import DelayLine
from p4switch.switch import Switch


def test_delay_line_is_a_fifo_released_at_push_time_plus_delay() -> None:
    line = DelayLine(3, 100.0)
    assert line.next_due_us() is None and line.pop_due(1e9) == []
    line.push(10, b"a")
    line.push(15, b"b")
    line.push(15, b"c")
    assert line.next_due_us() == 110 and len(line) == 3 and line.max_in_flight == 3
    assert line.pop_due(109.9) == []
    assert line.pop_due(110) == [b"a"]
    assert line.pop_due(200) == [b"b", b"c"] and len(line) == 0
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="port 3: a propagation delay is > 0 µs"):
            DelayLine(3, bad)


def test_a_frame_arrives_after_its_last_bit_is_out_plus_the_delay() -> None:
    """Store-and-forward: arrival = max(push, previous frame's last bit) + serialisation +
    delay. Pushed at the same instant (a late loop), frames leave back to back."""
    line = DelayLine(1, 100.0)
    line.push(10, b"a", 12.0)
    line.push(10, b"b", 1.0)     # behind a's 12 µs on the wire
    line.push(500, b"c", 12.0)   # an idle wire: its own serialisation only
    assert [t for t, _ in line._wire] == [122.0, 123.0, 612.0]
    assert line.pop_due(122.9) == [b"a"] and line.pop_due(1e9) == [b"b", b"c"]
    # a fixed extra (a host uplink's serialisation) delays the frame, not the next one's start
    line.push(1000, b"d", 12.0, extra_us=12.0)
    line.push(1000, b"e", 12.0)
    assert [t for t, _ in line._wire] == [1124.0, 1124.0]


def _first_out_of_a_delayed_port(host_port: bool, not_before_s: float) -> tuple[list, list]:
    """A 1000-byte frame through port 2 at 8 kb/s (1 s per frame) with a 1 µs delay: what is
    out after ``not_before_s``, and what is out after about 30 s more."""
    sw = Switch(pipeline_factory=fake_factory)
    p1, p2 = MemoryPort(1), MemoryPort(2)
    sw.add_port(p1)
    sw.add_port(p2)
    sw.set_pipeline(FAKES["fast"]())
    sw.set_port_rate(2, 8000.0)
    sw.set_port_delay(2, 1.0)
    if host_port:
        sw.host_ports = {2}
    f = frame(2, size=1000)
    with sw:
        p1.feed([f])
        early = p2.wait_sent(1, timeout=not_before_s)
        got = p2.wait_sent(1, timeout=30)
    return early, [x == f for x in got]


def test_a_rate_limited_delayed_port_adds_each_frames_serialisation() -> None:
    """The switch hands the line the frame's time at its port's rate: nothing is out after
    0.5 s (the old cut-through line sent it after 1 µs) and the frame is out after about a
    second."""
    assert _first_out_of_a_delayed_port(False, 0.5) == ([], [True])


def test_a_host_port_also_carries_the_host_uplinks_serialisation() -> None:
    """``host_ports``: the frame takes 1 s on each of the host link's two directions, so it is
    not out after 1.5 s (one frame time would be) and is out after about two seconds."""
    assert _first_out_of_a_delayed_port(True, 1.5) == ([], [True])


@pytest.mark.parametrize("kind", list(FAKES))
def test_frames_arrive_no_earlier_than_the_delay_and_in_order(kind: str) -> None:
    delay_s = 0.2
    sw = Switch(pipeline_factory=fake_factory)
    p1, p2 = MemoryPort(1), MemoryPort(2)
    sw.add_port(p1)
    sw.add_port(p2)
    sw.set_pipeline(FAKES[kind]())
    assert sw._inline
    sw.set_port_delay(2, delay_s * 1e6)
    assert sw.port_delay(2) == delay_s * 1e6 and sw.port_delay(1) == 0.0
    assert not sw._inline           # a delayed port takes the queued path
    frames = [frame(2, seq=i) for i in range(20)]
    with sw:
        t0 = time.monotonic()
        p1.feed(frames)
        early = p2.wait_sent(1, timeout=delay_s / 2)
        got = p2.wait_sent(20, timeout=30)
        took = time.monotonic() - t0
    assert early == []              # nothing reaches the port before the delay is up ...
    assert got == frames            # ... then every frame, in order, unchanged
    assert took >= delay_s
    stats = sw.port_stats()[2]
    assert stats["tx_packets"] == 20 and stats["queue_dequeued"] == 20
    assert sw.delay_lines[2].max_in_flight >= 1


def test_removing_a_delay_delivers_what_is_on_the_wire_and_restores_inline() -> None:
    sw = Switch(pipeline_factory=fake_factory)
    p1, p2 = MemoryPort(1), MemoryPort(2)
    sw.add_port(p1)
    sw.add_port(p2)
    sw.set_pipeline(FAKES["fast"]())
    sw.set_port_delay(None, 60e6)   # a minute: only the removal can deliver them
    assert set(sw.delay_lines) == {1, 2}
    with sw:
        p1.feed([frame(2, seq=i) for i in range(3)])
        deadline = time.monotonic() + 30
        while len(sw.delay_lines[2]) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert p2.sent == [] and len(sw.delay_lines[2]) == 3
        sw.set_port_delay(None, None)
        got = p2.wait_sent(3, timeout=10)
    assert len(got) == 3 and sw.delay_lines == {} and sw._inline
    with pytest.raises(ValueError, match="finite number of µs"):
        sw.set_port_delay(1, -1.0)


def test_control_channel_sets_and_refuses_delays() -> None:
    sw = Switch(pipeline_factory=fake_factory)
    sw.add_port(MemoryPort(1))
    server = ControlServer(sw, "/nonexistent/never-started.sock")
    ok = server.handle({"cmd": "set_port_delay", "port": 1, "delay_us": 1500})
    assert ok == {"ok": True, "result": {"port": 1, "delay_us": 1500.0}}
    assert sw.port_delay(1) == 1500.0
    bad = server.handle({"cmd": "set_port_delay", "port": 1, "delay_us": -3})
    assert not bad["ok"] and "'delay_us' must be a number >= 0" in bad["error"]
    assert sw.port_delay(1) == 1500.0   # a refused request changes nothing
    assert server.handle({"cmd": "set_port_delay", "port": 1, "delay_us": 0})["ok"]
    assert sw.port_delay(1) == 0.0 and sw.delay_lines == {}
    sw.stop(log_stats=False)
