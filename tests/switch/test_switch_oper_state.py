"""As root: a port's oper state as the switch reports it (``port_stats``: ``oper_state``,
``oper_up``, ``tx_errors``) follows its interface going down and up — what a controller polls
to notice a dead link — and the switch keeps running through it."""

from __future__ import annotations

import time

import pytest
from switch_fakes import FakePipeline, frame
from switch_netns import Topo, recv_all, sh

from p4switch.switch import Switch

pytestmark = pytest.mark.root


def wait_for(pred, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


def test_oper_state_and_tx_errors_follow_the_link():
    topo = Topo(tag="o", n=1).create()
    sw = Switch()
    try:
        h = topo.hosts[0]
        sw.add_interface(1, h.sw_ifname)
        sw.set_pipeline(FakePipeline())
        sw.start()
        assert wait_for(lambda: sw.port_stats()[1]["oper_state"] == "up")
        assert sw.port_stats()[1]["oper_up"] == 1
        host = topo.host_socket(1)
        sw.inject(1, frame(1, seq=1))
        assert len(recv_all(host, 1.0, want=1)) == 1

        sh("ip", "link", "set", h.sw_ifname, "down")  # the switch's end: administratively down
        assert wait_for(lambda: sw.port_stats()[1]["oper_up"] == 0)
        assert sw.port_stats()[1]["oper_state"] == "down"
        errors = sw.port_stats()[1]["tx_errors"]
        sw.inject(1, frame(1, seq=2))
        assert wait_for(lambda: sw.port_stats()[1]["tx_errors"] == errors + 1)  # ENETDOWN

        sh("ip", "link", "set", h.sw_ifname, "up")
        sh("ip", "netns", "exec", h.ns, "ip", "link", "set", h.ifname, "down")  # the far end
        assert wait_for(lambda: sw.port_stats()[1]["oper_up"] == 0)
        assert sw.port_stats()[1]["oper_state"] in ("down", "lowerlayerdown")

        sh("ip", "netns", "exec", h.ns, "ip", "link", "set", h.ifname, "up")
        assert wait_for(lambda: sw.port_stats()[1]["oper_state"] == "up")
        host.close()  # it saw its interface go down (ENETDOWN pending): take a fresh one
        host = topo.host_socket(1)
        tx = sw.port_stats()[1]["tx_packets"]
        sw.inject(1, frame(1, seq=3))
        got = recv_all(host, 1.0, want=1, accept=lambda d: d[14:18] == (3).to_bytes(4, "big"))
        assert len(got) == 1 and sw.port_stats()[1]["tx_packets"] == tx + 1
        assert sw.running
        host.close()
    finally:
        sw.stop(log_stats=False)
        topo.destroy()
    assert sw.port_stats()[1]["oper_state"] == "absent"  # its interface was deleted
