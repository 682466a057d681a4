"""Every frame a switch had and did not send is counted at its site (p4switch.hidden
SwitchDropSites, in ``hidden_stats``): a burst into a tiny, slow P4 egress queue between real
network namespaces loses exactly the frames the queue tail-dropped, and the switch's own
discards and the pipeline's drops are counted apart.

The assertions are an account (sent = arrived + dropped at each site), which holds whatever
the machine's load does to the timing; only that the queue dropped something depends on it,
with a margin of seconds (the burst would have to take 4 s to fit)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

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


IPV4_P4 = Path(__file__).resolve().parent / "p4" / "ipv4.p4"
ROUTER_MAC = bytes.fromhex("0200000000fe")


def _target_switch(target: str, topo: Topo) -> Any:
    """A switch of ``target`` on the topo's two hosts (ports 1 and 2), ipv4.p4 loaded:
    10.0.2.0/24 to port 2 (its queue model records the depth), 10.0.9.0/24 to port 9
    (no interface behind it), anything else dropped by the program's default action."""
    from p4switch.frontend import compile_file
    from p4switch.pipeline.api import LpmMatch, TableEntry

    h1, h2 = topo.hosts
    if target == "ebpf":
        from p4switch.ebpf import toolchain
        from p4switch.ebpf.switch import EbpfSwitch

        if (why := toolchain.unavailable_reason()) is not None:
            pytest.skip(why)
        sw: Any = EbpfSwitch({1: h1.sw_ifname, 2: h2.sw_ifname}, queue_depth=DEPTH)
    else:
        sw = Switch(queue_depth=DEPTH)
        sw.add_port(RawPort(1, h1.sw_ifname))
        sw.add_port(RawPort(2, h2.sw_ifname))
    sw.load_program(compile_file(str(IPV4_P4)))
    for net, port, action in ((0x0A000200, 2, "ipv4_forward_record"),
                              (0x0A000900, 9, "ipv4_forward")):
        sw.pipeline.table_add("ipv4_lpm", TableEntry(
            match={"hdr.ipv4.dstAddr": LpmMatch(net, 24)}, action=action,
            params={"dstAddr": 0x020000000002, "port": port}))
    sw.set_port_rate(2, RATE_BPS)
    return sw


def _udp(dst: str, sport: int, size: int = 1000) -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(Ether(src="02:00:00:00:00:01", dst=ROUTER_MAC.hex(":"))
                 / IP(src="10.0.1.1", dst=dst, ttl=64) / UDP(sport=sport, dport=9999)
                 / (b"x" * size))


def _routed(data: bytes) -> bool:
    return len(data) >= 38 and data[12:14] == b"\x08\x00" and data[36:38] == b"\x27\x0f"


@pytest.mark.root
@pytest.mark.parametrize("target", ["python", "ebpf"])
def test_drop_sites_add_up_alike_on_both_targets(target: str) -> None:
    """The same program and frames on the Python target and the eBPF target: a burst into a
    4-packet, 100 kb/s port (tail drops), frames to an unrouted address (the program's
    mark_to_drop) and to a port with no interface (the switch's tx_no_port). On each, every
    frame sent either arrived or is counted at one site, under the same names; the queue's
    statistics (enqueued, max depth, egress delay) say it filled."""
    with Topo(tag=f"q{target[0]}") as topo:
        sw = _target_switch(target, topo)
        s1, s2 = topo.host_socket(1), topo.host_socket(2)
        frames = ([_udp("10.0.2.1", 2000 + i) for i in range(BURST)]
                  + [_udp("10.0.3.1", 3000 + i) for i in range(3)]
                  + [_udp("10.0.9.1", 4000 + i) for i in range(2)])
        sw.start()
        try:
            before = sw.hidden_stats()
            for f in frames:
                s1.send(f)
            _drained(sw, 2)
            got = recv_all(s2, timeout=1.0, accept=_routed)
            after = sw.hidden_stats()
            st = sw.port_stats()[2]
        finally:
            sw.stop(log_stats=False)
            s1.close()
            s2.close()
    sa, sb = after["drop_sites"], before["drop_sites"]
    tail = sa["tail_drops"] - sb["tail_drops"]
    pipeline = {k: v - sb["pipeline"].get(k, 0) for k, v in sa["pipeline"].items()
                if v - sb["pipeline"].get(k, 0)}
    discards = {k: v - sb["discards"].get(k, 0) for k, v in sa["discards"].items()
                if v - sb["discards"].get(k, 0)}
    received = sum(p["kernel_packets"] for p in after["ports"].values()) - \
        sum(p["kernel_packets"] for p in before["ports"].values())
    assert sum(p["kernel_drops"] for p in after["ports"].values()) == 0
    assert received >= len(frames)             # every frame reached the program
    assert tail > 0                            # the burst overflowed the 4-packet queue
    assert pipeline == {"mark_to_drop": 3}
    assert discards == {"tx_no_port": 2}
    assert len(got) + tail + 3 + 2 == len(frames)
    assert st["queue_enqueued"] == len(got) and st["queue_max_depth"] == DEPTH
    delay = _delay_since(after, before)    # (the Python target's also counts port 9's)
    assert delay.n >= len(got) and delay.quantile(0.99) > 0


def _delay_since(after: dict[str, Any], before: dict[str, Any]) -> Any:
    from common.histogram import LogHistogram

    d = LogHistogram.of(after["egress_delay_us"]).minus(LogHistogram.of(before["egress_delay_us"]))
    d.counts[0] += max(0, after["dequeued"] - before["dequeued"] - d.n)
    return d
