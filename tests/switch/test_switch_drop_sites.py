"""Every frame a switch had and did not send is counted at its site (p4switch.hidden
SwitchDropSites, in ``hidden_stats``): a burst into a tiny, slow P4 egress queue between real
network namespaces loses exactly the frames the queue tail-dropped, and the switch's own
discards and the pipeline's drops are counted apart.

The assertions are an account (sent = arrived + dropped at each site), which holds whatever
the machine's load does to the timing; only that the queue dropped something depends on it,
with a margin of seconds (the burst would have to take 4 s to fit)."""

from __future__ import annotations

import time

import pytest
from switch_fakes import FakePipeline, frame
from switch_netns import Topo, recv_all

from p4switch.ports import MemoryPort, RawPort
from p4switch.switch import Switch

BURST = 60
DEPTH = 4
RATE_BPS = 100e3   # a 1000-byte frame every 80 ms: the queue drains in well under a second


def _ours(data: bytes) -> bool:
    return len(data) >= 14 and data[12:14] == b"\x88\xb5"


def _burst(n: int, port: int = 2) -> list[bytes]:
    out = []
    for i in range(n):
        f = bytearray(frame(port, seq=i, size=1000))
        f[12:14] = b"\x88\xb5"
        out.append(bytes(f))
    return out


def _drained(sw: Switch, port: int, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while sw.port_stats()[port]["queue_depth_now"] and time.monotonic() < end:
        time.sleep(0.05)


@pytest.mark.root
def test_frames_lost_in_a_full_egress_queue_are_its_tail_drops() -> None:
    with Topo(tag="d") as topo:
        sw = Switch(queue_depth=DEPTH)
        sw.add_port(RawPort(1, topo.hosts[0].sw_ifname))
        sw.add_port(RawPort(2, topo.hosts[1].sw_ifname))
        sw.set_port_rate(2, RATE_BPS)
        sw.set_pipeline(FakePipeline())
        s1, s2 = topo.host_socket(1), topo.host_socket(2)
        sw.start()
        try:
            before = sw.hidden_stats()
            for f in _burst(BURST):
                s1.send(f)
            _drained(sw, 2)
            got = recv_all(s2, timeout=1.0, accept=_ours)
            after = sw.hidden_stats()
        finally:
            sw.stop(log_stats=False)
            s1.close()
            s2.close()
    tail = after["drop_sites"]["tail_drops"] - before["drop_sites"]["tail_drops"]
    kernel = sum(after["ports"][p]["kernel_drops"] - before["ports"][p]["kernel_drops"]
                 for p in ("1", "2"))
    assert kernel == 0                       # 8 MiB socket buffers: nothing died before P4
    assert tail > 0                          # the burst overflowed the 4-packet queue
    assert len(got) + tail == BURST          # and every frame that did not arrive is one
    assert after["drop_sites"]["pipeline"] == before["drop_sites"]["pipeline"] == {}
    assert set(after["drop_sites"]["discards"].values()) == {0}


def test_pipeline_drops_and_the_switchs_discards_are_counted_apart() -> None:
    sw = Switch()
    p1, p2 = MemoryPort(1), MemoryPort(2)
    sw.add_port(p1)
    sw.add_port(p2)
    sw.set_pipeline(FakePipeline())
    good = _burst(5)
    dropped = [bytes([0xFF]) + f[1:] for f in _burst(3)]          # mark_to_drop
    short = [b"\x02" * 10]                                         # below an Ethernet header
    no_port = [bytes([9]) + f[1:] for f in _burst(2)]              # output to a port not there
    sw.start()
    try:
        p1.feed(good + dropped + short + no_port)
        p2.wait_sent(len(good))
        end = time.monotonic() + 30
        while time.monotonic() < end:
            sites = sw.hidden_stats()["drop_sites"]
            if sites["discards"]["tx_no_port"] == 2 and sites["pipeline"]:
                break
            time.sleep(0.01)
    finally:
        sw.stop(log_stats=False)
    assert len(p2.sent) == len(good)
    assert sites["pipeline"] == {"mark_to_drop": 3}
    assert sites["discards"]["rx_too_short"] == 1 and sites["discards"]["tx_no_port"] == 2
    assert sites["tail_drops"] == 0
