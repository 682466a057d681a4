"""AF_PACKET ports between real network namespaces, with the fake pipeline: frames cross the
switch, own outgoing frames are not re-received, and bad frames (fuzz) never stop it."""

from __future__ import annotations

import os
import random

import pytest
from switch_fakes import FakePipeline, frame
from switch_netns import Topo, recv_all

from p4switch.switch import Switch

pytestmark = pytest.mark.root


@pytest.fixture
def topo():
    with Topo(tag="r") as t:
        yield t


@pytest.fixture
def switch(topo: Topo):
    sw = Switch()
    for h in topo.hosts:
        sw.add_interface(h.port, h.sw_ifname)
    sw.set_pipeline(FakePipeline())
    sw.start()
    try:
        yield sw
    finally:
        sw.stop(log_stats=False)


def _mine(data: bytes) -> bool:
    return len(data) >= 14 and data[12:14] == b"\x88\xb5"  # local experimental EtherType


def test_frames_cross_and_are_not_looped(topo: Topo, switch: Switch):
    s1, s2 = topo.host_socket(1), topo.host_socket(2)
    try:
        sent = []
        for i in range(200):
            f = bytearray(frame(2, seq=i, size=100))
            f[12:14] = b"\x88\xb5"
            sent.append(bytes(f))
            s1.send(bytes(f))
        got = recv_all(s2, timeout=1.0, want=200, accept=_mine)
        assert got == sent
        # nothing came back to h1: the switch ignored its own transmissions on port 2
        assert recv_all(s1, timeout=0.2, accept=_mine) == []
        st = switch.port_stats()
        assert st[2]["rx_packets"] == 0 or st[2]["rx_packets"] < 5  # only stray kernel frames
        assert st[1]["rx_packets"] >= 200 and st[2]["tx_packets"] == 200
    finally:
        s1.close()
        s2.close()


def test_garbage_frames_are_counted_and_forwarding_continues(topo: Topo, switch: Switch):
    s1, s2 = topo.host_socket(1), topo.host_socket(2)
    rnd = random.Random(1)
    try:
        for _ in range(3000):
            n = rnd.choice([1, 5, 13, rnd.randrange(14, 20), rnd.randrange(20, 1514)])
            try:
                s1.send(os.urandom(n))
            except OSError:
                pass  # the kernel refuses some (e.g. shorter than a link-layer header)
        f = bytearray(frame(2, seq=99, size=100))
        f[12:14] = b"\x88\xb5"
        s1.send(bytes(f))
        got = recv_all(s2, timeout=2.0, accept=lambda d: d == bytes(f))
        assert got == [bytes(f)]
        st = switch.port_stats()[1]
        assert st["rx_packets"] > 1000
        assert st["rx_too_short"] + st["rx_malformed"] + st["rx_errors"] > 0
        assert switch.running
    finally:
        s1.close()
        s2.close()
