"""Lock-step: the host agent's sender and the simulator's host make the same decisions.

The simulator's host runs one flow over a link to an in-test receiver (ReceiverFlow: CE on
every fourth packet, the first copy of packet 5 lost, the first copy of packet 7 held back
past the RTO so that its retransmission is spurious, ACKs one way-delay later). Every
decision it takes is logged in order: each time its NIC asks for a data packet (which one, or
none), each ACK it is given, each timer tick. The same log is then replayed into a HostAgent —
the ACKs through its receive path as the datagrams its socket would return, the ticks through
its timer, each send opportunity through its round robin — and it must pick the same packet
(or none) every time, with the same header flags (F_ACKREQ included) and the same window,
rate and sender-side spurious count (the receiver's D-SACK echo) after every event, for
every algorithm. The same again with two overlapping messages to the one peer (a step that
does not wait for its send, then the next step's send): they share one connection (window,
algorithm, RTT), and both sides must serve them identically.
"""

from __future__ import annotations

from typing import Any

import pytest

from model.spec import fat_tree
from sim import frames
from sim.events import EventLoop
from sim.host import HostConfig, Job, SimHost
from sim.link import Link
from traffic.agent import AgentConfig, HostAgent
from traffic.congestion import REGISTRY
from traffic.frames import OVERHEAD
from traffic.nexthop import Route
from traffic.packet import F_ACKREQ, F_RETX, HDR
from traffic.schedules import Recv, Schedule, Send, Step
from traffic.transport import ReceiverFlow, TransportConfig

RATE = 10e9
DELAY_US = 5.0
LATE_US = 3000.0
NBYTES = 60 * 1000
NBYTES2 = 30 * 1000   # the second, overlapping message


def _schedule(two: bool = False) -> Schedule:
    if not two:
        return Schedule(ranks=2, programs=[[Step(sends=[Send(dst=1, bytes=NBYTES, flow=0)])],
                                           [Step(recvs=[Recv(src=0, flow=0)])]], name="pair")
    return Schedule(ranks=2, programs=[
        [Step(sends=[Send(dst=1, bytes=NBYTES, flow=0)], wait_sends=False),
         Step(sends=[Send(dst=1, bytes=NBYTES2, flow=1)])],
        [Step(recvs=[Recv(src=0, flow=0)]), Step(recvs=[Recv(src=0, flow=1)])]], name="pair2")


def _run_sim(cfg: TransportConfig, two: bool = False) -> list[tuple[Any, ...]]:
    """The simulator side; returns its decision log."""
    spec = fat_tree(4)
    h0, h1 = (spec.hosts[n] for n in sorted(spec.hosts)[:2])
    loop = EventLoop()
    host, peer = SimHost(h0, loop), SimHost(h1, loop)
    sched = _schedule(two)
    job = Job(sched, [host, peer], HostConfig(transport=cfg))
    host.add_rank(0, job)
    log: list[tuple[Any, ...]] = []
    rxs = {snd.flow: ReceiverFlow(snd.bytes // cfg.mss, cfg) for _r, _i, snd in sched.sends()}
    lost = {(0, 5), (1, 3)}
    late = {(0, 7)}   # held back past the RTO: the retransmission goes, then the original arrives
    prefix = frames.ack_prefix(h1.mac, "00:00:00:00:00:01", h1.ip, h0.ip)

    def wire(now: float, arg: tuple[int, bytes]) -> None:   # the receiver end of the link
        f = arg[1]
        fields = HDR.unpack_from(f, frames.HDR_AT)
        seq, flags, length, flow = fields[8], fields[1], fields[10], fields[7]
        if (flow, seq) in lost:
            lost.discard((flow, seq))
            return
        if (flow, seq) in late:
            late.discard((flow, seq))
            loop.schedule(now + LATE_US, wire, arg)
            return
        _new, acks = rxs[flow].on_data(seq, length, bool(flags & F_RETX), now * 1e-6,
                                       seq % 4 == 3, bool(flags & F_ACKREQ))
        for a in acks:
            ack = frames.ack_frame(prefix, 1, 1, 0, flow, a.cum, a.base, a.sack, a.nack, 0,
                                   a.ce, a.dup)
            loop.schedule(now + DELAY_US, deliver, ack)

    def deliver(now: float, ack: bytes) -> None:
        log.append(("ack", now * 1e-6, ack[frames.HDR_AT:]))
        host.receive(now, (0, ack))
        log.append(_states(host, now * 1e-6))

    link = Link(h0.name, 0, h1.name, 0, RATE, DELAY_US)
    host.connect(link, wire, 0)
    next_data = host._next_data

    def logged_next_data(now: float) -> bytes | None:
        f = next_data(now)
        h = None if f is None else HDR.unpack_from(f, frames.HDR_AT)
        seq, flags, flow = (None, None, None) if h is None else (h[8], h[1], h[7])
        log.append(("send", now * 1e-6, seq, flags, flow))
        return f

    tick = host._tick

    def logged_tick(now: float, arg: Any) -> None:
        log.append(("tick", now * 1e-6))
        tick(now, arg)
        if host.tx:
            log.append(_states(host, now * 1e-6))

    host._next_data = logged_next_data  # type: ignore[method-assign]  # logging wrappers of the host's methods
    host._tick = logged_tick  # type: ignore[method-assign]  # as above
    host.start(0.0)
    loop.run(until=1e6)
    assert all(f.s.done for f in host.tx.values()) and len(host.tx) == (2 if two else 1)
    return log


def _state(s: Any, t: float) -> tuple[Any, ...]:
    """What the sender would decide with at ``t`` (timer-driven state caught up to ``t``, as
    every decision does first: traffic.congestion's lazy timers)."""
    s.cc.advance(t)
    return (s.window, s.rate_bps, s.rto, s.n_acked, s.retransmissions, s.spurious)


def _states(host: SimHost, t: float) -> tuple[Any, ...]:
    return ("state", t, tuple(_state(host.tx[k].s, t) for k in sorted(host.tx)))


class _Udp:
    """The agent's kernel UDP socket: returns the queued datagram once, then would block."""

    def __init__(self) -> None:
        self.q: list[bytes] = []

    def _next(self, buf: bytearray) -> int:
        if not self.q:
            raise BlockingIOError
        d = self.q.pop(0)
        buf[:len(d)] = d
        return len(d)

    def recvmsg_into(self, bufs: list[bytearray], _anc: int) -> tuple[int, list, int, tuple]:
        return self._next(bufs[0]), [], 0, ("10.1.0.2", 50000)

    def recvfrom_into(self, buf: bytearray) -> tuple[int, tuple]:
        return self._next(buf), ("10.1.0.2", 50000)


class _Raw:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send(self, frame: bytes) -> int:
        self.sent.append(bytes(frame))
        return len(frame)


def _replay_agent(cfg: TransportConfig, log: list[tuple[Any, ...]], two: bool = False) -> None:
    sched = _schedule(two)
    hosts = ["10.0.0.2", "10.1.0.2"]
    agent = HostAgent(sched, [0], hosts, AgentConfig(rate_bps=RATE, transport=cfg))
    route = Route("p4ft-lock0", hosts[0], "02:00:0a:00:00:02", "10.0.0.1", "02:fe:00:00:00:01")
    agent.routes = {hosts[1]: route}
    raw = _Raw()
    agent.raw = {route.dev: raw}  # type: ignore[dict-item]  # a fake raw socket
    agent.udp = _Udp()  # type: ignore[assignment]  # a fake UDP socket
    for length in {cfg.mss, NBYTES % cfg.mss or cfg.mss}:
        agent.frames.prebuild(route, hosts[1], length, 2 if agent.ecn else 0)
    agent._post(0, 0, 0.0)
    if two:   # step 0 does not wait for its send: step 1 is posted at once, as in the sim
        agent._post(0, 1, 0.0)
    buf = bytearray(65536)
    for ev in log:
        if ev[0] == "send":
            _k, t, seq, flags, flow = ev
            before = len(raw.sent)
            n = agent._send_one(t)
            if seq is None:
                assert n == 0 and len(raw.sent) == before, (ev, raw.sent[before:])
            else:
                assert len(raw.sent) == before + 1, ev
                f = raw.sent[-1]
                fields = HDR.unpack_from(f, OVERHEAD - HDR.size)
                assert (fields[8], fields[1], fields[7]) == (seq, flags, flow), ev
        elif ev[0] == "ack":
            agent.udp.q.append(ev[2])  # type: ignore[attr-defined]  # the fake's queue
            agent._receive(buf, ev[1])
        elif ev[0] == "tick":
            agent._tick(ev[1])
        else:
            got = ("state", ev[1], tuple(_state(agent.tx[k].tx, ev[1]) for k in sorted(agent.tx)))
            assert got == ev, ev
    assert all(tf.tx.done for tf in agent.tx.values())


@pytest.mark.parametrize("cc", sorted(REGISTRY))
def test_agent_and_simulator_decide_identically(cc: str) -> None:
    cfg = TransportConfig(mss=1000, window=32, ack_every=1, rto=1e-3, min_rto=200e-6,
                          max_rto=0.1, cc=cc, base_rtt=2 * DELAY_US * 1e-6, tick=100e-6)
    log = _run_sim(cfg)
    sends = [e for e in log if e[0] == "send" and e[2] is not None]
    resent = sorted(e[2] for e in sends if e[3] & F_RETX)
    assert len(sends) == 62 and resent == [5, 7]      # the lost 5 and the late 7, once each
    assert any(e[3] & F_ACKREQ for e in sends)        # the last packet at least asks
    assert any(e[0] == "tick" for e in log)
    final = [e for e in log if e[0] == "state"][-1]
    assert final[2][0][-1] == 1                       # 7's resend seen spurious by the sender
    _replay_agent(cfg, log)


@pytest.mark.parametrize("cc", sorted(REGISTRY))
def test_two_overlapping_messages_to_one_peer_decide_identically(cc: str) -> None:
    cfg = TransportConfig(mss=1000, window=32, ack_every=1, rto=1e-3, min_rto=200e-6,
                          max_rto=0.1, cc=cc, base_rtt=2 * DELAY_US * 1e-6, tick=100e-6)
    log = _run_sim(cfg, two=True)
    sends = [e for e in log if e[0] == "send" and e[2] is not None]
    first = {fl: min(i for i, e in enumerate(sends) if e[4] == fl and not e[3] & F_RETX)
             for fl in (0, 1)}
    last_new0 = max(i for i, e in enumerate(sends) if e[4] == 0 and not e[3] & F_RETX)
    # served in order on the shared connection: message 1's first packet after message 0's last
    # new one, while message 0 is still unacknowledged (its lost 5 was resent later)
    assert first[1] > last_new0
    assert any(e[4] == 0 and e[3] & F_RETX for e in sends[first[1]:])
    assert sorted((e[4], e[2]) for e in sends if e[3] & F_RETX) == [(0, 5), (0, 7), (1, 3)]
    _replay_agent(cfg, log, two=True)
