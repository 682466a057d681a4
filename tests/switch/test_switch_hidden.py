"""What the pipeline cannot see, measured (p4switch/hidden.py): frames the kernel dropped in
front of the switch and how long frames waited there, checked against injected losses and
delays between real network namespaces: the ingress-lag quantiles against the true lags of
every frame, within the histogram's stated relative error."""

from __future__ import annotations

import shutil
import socket
import time

import numpy as np
import pytest
from switch_fakes import FakePipeline, frame
from switch_netns import Topo, raw_socket, recv_all, sh

from common.histogram import RELATIVE_ERROR, LogHistogram
from p4switch.hidden import ANCILLARY, enable_rx_timestamps, rx_time_ns
from p4switch.ports import RawPort
from p4switch.switch import Switch

pytestmark = pytest.mark.root


@pytest.fixture
def topo():
    with Topo(tag="h") as t:
        yield t


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
        lag = LogHistogram.of(hidden["ingress_lag_us"])
        assert lag.n == forwarded and lag.quantile(0.5) >= hold * 1e6 * (1 - RELATIVE_ERROR)
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


def _sniff(sock: socket.socket, want: int, timeout: float = 2.0) -> list[int]:
    """Kernel receive times (ns) of our frames on a second socket of the switch's interface:
    the skb's one timestamp, the same the switch's socket sees."""
    sock.settimeout(timeout)
    out: list[int] = []
    while len(out) < want:
        data, anc, _f, _a = sock.recvmsg(2048, ANCILLARY)
        t = rx_time_ns(anc)
        if _mine(data) and t is not None:
            out.append(t)
    return out


@pytest.mark.parametrize("wire_delay_ms", [0, 30])
def test_ingress_lag_quantiles_match_every_frames_true_lag(topo: Topo,
                                                           wire_delay_ms: int) -> None:
    """Frames arrive over 240 ms (behind a netem delay on the wire in the second case) while
    the loop is held back, then are read in one batch: each frame's true lag is (read time -
    its kernel receive time), which a sniffer on the same interface knows exactly. Every frame
    is counted (one sample per batch would give n = 1) and each quantile is within
    RELATIVE_ERROR of the true one; the wire delay is not lag (it happens before the kernel
    receives the frame)."""
    h1 = topo.hosts[0]
    if wire_delay_ms:
        if shutil.which("tc") is None:
            pytest.skip("tc (iproute2) not installed")
        r = sh("ip", "netns", "exec", h1.ns, "tc", "qdisc", "add", "dev", h1.ifname, "root",
               "netem", "delay", f"{wire_delay_ms}ms", check=False)
        if r.returncode:
            pytest.skip(f"no netem qdisc in this kernel (CONFIG_NET_SCH_NETEM): {r.stderr.strip()}")
    sw = Switch()
    sw.add_port(RawPort(1, h1.sw_ifname))
    sw.add_interface(2, topo.hosts[1].sw_ifname)
    sw.set_pipeline(FakePipeline())
    sniffer = raw_socket(h1.sw_ifname)
    assert enable_rx_timestamps(sniffer)
    s1, s2 = topo.host_socket(1), topo.host_socket(2)
    n, gap = 60, 0.004
    try:
        time.sleep(0.5)       # receive timestamping switches on lazily (see above)
        before = LogHistogram.of(sw.hidden_stats()["ports"]["1"]["ingress_lag_us"])
        sent_ns = []
        for f in _frames(n):
            sent_ns.append(time.time_ns())
            s1.send(f)
            time.sleep(gap)
        arrived_ns = _sniff(sniffer, n)
        time.sleep(0.1)       # the injected hold: the last frame waits >= 100 ms too
        start_ns = time.time_ns()
        sw.start()
        got = recv_all(s2, timeout=1.0, want=n, accept=_mine)
        end_ns = time.time_ns()
        assert len(got) == n
        lag = LogHistogram.of(sw.hidden_stats()["ports"]["1"]["ingress_lag_us"]).minus(before)
        arrived = np.array(arrived_ns)
        # netem held each frame on the wire before the kernel received it
        assert (arrived - np.array(sent_ns) >= wire_delay_ms * 1e6 * 0.98).all()
        low = (start_ns - arrived) / 1e3      # true lag of each frame, µs, lies in [low, high]
        high = (end_ns - arrived) / 1e3
        assert lag.n == n
        for q in (0.1, 0.5, 0.9, 0.99, 1.0):
            got_q = lag.quantile(q)
            lo_q = float(np.quantile(low, q, method="inverted_cdf")) * (1 - RELATIVE_ERROR)
            hi_q = float(np.quantile(high, q, method="inverted_cdf")) * (1 + RELATIVE_ERROR)
            assert lo_q <= got_q <= hi_q, (q, lo_q, got_q, hi_q)
    finally:
        sw.stop(log_stats=False)
        for s in (s1, s2, sniffer):
            s.close()
