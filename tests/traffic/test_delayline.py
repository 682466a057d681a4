"""Propagation delay at the receiving host (traffic/delayline.py): path lengths from the
fabric's graph, a line that releases each datagram links × (delay + serialisation) after it
came, in order per peer; and in the simulator (``SimConfig.prop_at_hosts``) the same placement: an unloaded
collective's flows finish as on a fabric with the delay on every link."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from model.spec import fat_tree, leaf_spine
from traffic.delayline import DelayLine, path_links, read_path_links, write_path_links


def test_path_links_count_the_links_of_the_shortest_path() -> None:
    spec = fat_tree(4)
    hosts = sorted(spec.hosts.values(), key=lambda h: h.index)
    links = path_links(spec, hosts[0].ip)
    assert links[hosts[0].ip] == 0
    assert links[hosts[1].ip] == 2          # the same edge switch
    assert links[hosts[2].ip] == 4          # the same pod
    assert links[hosts[-1].ip] == 6         # across the core
    assert sorted(set(links.values())) == [0, 2, 4, 6]
    ls = leaf_spine(2, 2, 1)
    a, b = sorted(ls.hosts.values(), key=lambda h: h.index)
    assert path_links(ls, a.ip)[b.ip] == 4
    with pytest.raises(ValueError, match="no host with address"):
        path_links(spec, "192.0.2.1")


def test_the_path_links_file_gives_each_host_its_own_row(tmp_path: Path) -> None:
    spec = fat_tree(4)
    hosts = sorted(spec.hosts.values(), key=lambda h: h.index)
    f = write_path_links(spec, tmp_path / "links.json")
    table = json.loads(f.read_text())
    assert set(table) == {h.ip for h in hosts}
    mine = read_path_links(f, {"127.0.0.1", hosts[3].ip})
    assert mine == path_links(spec, hosts[3].ip)
    with pytest.raises(ValueError, match="none of this host's addresses"):
        read_path_links(f, {"192.0.2.1"})
    with pytest.raises(ValueError, match="--path-links"):
        read_path_links(tmp_path / "missing.json", {hosts[0].ip})


def test_a_datagram_leaves_the_line_links_times_delay_after_it_came() -> None:
    line = DelayLine.of(0.001, {"10.0.0.1": 2, "10.0.0.2": 6, "10.0.0.3": 0})
    assert line is not None and DelayLine.of(0.0, {"x": 2}) is None
    assert line.next_due() is None
    assert not line.hold(0.0, b"own", "10.0.0.3", 1, False)   # no path: not held
    assert not line.hold(0.0, b"?", "192.0.2.1", 1, False)    # not a fabric host: not held
    assert line.hold(0.0, b"far1", "10.0.0.2", 10, False)
    assert line.hold(0.001, b"near1", "10.0.0.1", 11, True)
    assert line.hold(0.002, b"far2", "10.0.0.2", 12, False)
    assert line.next_due() == pytest.approx(0.003)
    assert line.pop_due(0.0029) == []
    assert [d for _t, d, *_ in line.pop_due(0.003)] == [b"near1"]
    assert line.next_due() == pytest.approx(0.006)
    got = line.pop_due(0.0075)
    assert [(d, ip, sport, ce) for _t, d, ip, sport, ce in got] == \
        [(b"far1", "10.0.0.2", 10, False)]
    assert [d for _t, d, *_ in line.pop_all()] == [b"far2"]
    assert line.held == 3 and line.max_held == 3 and line.next_due() is None


def test_each_link_also_takes_the_frames_serialisation_in_order() -> None:
    """With the link rate the line adds store-and-forward: links × the frame's wire bytes
    (the datagram and its 42 bytes of Ethernet, IPv4 and UDP headers) at that rate; a small
    datagram behind a big one from the same peer leaves after it, as on a link."""
    line = DelayLine.of(0.001, {"10.0.0.1": 2}, 8e6)      # 1 µs a byte on each link
    assert line is not None
    line.hold(0.0, bytes(58), "10.0.0.1", 1, False)       # 100 wire bytes
    line.hold(0.0, bytes(8), "10.0.0.1", 2, False)        # 50: due earlier, but behind it
    assert line.next_due() == pytest.approx(0.002 + 2 * 100e-6)
    got = line.pop_due(0.0022 + 1e-9)
    assert [sport for _t, _d, _ip, sport, _ce in got] == [1, 2]
    assert got[1][0] == pytest.approx(got[0][0])


def _sim_cct(prop_at_hosts: bool) -> float:
    from experiments.config import SchemeConfig
    from sim.host import HostConfig
    from sim.network import SimConfig, SimNetwork
    from traffic.schedules import GENERATORS

    spec = fat_tree(4, 1000.0)
    hosts = sorted(spec.hosts, key=lambda h: spec.hosts[h].index)
    sched = GENERATORS["ring_allreduce"](2, 64 * 1024)
    sched.placement = [hosts[0], hosts[-1]]           # 6 links apart
    net = SimNetwork(spec, SchemeConfig("ecmp").build(),
                     SimConfig(prop_delay_us=20.0, prop_at_hosts=prop_at_hosts,
                               host=HostConfig()))
    res = net.run(sched, until_us=10e6)
    assert res.ok and res.tail_drops == 0
    assert res.cct_s is not None
    return res.cct_s


def test_the_simulator_models_the_delay_at_the_hosts_like_on_the_links() -> None:
    """Two ranks 6 links apart, a ring all-reduce: with nothing to queue behind, holding each
    arrival for 6 × 20 µs at the host takes the same time as 20 µs on each link."""
    on_links, at_hosts = _sim_cct(False), _sim_cct(True)
    assert at_hosts == pytest.approx(on_links, rel=1e-9)
    assert at_hosts > 2 * 6 * 20e-6                     # a round trip's delay at least


def test_the_agent_counts_the_delay_from_the_kernels_arrival_not_its_read() -> None:
    import socket as sk

    from traffic.agent import AgentConfig, HostAgent
    from traffic.schedules import Recv, Schedule, Send, Step
    from traffic.wire import HDR, VERSION

    sched = Schedule(ranks=2, programs=[[Step(sends=[Send(dst=1, bytes=3000, flow=0)])],
                                        [Step(recvs=[Recv(src=0, flow=0)])]], name="pair")
    agent = HostAgent(sched, [1], ["10.0.0.2", "10.1.0.2"],
                      AgentConfig(prop_delay=0.5e-3, path_links={"10.0.0.2": 6}))
    assert agent.delayline is not None
    data = bytearray(HDR.pack(VERSION, 0, 1, 0, 1, 0, 0, 0, 0, 3, 1000, 0)) + bytearray(1000)
    # read 2 ms after the kernel had it: held until arrival + 6 x 0.5 ms (+ serialisation)
    at = agent._arrived(10.0, 10.002)
    assert at == 10.0
    agent._datagram(data, 0, len(data), "10.0.0.2", 5000, False, 10.002, at)
    due = agent.delayline.next_due()
    assert due is not None and 10.003 <= due < 10.0031
    # a stamp after the pass's clock reading is taken as that reading; the waits are counted
    assert agent._arrived(10.5, 10.4) == 10.4
    assert agent.read_lag_us.counts and sum(agent.read_lag_us.counts) == 1
    # without a stamp the read is the arrival, as before
    agent._datagram(data, 0, len(data), "10.0.0.2", 5000, False, 10.010)
    assert agent.delayline.pop_due(10.0131)[-1][0] >= 10.013
    agent.udp = sk.socket(sk.AF_INET, sk.SOCK_DGRAM)
    agent.udp.bind(("127.0.0.1", 0))
    agent.raw = {}
    agent.close()
