"""The run-time control channel (``--control-socket``): ControlClient against a running switch
with in-memory ports, refusals that leave state unchanged, the socket's life cycle, and the
``python -m p4switch.control`` command line (also against a real ``p4switch`` process)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from switch_fakes import fake_factory

from p4switch.control import ControlClient, ControlError, ControlServer
from p4switch.ports import MemoryPort
from p4switch.switch import Switch


@pytest.fixture
def short_tmp():
    """A short directory: AF_UNIX paths are limited to 107 bytes, pytest's tmp_path may not be."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="p4ft-ctl-") as d:
        yield Path(d)


@pytest.fixture
def served(short_tmp):
    sw = Switch(device_id=7, pipeline_factory=fake_factory)
    sw.add_port(MemoryPort(1))
    sw.add_port(MemoryPort(3))
    sw.start()
    server = ControlServer(sw, short_tmp / "s1.ctl")
    server.start()
    try:
        yield sw, server
    finally:
        server.stop()
        sw.stop(log_stats=False)


def test_client_sets_rates_and_depths_at_run_time(served):
    sw, server = served
    with ControlClient(server.path) as c:
        pong = c.ping()
        assert pong["device_id"] == 7 and pong["ports"] == [1, 3] and pong["uptime_us"] >= 0
        r = c.set_port_rate(3, "50Mbps")
        assert r == {"port": 3, "rate_bps": 50e6, "rate_pps": 0, "queue_depth_limit": 64}
        assert sw.port_rate(3).bps == 50e6 and not sw._inline
        assert c.set_port_rate(None, 1e9)["rate_bps"] == 1e9  # every port, bits/s as a number
        assert sw.port_rate(1).bps == 1e9 and sw.port_rate(3).bps == 1e9
        assert c.set_queue_rate(1, 2000)["rate_pps"] == 2000
        assert sw.port_rate(1).pps == 2000 and sw.port_rate(1).bps is None
        assert c.set_queue_depth(3, 16)["queue_depth_limit"] == 16
        assert sw.queues.get(3).depth == 16
        stats = c.port_stats()
        assert set(stats) == {1, 3}
        assert stats[3]["rate_bps"] == 1e9 and stats[3]["queue_depth_limit"] == 16
        assert stats[1]["oper_state"] == "up" and stats[1]["oper_up"] == 1
        assert c.port_stats(1)[1]["rate_pps"] == 2000
        c.set_port_rate(None, 0)  # unlimited again: the inline path comes back
        assert sw._inline and sw.port_rate(3).bps is None


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda c: c.set_port_rate(3, "fast"), "not a bit rate"),
        (lambda c: c.set_port_rate(3, "100MBps"), "not a bit rate"),
        (lambda c: c.set_port_rate(600, "1G"), "out of range"),
        (lambda c: c.set_queue_rate(3, -1), ">= 0"),
        (lambda c: c.set_queue_depth(3, 0), ">= 1"),
        (lambda c: c.port_stats(9), "no port 9"),
        (lambda c: c.call("reboot"), "unknown cmd"),
        (lambda c: c.call("set_port_rate", port=3, rate="1G", burst=9), "unknown argument"),
        (lambda c: c.call("set_port_rate", port=3), "'rate' is required"),
        (lambda c: c.call("set_queue_depth", port="3", depth=4), "must be an integer"),
    ],
)
def test_bad_requests_are_refused_in_one_line_and_change_nothing(served, call, message):
    sw, server = served
    with ControlClient(server.path) as c:
        c.set_port_rate(3, "10M")
        before = sw.port_stats()
        with pytest.raises(ControlError) as e:
            call(c)
        assert message in str(e.value) and "\n" not in str(e.value)
        assert sw.port_stats() == before
        assert c.ping()["device_id"] == 7  # the connection survives a refusal


def test_garbage_on_the_wire_gets_an_error_reply_not_a_dead_server(served):
    _sw, server = served
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(server.path)
        f = s.makefile("rwb")
        for line in (b"not json\n", b"[1, 2]\n", b"\xff\xfe\n", b'{"cmd": "ping"}\n'):
            f.write(line)
            f.flush()
            reply = json.loads(f.readline())
            assert reply["ok"] is (line == b'{"cmd": "ping"}\n'), (line, reply)
        f.write(b"x" * (70 * 1024) + b"\n")  # over MAX_LINE: refused, connection closed
        f.flush()
        assert "longer than" in json.loads(f.readline())["error"]
        assert f.readline() == b""
    with ControlClient(server.path) as c:  # still serving
        assert c.ping()["device_id"] == 7


def test_seed_random_restarts_the_programs_random_sequence(served):
    import random
    from types import SimpleNamespace

    sw, server = served
    with ControlClient(server.path) as c:
        assert c.seed_random(5) is False            # no program loaded: nothing to seed
        sw.set_pipeline(SimpleNamespace(rng=random.Random()))   # as Pipeline has
        assert c.seed_random(5) is True
        first = [sw.pipeline.rng.random() for _ in range(3)]
        assert c.seed_random(5) is True
        assert [sw.pipeline.rng.random() for _ in range(3)] == first
        with pytest.raises(ControlError, match="'seed' must be an integer >= 0"):
            c.call("seed_random", seed=-1)


def test_socket_life_cycle(short_tmp):
    sw = Switch()
    path = short_tmp / "s.ctl"
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))  # a socket file nobody listens on: left by a crashed switch
    stale.close()
    server = ControlServer(sw, path)
    server.start()
    try:
        with pytest.raises(OSError, match="another switch"):
            ControlServer(sw, path).start()  # a live one is not taken over
        with ControlClient(path) as c:
            assert c.ping()["ports"] == []
    finally:
        server.stop()
    assert not path.exists()
    server.stop()  # idempotent
    path.write_text("not a socket")
    with pytest.raises(OSError, match="not a socket"):
        ControlServer(sw, path).start()
    with pytest.raises(ControlError, match="cannot connect"):
        ControlClient(short_tmp / "none.ctl")
    sw.stop(log_stats=False)


def ctl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "p4switch.control", *args],
                          capture_output=True, text=True, timeout=30)


def test_cli_help_and_argument_errors():
    r = ctl("--help")
    assert r.returncode == 0
    for word in ("set-port-rate", "set-queue-rate", "set-queue-depth", "port-stats", "ping"):
        assert word in r.stdout
    r = ctl("/tmp/x.ctl", "set-port-rate", "3", "fast")
    assert r.returncode == 2 and "not a bit rate" in r.stderr.strip().splitlines()[-1]
    r = ctl("/tmp/p4ft-no-such.ctl", "ping")
    assert r.returncode == 1 and r.stderr.strip().startswith("p4switch.control: error: cannot")
    assert len(r.stderr.strip().splitlines()) == 1


def test_p4switch_serves_the_control_socket(short_tmp):
    """``p4switch --control-socket``: the CLI client changes a port's rate in the running
    process, port-stats shows it, and SIGTERM removes the socket."""
    path = short_tmp / "s9.ctl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "p4switch", "--no-p4", "--no-grpc", "-i", "1@pcap:", "-i",
         "3@pcap:", "--queue-rate", "1:500", "--port-rate", "3:10M", "--port-rate", "1M",
         "--control-socket", str(path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not path.exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "no control socket"
            time.sleep(0.05)
        r = ctl(str(path), "port-stats", "--json")
        assert r.returncode == 0, r.stderr
        stats = json.loads(r.stdout)
        # the switch-wide --port-rate applies first; the per-port flags override it
        assert stats["3"]["rate_bps"] == 10e6 and stats["3"]["rate_pps"] == 0
        assert stats["1"]["rate_pps"] == 500 and stats["1"]["rate_bps"] == 0
        r = ctl(str(path), "set-port-rate", "3", "50Mbps")
        assert r.returncode == 0 and r.stdout.strip() == "port 3: rate 50Mbps, queue depth 64"
        r = ctl(str(path), "port-stats")
        assert r.returncode == 0
        row = r.stdout.splitlines()[2].split()
        assert row[:3] == ["3", "up", "50Mbps"]
        r = ctl(str(path), "set-queue-depth", "all", "8")
        assert r.returncode == 0 and "all ports" in r.stdout and "depth 8" in r.stdout
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
        proc.wait(10)
    assert proc.returncode == 0
    assert not path.exists()
