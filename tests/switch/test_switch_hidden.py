"""What the pipeline cannot see, measured (p4switch/hidden.py): frames the kernel dropped in
front of the switch and how long frames waited there, checked against losses and a delay
injected by holding the switch loop back, between real network namespaces."""

from __future__ import annotations

import time

import pytest
from switch_fakes import FakePipeline, frame
from switch_netns import Topo, recv_all

from p4switch.hidden import LogHistogram
from p4switch.ports import RawPort
from p4switch.switch import Switch

pytestmark = pytest.mark.root


def test_log_histogram_quantiles_bracket_the_values() -> None:
    h = LogHistogram()
    for v in [0] * 50 + [100] * 49 + [300_000]:
        h.add(v)
    assert h.n == 100 and h.quantile(0.5) == 0.0
    assert 100 <= h.quantile(0.99) < 200 and 300_000 <= h.quantile(1.0) < 600_000


@pytest.fixture
def topo():
    t = Topo(tag="h").create()
    try:
        yield t
    finally:
        t.destroy()


def _mine(data: bytes) -> bool:
    return len(data) >= 14 and data[12:14] == b"\x88\xb5"


def _frames(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        f = bytearray(frame(2, seq=i, size=1000))
        f[12:14] = b"\x88\xb5"
        out.append(bytes(f))
    return out


def test_kernel_drops_and_ingress_lag_match_what_was_injected(topo: Topo) -> None:
    sw = Switch()
    # a tiny receive buffer on port 1 (the kernel's minimum, a few frames) and a loop that
    # is not running yet: everything beyond what the buffer holds is dropped in the kernel
    sw.add_port(RawPort(1, topo.hosts[0].sw_ifname, socket_buffer=4096))
    sw.add_interface(2, topo.hosts[1].sw_ifname)
    sw.set_pipeline(FakePipeline())
    s1, s2 = topo.host_socket(1), topo.host_socket(2)
    try:
        # the kernel switches receive timestamping on lazily (a deferred static key): frames
        # that arrive before it is on are stamped when read, so give it a moment
        time.sleep(0.5)
        sw.hidden_stats()                  # reset the kernel's counters (frames of set-up)
        sent = _frames(200)
        for f in sent:
            s1.send(f)
        hold = 0.3
        time.sleep(hold)                   # the injected delay: frames wait in the socket
        sw.start()
        got = recv_all(s2, timeout=1.0, accept=_mine)
        hidden = sw.hidden_stats()["ports"]["1"]
        forwarded = len(got)
        assert 0 < forwarded < 200
        # every frame that arrived at the socket was either dropped there or forwarded
        assert hidden["kernel_drops"] == 200 - forwarded
        assert hidden["kernel_packets"] >= 200
        lag = LogHistogram(hidden["ingress_lag_us"])
        assert lag.n >= 1 and lag.quantile(1.0) >= hold * 1e6 / 2   # bucket edge: within 2x
        # later frames, read promptly, do not add drops
        for f in _frames(20):
            s1.send(f)
            time.sleep(0.005)
        assert len(recv_all(s2, timeout=1.0, want=20, accept=_mine)) == 20
        assert sw.hidden_stats()["ports"]["1"]["kernel_drops"] == 200 - forwarded
    finally:
        sw.stop(log_stats=False)
        s1.close()
        s2.close()
