"""The host agent's own drop sites (traffic/agent.py): datagrams it discards are counted as
malformed or as stale (an earlier run's), and its UDP socket's overflows are read from the
kernel (/proc/net/udp) — checked against a receive buffer overflowed on purpose on loopback,
where the count must equal what did not arrive."""

from __future__ import annotations

import socket
import time

from traffic.agent import AgentConfig, HostAgent, udp_socket_drops
from traffic.schedules import Recv, Schedule, Send, Step
from traffic.wire import ACK, F_ACK, HDR, VERSION

SENT = 400


def test_a_socket_overflow_is_counted_as_what_did_not_arrive() -> None:
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # a few datagrams
        rx.bind(("127.0.0.1", 0))
        rx.setblocking(False)
        assert udp_socket_drops(rx) == 0
        for _ in range(SENT):                 # nobody reads: all but a few overflow
            tx.sendto(bytes(1000), rx.getsockname())
        got, drops = 0, 0
        end = time.monotonic() + 30           # loopback delivery may lag on a loaded machine
        while time.monotonic() < end:
            try:
                rx.recv(2048)
                got += 1
                continue
            except BlockingIOError:
                pass
            drops = udp_socket_drops(rx) or 0
            if got + drops == SENT:
                break
            time.sleep(0.05)
    finally:
        rx.close()
        tx.close()
    assert drops > 0
    assert got + drops == SENT


def _agent() -> HostAgent:
    sched = Schedule(ranks=2, programs=[[Step(sends=[Send(dst=1, bytes=3000, flow=0)])],
                                        [Step(recvs=[Recv(src=0, flow=0)])]], name="pair")
    return HostAgent(sched, [1], ["10.0.0.2", "10.1.0.2"], AgentConfig())


def _hdr(ver: int = VERSION, flags: int = 0, job: int = 1, src: int = 0, dst: int = 1,
         flow: int = 0) -> bytes:
    return HDR.pack(ver, flags, job, src, dst, 0, 0, flow, 0, 3, 1000, 0)


def test_discarded_datagrams_are_counted_malformed_or_stale() -> None:
    agent = _agent()
    cases = [(b"\x02\x00", "malformed"),                         # shorter than the header
             (_hdr(ver=VERSION + 1), "malformed"),               # another wire version
             (_hdr(job=7), "stale"),                             # another job's
             (_hdr(flow=5), "stale"),                            # a flow we do not receive
             (_hdr(dst=0), "stale"),                             # for a rank not on this host
             (_hdr(flags=F_ACK) + bytes(ACK.size), "stale")]     # an ACK of no flow we send
    for data, _kind in cases:
        buf = bytearray(data) + bytearray(64)
        agent._datagram(buf, 0, len(data), "10.0.0.2", 5000, False, 0.0)
    assert agent.rx_malformed == sum(k == "malformed" for _, k in cases)
    assert agent.rx_stale == sum(k == "stale" for _, k in cases)
    assert not agent.rx                                          # none reached a flow
    agent.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    agent.udp.bind(("127.0.0.1", 0))
    agent.raw = {}
    agent.close()
    assert agent.drops == {"udp_socket_drops": 0, "tx_refused": 0, "rx_malformed": 2,
                           "rx_stale": 4}
    m = agent.results()[1]
    assert m.agent_drops == agent.drops
