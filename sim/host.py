"""A simulated host: runs its ranks' schedule programs with traffic/transport.py in virtual time.

It does what traffic/agent.py's HostAgent does on Mininet — post a step's sends, segment each
into packets with the transport's SenderFlow, answer data with (S)ACKs from ReceiverFlow, step
when every receive arrived and every send was acknowledged — but events replace the polling loop
and the NIC replaces the pacer: one frame at a time onto the host link at its rate, pending ACKs
first, then data round-robin over the flows that may send. Congestion control and timers are
the agent's too: each SenderFlow runs the transport's algorithm (traffic.congestion) on the
same inputs — packets newly acknowledged, their CE echoes (the ACK's per-packet bitmap), RTT
samples from the send times — and a rate-based algorithm's pacer holds a flow out of the NIC's
round robin until its next send time.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from model.spec import HostSpec
from traffic.metrics import FlowRecord, RankMetrics, RecvRecord, StepRecord
from traffic.policies import PathPolicy, PolicySpec, feed_ack
from traffic.schedules import Schedule
from traffic.transport import (
    Ack,
    Connections,
    ReceiverFlow,
    SenderFlow,
    TransportConfig,
    cc_fields,
)
from traffic.wire import ACK, F_ACK, F_ACKREQ, F_LAST, F_RETX, HDR, ROCEV2_PORT, VERSION

from . import frames
from .events import EventLoop
from .link import Link

if TYPE_CHECKING:
    from traffic.schedules.format import Send, Step

    from .switch import Receive

_HDR_pack = HDR.pack
_HDR_unpack_from = HDR.unpack_from
_ACK_unpack_from = ACK.unpack_from
_HDR_AT, _ACK_AT, _TOS_AT, _SPORT_AT = frames.HDR_AT, frames.ACK_AT, frames.TOS_AT, \
    frames.SPORT_AT
_ECN_MASK, _ECN_CE = frames.ECN_MASK, frames.ECN_CE
_DATA_MIN = frames.HDR_AT + HDR.size


SIM_TRANSPORT = TransportConfig(ack_every=8, ack_delay=50e-6, rto=1e-3, min_rto=200e-6,
                                max_rto=0.5, tick=100e-6)
"""The agent's transport tuned for µs data-centre RTTs: ACKs coalesced over 8 packets as the
agent's (at 100 Gb/s an ACK every 2 packets took 3% of every link and of each sender's NIC;
a window that closes below 8 asks for its ACK with F_ACKREQ instead of waiting for the
delayed-ACK timer), timers looked at every 100 µs, a 1 ms initial RTO and a 200 µs floor under RFC 6298's estimate (RDMA
NICs time out in µs to ms, not the agent's tens of ms tuned for Mininet's loaded veths)."""


@dataclass(frozen=True)
class HostConfig:
    """``transport``: the agent's transport config, congestion control included (its
    ``uses_ecn`` decides whether data leaves ECT(0); its ``tick`` is the timer granularity for
    RTOs and delayed ACKs, as the agent's); ``path_policy``: the hosts' entropy choice per
    packet (traffic.policies, as the agent's)."""

    transport: TransportConfig = SIM_TRANSPORT
    qps: int = 1
    path_policy: PolicySpec = PolicySpec()


class _Tx:
    __slots__ = ("flow", "rank", "dst", "step", "collective", "s", "prefixes", "posted",
                 "dst_host", "policy", "ready", "armed", "paced", "job")

    def __init__(self, flow: int, rank: int, dst: int, step: int, collective: int,
                 s: SenderFlow, posted: float, dst_host: SimHost, policy: PathPolicy,
                 job: int) -> None:
        self.flow, self.rank, self.dst, self.step, self.collective = flow, rank, dst, step, \
            collective
        self.s, self.posted, self.dst_host = s, posted, dst_host
        self.policy = policy
        self.job = job   # the job id its frames carry
        self.prefixes: dict[int | tuple[int, int], bytes] = {}
        """Its frames' headers up to the collective header, by entropy (full packets) or
        (entropy, length)."""
        self.ready = False   # in the host's ready list
        self.armed: float | None = None   # its entry's time in the host's timer heap
        self.paced = False   # a pacer wake-up is scheduled


class _Rx:
    __slots__ = ("r", "src", "dst", "ce", "peer", "sport")

    def __init__(self, r: ReceiverFlow, src: int, dst: int, peer: SimHost) -> None:
        self.r, self.src, self.dst, self.ce, self.peer = r, src, dst, 0, peer
        self.sport = ROCEV2_PORT   # the ACKs' UDP source port: the data's (see receive)


_IDLE, _COMPUTE, _RUNNING = 0, 1, 2


class _Rank:
    """A rank's place in its program; ``waiting``: flows the running step still needs (its
    receives, and its sends unless the step does not wait for them); ``open_sends``: network
    sends not yet fully acknowledged (a rank is finished only when that is 0)."""

    __slots__ = ("rank", "pos", "phase", "ready_at", "compute_start", "step_start", "done",
                 "metrics", "waiting", "open_sends")

    def __init__(self, rank: int, metrics: RankMetrics) -> None:
        self.rank, self.pos, self.phase, self.ready_at = rank, 0, _IDLE, 0.0
        self.compute_start = self.step_start = 0.0
        self.done = False
        self.metrics = metrics
        self.waiting: set[int] = set()
        self.open_sends = 0


class Job:
    """What the hosts of one run share: the schedule, where each rank runs, the config."""

    def __init__(self, schedule: Schedule, rank_hosts: list[SimHost], cfg: HostConfig) -> None:
        self.s = schedule
        self.rank_hosts = rank_hosts
        self.cfg = cfg
        self.flows = schedule.flow_index()
        self.ranks_left = schedule.ranks
        """Ranks (of this process's part, in a split run) not finished yet."""
        self.done_at: float | None = None
        """When the last of them finished."""
        self.on_done: Callable[[float], None] | None = None
        """Called then (sim.network ends the run a lookahead later; None: at once)."""
        self.path_model: Any = None
        """model.paths.PathModel of the fabric, for pinned split (set by the network)."""
        self.ect = cfg.transport.uses_ecn or cfg.path_policy.uses_ecn
        """Data leaves ECN-capable (ECT(0)): the algorithm or the path policy reads marks."""

    def network_flows(self) -> int:
        """Sends that cross the network (a send to a rank on the same host does not)."""
        h = self.rank_hosts
        return sum(1 for src, snd in self.flows.values() if h[src] is not h[snd.dst])


class SimHost:
    """One host of the fabric; ``connect`` gives it its link to the edge switch."""

    def __init__(self, spec: HostSpec, loop: EventLoop) -> None:
        self.spec = spec
        self.name = spec.name
        self.ip = spec.ip
        self.mac = spec.mac
        self.gw_mac = spec.gateway_mac or "00:00:00:00:00:00"
        self.loop = loop
        self._tx_at = loop.scheduler(self._tx_event)
        """Schedules the NIC's next send (``bind``)."""
        self.link: Link | None = None
        self.job: Job | None = None
        self.ranks: list[_Rank] = []
        self._rank: dict[int, _Rank] = {}
        self.tx: dict[int, _Tx] = {}
        self.rx: dict[int, _Rx] = {}
        self.local_done: dict[int, float] = {}
        self.connections = Connections()
        """Per-peer congestion and RTT state, as the agent keeps it."""
        self._ready: deque[_Tx] = deque()
        self._timers: list[tuple[float, int, _Tx]] = []
        self._acks: deque[bytes] = deque()
        self._ack_prefix: dict[tuple[str, int], bytes] = {}
        self._rx_pending: set[int] = set()
        self._finished_tx: set[int] = set()
        self._nic_free = 0.0
        self._tx_scheduled = False
        self._tick_scheduled = False
        self._zeros = b""
        self.frames_sent = 0
        self.bytes_sent = 0
        self.frames_received = 0
        self.bad_frames = 0
        self.hold_us: dict[bytes, float] = {}
        """Propagation delay added on arrival, by source IPv4 address (4 bytes):
        SimConfig.prop_at_hosts."""

    def bind(self, loop: EventLoop) -> None:
        """Run on ``loop`` from now on (sim.core hands the hosts to its C loop)."""
        self.loop = loop
        self._tx_at = loop.scheduler(self._tx_event)

    @property
    def flows_done(self) -> int:
        """Network sends of this host's ranks fully acknowledged so far."""
        return len(self._finished_tx)

    def connect(self, link: Link, peer_receive: Receive, peer_port: int) -> None:
        link.attach(self.loop, peer_receive, peer_port)
        self.link = link

    @property
    def line_rate_bps(self) -> float:
        """The NIC's rate (an unrated link: 1 Tb/s, for the algorithms that need a number)."""
        return (self.link.rate_bps if self.link is not None else None) or 1e12

    def add_rank(self, rank: int, job: Job) -> None:
        self.job = job
        self._zeros = bytes(job.cfg.transport.mss)
        m = RankMetrics(rank=rank, host=self.name, job=job.s.job, schedule=job.s.name,
                        transport="sim", path_policy=job.cfg.path_policy.label)
        st = _Rank(rank, m)
        self.ranks.append(st)
        self._rank[rank] = st

    def start(self, now: float, offset_us: float = 0.0) -> None:
        """Run the ranks' programs from ``now``, or ``offset_us`` later (the host's start
        skew: SimConfig.start_skew_us)."""
        if not self.ranks:
            return
        if offset_us > 0:
            self.loop.schedule(now + offset_us, self._wake)
        else:
            self._advance(now)

    # -- NIC ---------------------------------------------------------------------------------
    def _kick(self, now: float) -> None:
        if self._tx_scheduled:
            return
        if self._nic_free > now:
            self._tx_scheduled = True
            self._tx_at(self._nic_free)
            return
        self._tx_event(now, None)

    def _tx_event(self, now: float, _: Any) -> None:
        """The NIC is free: the next frame onto the link, pending ACKs first."""
        self._tx_scheduled = False
        frame = self._acks.popleft() if self._acks else self._next_data(now)
        if frame is None:
            return
        link = self.link
        assert link is not None
        n = len(frame)
        self.frames_sent += 1
        self.bytes_sent += n
        link.send(now, frame)
        self._nic_free = t = now + n * link.us_per_byte
        self._tx_scheduled = True
        self._tx_at(t)

    def _next_data(self, now: float) -> bytes | None:
        """The next data frame, round-robin over the flows that may send.

        The ready list holds only flows that could send when they joined it; one that turns
        out blocked (window full, nothing to resend) leaves it and rejoins at the tail when an
        ACK or a timeout may have unblocked it — the active list of Deficit Round Robin. A scan
        over every posted flow instead would cost O(flows) per frame: ~1,000 per host in a
        k=16 AllToAll."""
        ready = self._ready
        now_s = now * 1e-6
        while ready:
            f = ready.popleft()
            s = f.s
            pkt = None if s.n_acked == s.npkts else s.next_packet(now_s)
            if pkt is None:
                f.ready = False
                if not f.paced and s.n_acked != s.npkts and s.held(now_s):
                    # the pacer holds it: back in the round robin at its next send time
                    f.paced = True
                    self.loop.schedule(s.conn.paced_until * 1e6, self._unpace, f)
                continue
            ready.append(f)
            if f.armed is None:
                self._arm(f)
            seq, retx = pkt
            npkts = s.npkts
            if not retx and s.next_new == npkts and s.conn.sending:
                # its last new packet: the connection's next message may send now
                self._make_ready(s.conn.sending[0].owner)
            if seq == npkts - 1:   # SenderFlow.length, .flags
                length = s.nbytes - seq * s.cfg.mss
                flags = (F_RETX | F_LAST) if retx else F_LAST
            else:
                length = s.cfg.mss
                flags = F_RETX if retx else 0
            if s.ack_request:
                flags |= F_ACKREQ
            qp = f.policy.choose(seq, now_s)
            prefix = f.prefixes.get(qp if length == s.cfg.mss else (qp, length))
            if prefix is None:
                prefix = self._prefix(f, qp, length)
            # frames.data_frame, inline
            return (prefix + _HDR_pack(VERSION, flags, f.job, f.rank, f.dst, f.step & 0xFFFF,
                                       qp, f.flow, seq, npkts, length, 0)
                    + self._zeros[:length])
        return None

    def _prefix(self, f: _Tx, qp: int, length: int) -> bytes:
        """The Ethernet/IPv4/UDP header of ``f``'s data packets of ``length`` bytes on
        entropy ``qp`` (kept per flow: a full packet's under ``qp``, others' under both)."""
        job = self.job
        assert job is not None
        prefix = f.prefixes[qp if length == f.s.cfg.mss else (qp, length)] = frames.l2l3_header(
            self.mac, self.gw_mac, self.ip, f.dst_host.ip, f.policy.ports[qp], ROCEV2_PORT,
            HDR.size + length, frames.ECN_ECT0 if job.ect else 0)
        return prefix

    def _make_ready(self, f: _Tx) -> None:
        if not f.ready and not f.s.done:
            f.ready = True
            self._ready.append(f)

    def _unpace(self, now: float, f: _Tx) -> None:
        f.paced = False
        for m in f.s.conn.active:   # the pacer is the connection's: its other messages too
            self._make_ready(m.owner)
        self._kick(now)

    def _arm(self, f: _Tx) -> None:
        """Put ``f`` in the timer heap at its next retransmission timeout, if it has one and
        it is earlier than the entry already there (by more than a tick: the RTO estimate
        moves with every RTT sample). A superseded entry stays in the heap and is skipped."""
        t = f.s.next_timeout()
        if t is not None and (f.armed is None or
                              t < f.armed - self.job.cfg.transport.tick):  # type: ignore[union-attr]  # job is set (add_rank) before any flow is armed
            f.armed = t
            heapq.heappush(self._timers, (t, f.flow, f))

    # -- receive path ------------------------------------------------------------------------
    def receive(self, now: float, arg: tuple[int, bytes]) -> None:
        frame = arg[1]
        self.arrive(now, frame, len(frame))

    def _held(self, now: float, arg: tuple[bytes, int]) -> None:
        self.arrive(now, arg[0], arg[1], True)

    def arrive(self, now: float, frame: bytes, n: int, held: bool = False) -> None:
        """A frame of ``n`` bytes arrived; ``frame`` is all of it or at least its first
        ``frames.ACK_FRAME_LEN`` bytes (the C core hands over no more: nothing here reads a
        payload). ``held``: it already waited out its ``hold_us``."""
        if self.hold_us and not held:
            hold = self.hold_us.get(frame[26:30])   # by IPv4 source
            if hold:
                self.loop.schedule(now + hold, self._held, (frame, n))
                return
        self.frames_received += 1
        job = self.job
        if job is None or n < _DATA_MIN:
            self.bad_frames += 1
            return
        (_v, flags, jid, src, dst, _step, _qp, flow, seq, npkts, length,
         _resv) = _HDR_unpack_from(frame, _HDR_AT)
        if jid != job.s.job:
            self.bad_frames += 1
            return
        now_s = now * 1e-6
        if flags & F_ACK:
            self._on_ack(now, now_s, frame, n, flags, flow)
            return
        x = self.rx.get(flow)
        if x is None:
            info = job.flows.get(flow)
            if info is None or info[0] != src or info[1].dst != dst:
                self.bad_frames += 1
                return
            x = self.rx[flow] = _Rx(ReceiverFlow(npkts, job.cfg.transport), src, dst,
                                    job.rank_hosts[src])
        r = x.r
        if n < _ACK_AT + length:   # cut to its headers at a full queue
            acks = r.on_trimmed(seq, now_s)
            if acks:
                self._queue_acks(x, flow, acks)
                self._kick(now)
            return
        ce = frame[_TOS_AT] & _ECN_MASK == _ECN_CE
        if ce:
            x.ce += 1
        # an ACK carries the entropy of the data that triggered it, as the agent's do (and UEC
        # ACKs echo the EV): ACKs spread over paths like the data; a fixed ACK port would put
        # all of a flow's ACKs on one ECMP path, and one failed link there stalls the flow
        # whatever its data does
        x.sport = (frame[_SPORT_AT] << 8) | frame[_SPORT_AT + 1]
        new, acks = r.on_data(seq, length, bool(flags & F_RETX), now_s, ce,
                              bool(flags & F_ACKREQ))
        if acks:
            self._queue_acks(x, flow, acks)
            self._kick(now)
        if r.ack_pending:   # an ACK is owed: the delayed-ACK timer must look at it
            self._rx_pending.add(flow)
            if not self._tick_scheduled:
                self._ensure_tick(now)
        if new and r.received == r.npkts:
            dst_rank = self._rank.get(x.dst)
            if dst_rank is not None:
                self._flow_done(dst_rank, flow, now)

    def _on_ack(self, now: float, now_s: float, frame: bytes, n: int, flags: int,
                flow: int) -> None:
        f = self.tx.get(flow)
        if f is None or n < frames.ACK_FRAME_LEN:
            self.bad_frames += 1
            return
        cum, base, sack, ce_bits = _ACK_unpack_from(frame, _ACK_AT)
        s = f.s
        ack = Ack.parse(flags, cum, base, sack, ce_bits)
        s.on_ack(ack, now_s)
        for other in s.conn.active:
            if other is not s:   # the shared window may have opened for them too
                self._make_ready(other.owner)
        if s.newly_acked is not None:
            feed_ack(f.policy, s.newly_acked, ack, now_s)
        if s.n_acked == s.npkts and f.rank in self._rank:
            st = self._rank[f.rank]
            if flow not in self._finished_tx:
                self._finished_tx.add(flow)
                st.open_sends -= 1
                self._flow_done(st, flow, now)
        else:
            self._arm(f)
            self._make_ready(f)
        self._kick(now)

    def _queue_acks(self, x: _Rx, flow: int, acks: Sequence[Ack]) -> None:
        job = self.job
        assert job is not None
        peer = x.peer
        key = (peer.ip, x.sport)
        prefix = self._ack_prefix.get(key)
        if prefix is None:
            prefix = self._ack_prefix[key] = frames.ack_prefix(self.mac, self.gw_mac, self.ip,
                                                               peer.ip, x.sport)
        for a in acks:
            self._acks.append(frames.ack_frame(prefix, job.s.job, x.dst, x.src, flow, a.cum,
                                               a.base, a.sack, a.nack, x.ce, a.ce, a.dup,
                                               a.trimmed))
            x.ce = 0

    # -- timers ------------------------------------------------------------------------------
    def _ensure_tick(self, now: float) -> None:
        if not self._tick_scheduled and self.job is not None:
            self._tick_scheduled = True
            self.loop.schedule(now + self.job.cfg.transport.tick * 1e6, self._tick)

    def _tick(self, now: float, _: Any) -> None:
        self._tick_scheduled = False
        now_s = now * 1e-6
        # only flows whose oldest unacknowledged packet is older than the RTO can act (a
        # flow's on_tick touches that flow alone, so which others are skipped cannot matter)
        timers = self._timers
        while timers and timers[0][0] <= now_s:
            t, _flow, f = heapq.heappop(timers)
            if t != f.armed:
                continue  # superseded by an earlier entry
            f.armed = None
            if f.s.done:
                continue
            f.s.on_tick(now_s)
            self._arm(f)
            self._make_ready(f)
        for flow in list(self._rx_pending):
            x = self.rx[flow]
            acks = x.r.on_tick(now_s)
            if acks:
                self._queue_acks(x, flow, acks)
            if not x.r.ack_pending:
                self._rx_pending.discard(flow)
        self._kick(now)
        if self._rx_pending or len(self._finished_tx) < len(self.tx):  # sends still open
            self._ensure_tick(now)

    # -- programs ----------------------------------------------------------------------------
    def _wake(self, now: float, _: Any) -> None:
        self._advance(now)

    def _recv_done(self, flow: int) -> bool:
        if flow in self.local_done:
            return True
        x = self.rx.get(flow)
        return x is not None and x.r.done

    def _flow_done(self, st: _Rank, flow: int, now: float) -> None:
        """``flow`` (a receive or send of rank ``st``) completed; step on if nothing is left."""
        w = st.waiting
        if flow in w:
            w.discard(flow)
            if not w:
                self._advance(now)
        elif st.pos >= len(self.job.s.programs[st.rank]) and not st.open_sends:  # type: ignore[union-attr]  # job is set (add_rank) before any flow completes
            self._advance(now)

    def _advance(self, now: float) -> None:
        job = self.job
        assert job is not None
        now_s = now * 1e-6
        for st in self.ranks:
            prog = job.s.programs[st.rank]
            while not st.done:
                if st.pos >= len(prog):
                    if st.open_sends:
                        break
                    st.done = True
                    st.metrics.finish = now_s
                    job.ranks_left -= 1
                    if job.ranks_left == 0:  # the job is over; stray timers need not run
                        job.done_at = now
                        if job.on_done is None:
                            self.loop.stop()
                        else:
                            job.on_done(now)
                    break
                step = prog[st.pos]
                if st.phase == _IDLE:
                    st.phase = _COMPUTE
                    st.compute_start = now
                    ready = now + step.compute_us
                    if step.at_us is not None:
                        ready = max(ready, step.at_us)
                    st.ready_at = ready
                    if ready > now:
                        self.loop.schedule(ready, self._wake)
                        break
                if st.phase == _COMPUTE:
                    if now < st.ready_at:
                        break
                    st.phase = _RUNNING
                    st.step_start = now
                    self._post(st, now)
                    st.waiting = {x.flow for x in step.recvs if not self._recv_done(x.flow)}
                    if step.wait_sends:
                        st.waiting.update(x.flow for x in step.sends
                                          if x.flow not in self.local_done
                                          and x.flow not in self._finished_tx)
                    if step.wait_acked:   # a pipelined step: a send buffer slot must be free
                        st.waiting.update(fl for fl in step.wait_acked
                                          if fl not in self.local_done
                                          and fl not in self._finished_tx)
                if st.phase == _RUNNING:
                    if st.waiting:
                        break
                    st.metrics.steps.append(StepRecord(
                        rank=st.rank, step=st.pos, label=step.label, collective=step.collective,
                        compute_start=st.compute_start * 1e-6, start=st.step_start * 1e-6,
                        finish=now_s))
                    st.pos += 1
                    st.phase = _IDLE

    def _post(self, st: _Rank, now: float) -> None:
        job = self.job
        assert job is not None
        step = job.s.programs[st.rank][st.pos]
        if st.metrics.start is None:
            st.metrics.start = now * 1e-6
        posted = False
        for snd in step.sends:
            dst_host = job.rank_hosts[snd.dst]
            if dst_host is self:
                self.local_done[snd.flow] = now
                continue
            self._open_send(st, step, snd, dst_host, now)
            st.open_sends += 1
            posted = True
        if posted:
            self._ensure_tick(now)
            self._kick(now)
        # a send to a rank on this host is a receive done there: tell that rank (later, so
        # this rank's bookkeeping is complete first)
        for snd in step.sends:
            if snd.flow in self.local_done:
                other = self._rank[snd.dst]
                self.loop.schedule(now, self._local_arrival, (other, snd.flow))

    def _open_send(self, st: _Rank, step: Step, snd: Send, dst_host: SimHost,
                   now: float) -> None:
        """Open one send's flow to another host and make it ready (CHost: in C)."""
        job = self.job
        assert job is not None
        s = self.connections.open(snd.bytes, job.cfg.transport, self.line_rate_bps,
                                  snd.dst, now * 1e-6)
        f = _Tx(snd.flow, st.rank, snd.dst, st.pos, step.collective, s, now, dst_host,
                self._policy(st.rank, snd.flow, dst_host, s), job.s.job)
        s.owner = f
        self.tx[snd.flow] = f
        self._make_ready(f)

    def _policy(self, rank: int, flow: int, dst_host: SimHost, s: SenderFlow) -> PathPolicy:
        """The flow's path policy over its entropy set (pinned split: model.paths)."""
        p = self._policy_for(rank, flow, dst_host, s.npkts)
        if p.feedback:
            s.newly_acked = []
        return p

    def _policy_for(self, rank: int, flow: int, dst_host: SimHost, npkts: int) -> PathPolicy:
        """The path policy of a flow of ``npkts`` packets."""
        job = self.job
        assert job is not None
        pol = job.cfg.path_policy
        if pol.pin:
            from model.paths import pinned_flow_ports

            ports = pinned_flow_ports(job.path_model, job.s.job, rank, flow, self.ip,
                                      dst_host.ip, pol.entropies(job.cfg.qps))
        else:
            ports = pol.ports(job.s.job, rank, flow, job.cfg.qps)
        return pol.make(ports, npkts, job.s.job, rank, flow)

    def _local_arrival(self, now: float, arg: tuple[_Rank, int]) -> None:
        self._flow_done(arg[0], arg[1], now)

    # -- results -----------------------------------------------------------------------------
    def results(self) -> list[RankMetrics]:
        """Every local rank's metrics in the agent's record types (times: virtual seconds)."""
        job = self.job
        if job is None:
            return []
        by_rank = {st.rank: st.metrics for st in self.ranks}
        for m in by_rank.values():
            m.flows.clear()
            m.received.clear()
        self._flow_records(by_rank)
        for flow, t in self.local_done.items():
            src, snd = job.flows[flow]
            if src in by_rank:
                by_rank[src].flows.append(FlowRecord(
                    flow=flow, src=src, dst=snd.dst, step=-1, collective=-1, bytes=snd.bytes,
                    packets=0, packets_sent=0, posted=t * 1e-6, start=t * 1e-6,
                    finish=t * 1e-6, local=True))
        self._recv_records(by_rank)
        out = []
        for st in self.ranks:
            m = st.metrics
            m.completed = st.done
            if not st.done and m.error is None:
                m.error = "did not finish before the simulation ended"
            m.collectives = m.collective_times(job.s)
            out.append(m)
        return out

    def _flow_records(self, by_rank: dict[int, RankMetrics]) -> None:
        """Each sent flow's FlowRecord, to its rank (CHost: read from C)."""
        for f in self.tx.values():
            s = f.s
            by_rank[f.rank].flows.append(FlowRecord(
                flow=f.flow, src=f.rank, dst=f.dst, step=f.step, collective=f.collective,
                bytes=s.nbytes, packets=s.npkts, packets_sent=s.packets_sent,
                posted=f.posted * 1e-6, start=s.start, finish=s.finish,
                retransmissions=s.retransmissions, timeouts=s.timeouts, nacks=s.nacks,
                trim_nacks=s.trim_nacks, acked_packets=s.n_acked, sports=list(f.policy.ports),
                sport_packets=list(f.policy.uses), **cc_fields(s)))

    def _recv_records(self, by_rank: dict[int, RankMetrics]) -> None:
        """Each received flow's RecvRecord, to its rank (CHost: read from C)."""
        for flow, x in self.rx.items():
            st_ = x.r.stats
            by_rank[x.dst].received.append(RecvRecord(
                flow=flow, src=x.src, dst=x.dst, bytes=x.r.bytes, packets=x.r.npkts,
                packets_received=x.r.received, arrivals=st_.packets, duplicates=st_.duplicates,
                reordered=st_.reordered,
                reorder_distance={int(k): v for k, v in sorted(st_.reorder_distance.items())},
                start=x.r.start, finish=x.r.finish))
