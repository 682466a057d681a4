"""sim.core (the event loop, wires, queues and switch hop in C) against the Python path.

Both run the same k=4 cases — every scheme, tail drops, a failure and its reroute, trimming,
the control loops rewriting tables mid-run, a split run — and must give the same results byte
for byte (tests/sim/golden.py's digest: every frame every switch took in, with its time)."""

from __future__ import annotations

import dataclasses
import hashlib
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

# tests/sim/golden.py, importable as a sibling (see test_sim_fabric.py)
from golden import cases, run_case  # noqa: E402

from model.spec import fat_tree
from sim.core import CoreLoop, engage, load
from sim.events import EventLoop
from sim.frames import ETH_IP_UDP, l2l3_header
from sim.network import SimConfig, SimNetwork
from traffic.schedules import alltoall
from traffic.wire import HDR, ROCEV2_PORT, VERSION

ROOT = Path(__file__).resolve().parents[2]


def test_event_keys_hash_as_python_does() -> None:
    """Same-time events run in the order of hash((time, id, child)) (sim.events): the C
    loop computes that hash itself, and must agree with CPython on every kind of value."""
    lib = load().lib
    rnd = random.Random(7)
    odd = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-9, 2e6, 1e300, 5e-324, float("inf"), -float("inf")]
    ids = [0, 1, -1, -2, 1 << 40, (3 << 40) + 1, 2**61 - 1, 2**61, -(2**61 - 1), 2**63 - 1,
           -2**63]
    for _ in range(20_000):
        t = rnd.choice([rnd.random() * 1e4, float(rnd.randint(0, 10**6)), rnd.choice(odd),
                        rnd.random() * 10 ** rnd.randint(-30, 30)])
        i = rnd.choice([rnd.getrandbits(64) - 2**63, rnd.choice(ids)])
        c = rnd.choice([rnd.randint(0, 10**6), rnd.choice(ids)])
        assert lib.core_hash_key(t, i, c) == hash((t, i, c)), (t, i, c)


@pytest.mark.parametrize("name", list(cases()))
def test_c_core_equals_the_python_path(name: str) -> None:
    """Every golden case (five schemes, drops, a failure): the same digest on both."""
    assert run_case(name, pipeline="native", core="c") == \
        run_case(name, pipeline="native", core="python")


def _digest(core: str, **cfg: Any) -> tuple:
    net = SimNetwork(fat_tree(4, bw_mbps=10_000), cfg.pop("scheme", "random"),
                     SimConfig(record_ingress=True, core=core, **cfg))
    loops = net.cfg.seed == 1
    if loops:
        net.start_loops(["wam", "failure"], 20.0)
    res = net.run(alltoall(16, 16 * 8_000), until_us=1e6)
    h = hashlib.sha256()
    for sw, t, port, frame in sorted(net.ingress_log, key=lambda e: e[0]):
        h.update(f"{sw} {t!r} {port} ".encode())
        h.update(frame)
    queues = {(n, p): dataclasses.astuple(q.stats) for n, s in net.switches.items()
              for p, q in s._q.items()}
    links = [(d.tx_packets, d.tx_bytes, d.lost_packets) for pair in net.links for d in pair]
    # a forked split run's parts run the events, not the caller's loop (sim.parallel)
    ran = net.split.loops[0] if net.split and net.split.loops else type(net.loop).__name__
    return (ran, res.cct_s, res.packet_hops, res.fast_hops, res.tail_drops,
            res.trims, res.events, h.hexdigest(), queues, links, net.control_events)


@pytest.mark.parametrize("cfg", [
    {"trim": True, "queue_depth": 4},
    {"fast_path": False, "queue_depth": 8},
    {"scheme": "wam", "seed": 1, "queue_depth": 16},   # control loops rewrite tables mid-run
    {"workers": 2, "trim": True, "queue_depth": 4},
    {"prop_at_hosts": True, "prop_delay_us": 2.0},   # hosts hold frames the core hands over
])
def test_c_core_equals_the_python_path_in_every_mode(cfg: dict) -> None:
    c, py = _digest("c", **dict(cfg)), _digest("python", **dict(cfg))
    assert c[0] in ("CoreLoop", "CoreLoop+hostc") and py[0] == "EventLoop"
    assert c[1:] == py[1:]


def test_a_scheduler_runs_its_callback_where_schedule_would() -> None:
    """``loop.scheduler(fn)`` (a host's NIC event, a handle of its own on the C core) puts
    ``fn`` where ``schedule(t, fn)`` would, on both loops."""
    def trace(loop: Any) -> list[tuple[float, str, Any]]:
        seen: list[tuple[float, str, Any]] = []

        def tag(name: str) -> Any:
            return lambda now, arg: seen.append((now, name, arg))

        at = loop.scheduler(tag("nic"))

        def first(now: float, _: Any) -> None:
            at(now + 1.0)
            loop.schedule(now + 1.0, tag("other"), 1)
            at(now + 0.5)
            at(now + 1.0)

        loop.schedule(0.0, first)
        loop.run()
        return seen

    net = SimNetwork(fat_tree(4, bw_mbps=10_000), "ecmp", SimConfig())
    assert engage(net) and isinstance(net.loop, CoreLoop)
    assert trace(net.loop) == trace(EventLoop()) == [
        (0.5, "nic", None), (1.0, "nic", None), (1.0, "other", 1), (1.0, "nic", None)]


def test_python_pipeline_runs_on_the_python_loop() -> None:
    net = SimNetwork(fat_tree(4, bw_mbps=10_000), "ecmp", SimConfig(pipeline="python"))
    net.run(alltoall(16, 16 * 1_000), until_us=1e6)
    assert isinstance(net.loop, EventLoop)
    net = SimNetwork(fat_tree(4, bw_mbps=10_000), "ecmp", SimConfig())
    net.run(alltoall(16, 16 * 1_000), until_us=1e6)
    assert isinstance(net.loop, CoreLoop)
    with pytest.raises(ValueError, match="core 'rust'"):
        SimNetwork(fat_tree(4), "ecmp", SimConfig(core="rust")).run(alltoall(16, 16_000))


def test_without_a_compiler_the_python_path_runs_and_says_so(tmp_path: Path) -> None:
    """No C compiler (and nothing built in the cache): one line on stderr, the same run."""
    code = textwrap.dedent("""
        from model.spec import fat_tree
        from sim.network import SimConfig, SimNetwork
        from traffic.schedules import alltoall
        net = SimNetwork(fat_tree(4, bw_mbps=10_000), "ecmp", SimConfig())
        res = net.run(alltoall(16, 16 * 1_000), until_us=1e6)
        print(type(net.loop).__name__, res.ok, res.packet_hops)
    """)
    env = {"PATH": str(tmp_path), "CC": "no-such-cc", "HOME": str(tmp_path),
           "P4FABRIC_NATIVE_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr
    name, ok, hops = out.stdout.split()
    assert name == "EventLoop" and ok == "True" and int(hops) > 0
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("sim:")]
    assert lines and all("no C compiler" in ln for ln in lines), out.stderr
    assert len(out.stderr.strip().splitlines()) == len(lines)


def _carry(core: str, payloads: list[bytes]) -> tuple[list[bytes], list[tuple]]:
    """``payloads`` as data frames h1 -> h16 across a k=4 fabric: what h16's link delivered
    and what the switches took in."""
    net = SimNetwork(fat_tree(4, bw_mbps=10_000), "ecmp",
                     SimConfig(record_ingress=True, core=core))
    src, dst = net.hosts["h1"].spec, net.hosts["h16"].spec
    up = next(d for pair in net.links for d in pair if d.src == "h1")
    down = next(d for pair in net.links for d in pair if d.dst == "h16")
    got: list[bytes] = []
    down.attach(net.loop, lambda now, arg: got.append(arg[1]), down.dst_port)
    net.engage_core()  # after attach: the C core hands h16's link's frames to the catcher
    for i, body in enumerate(payloads):
        head = HDR.pack(VERSION, 0, 1, 0, 15, 0, 0, 0, i, len(payloads), len(body), 0)
        frame = l2l3_header(src.mac, dst.mac, src.ip, dst.ip, 4791 + i, ROCEV2_PORT,
                            len(head) + len(body)) + head + body
        up.send(10.0 * i, frame)
    net.loop.run(until=1e4)
    return got, [(sw, t, port, f) for sw, t, port, f in net.ingress_log]


def test_frames_keep_every_byte_in_the_c_core() -> None:
    """The C core holds a frame as its bytes up to the last non-zero one (a data frame's zero
    payload is not stored): frames whose payload is zeros, ends in zeros, ends in one
    non-zero byte, is random or empty arrive byte for byte as on the Python path."""
    rnd = random.Random(3)
    noise = bytes(rnd.getrandbits(8) for _ in range(3000))
    payloads = [bytes(4000), noise[:1000] + bytes(3000), bytes(2999) + b"\x01",
                noise[:3000], b"", bytes(7) + b"\xff" + bytes(8), noise[:5] + bytes(1)]
    c, py = _carry("c", payloads), _carry("python", payloads)
    assert c == py
    assert len(c[0]) == len(payloads)
    for frame in c[0]:  # in the order they arrived (each its own path)
        body = payloads[HDR.unpack_from(frame, ETH_IP_UDP)[8]]
        assert frame.endswith(body) and len(frame) == ETH_IP_UDP + HDR.size + len(body)
