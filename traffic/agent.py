"""The host agent: runs the schedule's programs of the ranks placed on this host.

One thread, one event loop: drain the receive socket (data -> receiver state + ACKs, ACKs ->
sender state), advance each local rank's program (compute phase, post sends, detect step
completion), then send paced data packets round-robin over the active flows. Data frames and
ACKs are pre-built with struct (traffic.frames; no scapy in this process) and written to an
AF_PACKET socket in batches (traffic.batchio: sendmmsg, recvmmsg on the UDP socket, per-packet
calls where those are missing); an ACK leaves from the UDP
source port of the data packet that triggered it (its entropy), so a flow's ACKs spread over
the ECMP paths like its data and one dead link cannot stall every ACK. Everything addressed to
us arrives on one kernel UDP socket on port 4791 (so the kernel demultiplexes for us and never
answers our data with ICMP port-unreachable).
Every wait is bounded: the run ends at `timeout` whatever happens, and metrics say so.
"""

from __future__ import annotations

import os
import select
import socket
import time
from collections import deque
from dataclasses import dataclass, field

from common.histogram import LogHistogram
from model.dims import Dim, dim
from model.entropy import entropy_port

from . import batchio
from .delayline import DelayLine
from .frames import FlowHeader, FrameCache
from .metrics import FlowRecord, RankMetrics, RecvRecord, StepRecord
from .nexthop import Route, resolve
from .policies import PathPolicy, PolicySpec, feed_ack
from .schedules import Schedule, Send, Step
from .transport import (
    PACE_SLACK,
    WIRE_OVERHEAD,
    Ack,
    Connections,
    ReceiverFlow,
    SenderFlow,
    TransportConfig,
    cc_fields,
)
from .wire import (
    ACK,
    F_ACK,
    F_ACKREQ,
    F_LAST,
    F_READY,
    F_RETX,
    HDR,
    ROCEV2_PORT,
    VERSION,
)

_SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)  # Linux value; Python lacks the name
_IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
BEACON_ENTROPIES = 16   # source ports the READY beacons rotate over
LINGER_RTOS = 10        # after the last step: exit once no data arrived for this many RTOs
F_DONE = F_READY | F_LAST
"""A finished agent's notice to the peers it sent data to (a READY-sized control frame): every
flow it sent is acknowledged and every flow it receives complete, so it will never send data
again. An agent that has finished and heard it from every peer that sends to it leaves at once
instead of lingering (a TCP FIN, in effect). One notice per peer, sent when the sender
finishes: the peer is still there (it waits for it), so nothing arrives at a closed port. The
notice carries the run's nonce (``run_nonce``) in the sequence field, so one from an earlier
run with the same job id is ignored. A lost notice costs only the linger."""
ECN_ECT0, ECN_CE = 0x02, 0x03
_PROC_UDP = ("/proc/net/udp", "/proc/net/udp6")


def udp_socket_drops(sock: socket.socket) -> int | None:
    """Datagrams the kernel dropped at this UDP socket since it was opened (receive buffer
    full, or a checksum or filter failure), from the ``drops`` column of /proc/net/udp in the
    socket's network namespace; None where it cannot be read. Read once, at the end: the
    receive path pays nothing for it."""
    try:
        inode = str(os.fstat(sock.fileno()).st_ino)
    except OSError:
        return None
    for path in _PROC_UDP:
        try:
            with open(path) as fh:
                next(fh, None)
                for line in fh:
                    cols = line.split()
                    if len(cols) >= 13 and cols[9] == inode:
                        return int(cols[-1])
        except (OSError, ValueError):
            continue
    return None


@dataclass
class AgentConfig:
    """The agent's knobs. Each time or rate declares its dimension (model.dims): ``TIME`` and
    ``RATE`` model the fabric and are dilated with the experiment (the transport's timers are
    in ``transport``); ``WALL`` ones are mechanisms of the emulation on this machine — the
    start barrier, the hard timeout, the linger floor — that model nothing and are never
    scaled (tests/experiments/test_dilation_agent.py enumerates them all)."""

    rate_bps: float = dim(Dim.RATE, 1e9)   # pacing rate of this host's data, bits/s on the wire
    qps: int = 1                   # entropy values (source ports) per flow
    transport: TransportConfig = field(default_factory=TransportConfig)
    timeout: float = dim(Dim.WALL, 60.0)   # hard bound on the whole run, seconds
    linger: float = dim(Dim.WALL, 0.3)     # keep ACKing peers at least this long after our
    #                                        last step (the peers' agents share this machine)
    linger_rtos: float = dim(Dim.COUNT, LINGER_RTOS)  # ... and until no data arrived for
    #                                        this many initial RTOs (the RTO is dilated)
    start_at: float | None = dim(Dim.WALL, None)  # wall-clock (time.time()) start of the job
    nexthop_mac: str | None = None
    port: int = ROCEV2_PORT
    pace_credit: float = dim(Dim.TIME, 0.001)
    """How far the pacer may fall behind its schedule and still catch up (a burst of at most
    this long at ``rate_bps``); a longer lag — the loop woke late, or nothing was to send — is
    forgotten: no credit for idle time, no bursts. A fabric time: dilated, the burst is the
    same number of packets at any TDF."""
    pace_lead_frames: float = dim(Dim.COUNT, 2.0)
    """How many MTU frame times ahead of its schedule the NIC pacer hands frames to the kernel:
    the host's qdisc (HTB at the link rate, as the fabric shapes every host link) paces them
    onto the wire, so a loop that wakes up to this late still leaves the wire busy. The send
    lag counts only what is later than that (the wire went idle). A count of frames: the same
    at any TDF."""
    beacon_gap: float = dim(Dim.WALL, 0.005)
    """First gap between READY rounds of the start barrier (doubling up to
    ``beacon_gap_max``): the barrier waits for interpreters to start, before anything is
    timed, so it is the machine's, not the fabric's."""
    beacon_gap_max: float = dim(Dim.WALL, 0.1)
    # TCP mode (tcpagent.py)
    tcp_port: int = 4792           # listener port of every rank ...
    tcp_ports: list[int] | None = None  # ... or one per rank (several agents on one address)
    tcp_rate_bps: float | None = dim(Dim.RATE, None)  # SO_MAX_PACING_RATE of a flow (over its
    #                                                   QPs)
    path_policy: PolicySpec = field(default_factory=PolicySpec)
    """Entropy (source port) per packet (policies.py); ECN policies send ECT(0) data and read
    each arriving packet's TOS to echo CE per packet."""
    fabric: object | None = None
    """model.spec.FabricSpec the hosts run in: needed by pinned split (pathmodel.py)."""
    prop_delay: float = dim(Dim.TIME, 0.0)
    """Propagation delay per link, s, that this host adds to what arrives (traffic.delayline:
    the eBPF target's fabric cannot delay frames itself); 0: none."""
    path_links: dict[str, int] = field(default_factory=dict)
    """Links on the path from each peer (by address) to this host, for ``prop_delay``."""


@dataclass
class _TxFlow:
    flow: int
    rank: int
    dst: int
    step: int
    collective: int
    tx: SenderFlow
    header: FlowHeader
    dst_ip: str
    posted: float
    policy: PathPolicy


@dataclass
class _RankState:
    rank: int
    pos: int = 0
    phase: str = "idle"       # idle -> compute -> running -> (next step) ... -> done
    ready_at: float = 0.0
    step_start: float = 0.0
    step_compute_start: float = 0.0
    done: bool = False


class HostAgent:
    """Executes `local_ranks` of `schedule`; `hosts[r]` is rank r's IPv4 address."""

    def __init__(self, schedule: Schedule, local_ranks: list[int], hosts: list[str],
                 cfg: AgentConfig) -> None:
        self.s = schedule
        self.local = sorted(local_ranks)
        self.hosts = hosts
        self.cfg = cfg
        self.flows = schedule.flow_index()
        self.routes: dict[str, Route] = {}
        self.frames = FrameCache()
        self.out: dict[str, batchio.BatchSender | batchio.PlainSender] = {}
        """Per interface: the frames queued for its raw socket (``_flush`` writes them)."""
        self.rxb: batchio.BatchReceiver | None = None
        self.tx: dict[int, _TxFlow] = {}
        self.active: deque[int] = deque()
        self.rx: dict[tuple[int, int], ReceiverFlow] = {}
        self.rx_sport: dict[tuple[int, int], int] = {}
        """(src, flow) -> UDP source port of the flow's latest data packet: its ACKs' port."""
        self.local_done: dict[int, float] = {}   # flows between two local ranks
        self.rx_malformed = 0
        """Datagrams on our port too short or of another wire version: a corrupt frame."""
        self.rx_stale = 0
        """Datagrams of another job, a flow or rank not ours, or an ACK of no flow we send:
        late arrivals of an earlier run, not losses of this one."""
        self.drops: dict[str, int | None] | None = None
        """The agent's drop sites at the end of the run (``close``): the receive socket's
        overflows, sends the host kernel refused, the datagrams above."""
        self.send_lag_us = LogHistogram()
        self.read_lag_us = LogHistogram()
        """How long datagrams waited in the receive socket before the loop read them, µs
        (with the delay line: the kernel's receive timestamp is their arrival)."""
        """How late the loop woke for its next paced send or timer, µs (the fidelity guard's
        host pacing lag: a starved agent cannot send at its rate)."""
        self.metrics = {r: RankMetrics(rank=r, host=hosts[r], job=schedule.job,
                                       schedule=schedule.name, path_policy=cfg.path_policy.label)
                        for r in self.local}
        self.state = {r: _RankState(r) for r in self.local}
        self._t0_wall = 0.0
        self._t0 = 0.0
        self._start_mono = 0.0
        self.unheard: set[str] = set()
        self.senders: set[str] = set()
        """Peers whose data comes to us: until each has said it finished (F_DONE), we linger."""
        self.receivers: set[str] = set()
        """Peers we send data to: told (F_DONE) when we finish."""
        self.finished_peers: set[str] = set()
        self.exit_reason = ""
        """Why the loop ended: peers finished, quiet (the linger), or timeout."""
        self._last_data = float("-inf")   # monotonic time of the latest data arrival
        self.ecn = cfg.path_policy.uses_ecn or cfg.transport.uses_ecn
        """Data leaves ECT(0) and arrivals' TOS is read: the path policy or the congestion
        control reacts to CE marks."""
        self.connections = Connections()
        """Per-peer congestion and RTT state: a step's new flow continues the last one's."""
        self._held_until: float | None = None
        """Earliest time a flow the pacer holds may send (rate-based congestion control)."""
        self.delayline = DelayLine.of(cfg.prop_delay, cfg.path_links, cfg.rate_bps)
        """Arrivals held for their propagation delay (None: the fabric adds its own)."""
        self._stamps = False
        """The receive socket stamps datagrams (SO_TIMESTAMPNS; with the delay line)."""
        self._path_model = None
        if cfg.path_policy.pin:
            from model.paths import PathModel

            if cfg.fabric is None:
                raise ValueError("pinned split needs the fabric (traffic.run --fabric)")
            self._path_model = PathModel(cfg.fabric)  # type: ignore[arg-type]

    # -- clock: monotonic inside, wall clock in the records so hosts can be merged ----------
    def wall(self, t: float) -> float:
        return self._t0_wall + (t - self._t0)

    # -- sockets -----------------------------------------------------------------------------
    def open(self) -> None:
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:  # FORCE passes net.core.rmem_max (root); a small buffer drops bursts
            self.udp.setsockopt(socket.SOL_SOCKET, _SO_RCVBUFFORCE, 16 << 20)
        except OSError:
            self.udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
        self.udp.bind(("0.0.0.0", self.cfg.port))
        self.udp.setblocking(False)
        if self.ecn:  # the TOS byte of each datagram, for the per-packet CE echo
            self.udp.setsockopt(socket.IPPROTO_IP, _IP_RECVTOS, 1)
        if self.delayline is not None:
            # the kernel's receive time of each datagram: its propagation delay counts from
            # when it arrived, not from when a late loop got round to reading it (that wait
            # would add to every hop of the round trip)
            self.udp.setsockopt(socket.SOL_SOCKET, batchio.SO_TIMESTAMPNS, 1)
            self._stamps = True
        peers = {self.hosts[snd.dst] for r in self.local for st in self.s.programs[r]
                 for snd in st.sends if snd.dst not in self.local}
        srcs = {self.hosts[x.src] for r in self.local for st in self.s.programs[r]
                for x in st.recvs if x.src not in self.local}
        self.unheard = (peers | srcs) - {self.hosts[r] for r in self.local}
        self.senders = srcs - {self.hosts[r] for r in self.local}
        self.receivers = peers - {self.hosts[r] for r in self.local}
        for ip in sorted(peers | srcs):  # srcs: where our ACKs go
            self.routes[ip] = resolve(ip, self.cfg.nexthop_mac)
        self.raw: dict[str, socket.socket] = {}
        for rt in self.routes.values():
            if rt.dev not in self.raw:
                sk = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
                sk.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
                sk.bind((rt.dev, 0))
                self.raw[rt.dev] = sk
        self.rxb = batchio.receiver(self.udp)
        # pre-build every frame template the job needs (full and short last packets), so the
        # data path never calls scapy
        mss = self.cfg.transport.mss
        for ip in self.routes:  # ACKs to srcs, READY beacons to everyone
            self.frames.prebuild_ack(self.routes[ip], ip)
        self._beacon_ports = [entropy_port(self.s.job, 0xFFFF, 0xFFFFFFFF, k)
                              for k in range(BEACON_ENTROPIES)]
        self._beacons = 0
        for r in self.local:
            for st in self.s.programs[r]:
                for snd in st.sends:
                    if snd.dst in self.local:
                        continue
                    ip = self.hosts[snd.dst]
                    for length in {min(mss, snd.bytes), snd.bytes % mss or mss}:
                        self.frames.prebuild(self.routes[ip], ip, length,
                                             ECN_ECT0 if self.ecn else 0)

    def close(self) -> None:
        self.drops = {"udp_socket_drops": udp_socket_drops(self.udp),
                      "tx_refused": sum(out.dropped for out in self.out.values()),
                      "rx_malformed": self.rx_malformed, "rx_stale": self.rx_stale}
        self.udp.close()
        for sk in self.raw.values():
            sk.close()

    # -- main loop ---------------------------------------------------------------------------
    def run(self) -> dict[int, RankMetrics]:
        self.open()
        cpu = time.process_time()
        try:
            self._loop()
            if self.delayline is not None:   # on their way when the run ended: arrived now
                self._deliver_held(time.monotonic(), self.delayline.pop_all())
                self._flush()
        finally:
            self.close()
            for m in self.metrics.values():
                m.cpu_s = time.process_time() - cpu
        return self.metrics

    def _begin(self) -> tuple[float, float, float]:
        """The run's clocks start: (now, start time, deadline); no rank is ready before the
        start barrier releases them (``_release``)."""
        now = time.monotonic()
        self._t0, self._t0_wall = now, time.time()
        start = now + max(0.0, (self.cfg.start_at or self._t0_wall) - self._t0_wall)
        deadline = now + self.cfg.timeout
        for st in self.state.values():
            st.ready_at = deadline
        return now, start, deadline

    def _timed_out(self, now: float, deadline: float) -> bool:
        """Past the deadline every rank's metrics say so (unless they have an error already)."""
        if now < deadline:
            return False
        for m in self.metrics.values():
            m.error = m.error or f"timeout after {self.cfg.timeout:g}s"
        return True

    def _release(self, now: float) -> None:
        """The start barrier is passed: every rank may run."""
        self._start_mono = now
        for st in self.state.values():
            st.ready_at = now

    def _loop(self) -> None:
        cfg = self.cfg
        now, start, deadline = self._begin()
        started = False
        next_beacon = now
        beacon_gap = cfg.beacon_gap
        next_tx = start
        next_tick = now
        finished_at: float | None = None
        gap_per_byte = 8.0 / cfg.rate_bps
        lead = cfg.pace_lead_frames * (cfg.transport.mss + WIRE_OVERHEAD) * gap_per_byte
        tick = cfg.transport.tick
        buf = bytearray(65536)
        while True:
            now = time.monotonic()
            if self._timed_out(now, deadline):
                self.exit_reason = "timeout"
                break
            self._receive(buf, now)
            if self.delayline is not None:
                self._deliver_held(now, self.delayline.pop_due(now))
            self._flush()
            if not started:
                # start barrier: every peer agent must be listening, or our first packets
                # would hit a closed port and cost a retransmission timeout
                if self.unheard and now >= next_beacon:
                    for ip in self.unheard:
                        self._send_ready(ip)
                    # back off: a peer that starts later beacons us itself (and we answer),
                    # so fast rounds only matter at first; 16 agents beaconing 15 peers every
                    # 5 ms through a slow start sent ~50k READYs, more than the data
                    next_beacon = now + beacon_gap
                    beacon_gap = min(2 * beacon_gap, cfg.beacon_gap_max)
                if not self.unheard and now >= start:
                    started = True
                    self._release(now)
            self._advance(now)
            if finished_at is None and all(st.done for st in self.state.values()):
                finished_at = now
                self._tell_finished()
            if finished_at is not None and self.senders <= self.finished_peers:
                self.exit_reason = "peers finished"
                break
            # linger while peers still retransmit to us: our ACK of a flow's last packet may
            # have died on a dead path, and a peer whose sends never complete cannot finish.
            # Its retransmissions come an RTO apart but may die too (3 of a flow's 4 entropies
            # on a dead link: one arrival per 4 RTOs), hence LINGER_RTOS of quiet
            if finished_at is not None and now - finished_at >= cfg.linger and \
                    now - self._last_data >= cfg.linger_rtos * cfg.transport.rto:
                self.exit_reason = f"quiet for {cfg.linger_rtos:g} RTOs"
                break
            # paced transmission, round-robin over flows with something to send
            sent = 0
            blocked = False     # every flow held by its window, pacer or nothing to resend
            while self.active and next_tx <= now + lead and sent < 64:
                n = self._send_one(now)
                if n == 0:
                    blocked = True
                    break
                next_tx += n * gap_per_byte
                sent += 1
            if not self.active or next_tx < now - cfg.pace_credit:
                next_tx = max(next_tx, now)  # no credit for idle time: no bursts
            if now >= next_tick:
                self._tick(now)
                next_tick = now + tick
                blocked = False   # a timeout may have queued a retransmission: go on at once
            self._flush()
            wait = min(next_tick, deadline) - now
            # wake for what is due before the next tick (a tick is a fabric time, dilated:
            # seconds of wall time at a large TDF): the barrier's beacons and start (wall),
            # the end of a compute phase, the end of the linger
            if not started:
                wait = min(wait, (next_beacon if self.unheard else start) - now)
            else:
                wait = min(wait, self._next_ready() - now)
            if finished_at is not None:
                wait = min(wait, max(finished_at + cfg.linger,
                                     self._last_data + cfg.linger_rtos * cfg.transport.rto)
                           - now)
            wait = max(0.0, wait)
            if self.delayline is not None and (due := self.delayline.next_due()) is not None:
                wait = min(wait, max(0.0, due - now))
            slack = 0.0   # how late the wake may be before the wire idles
            if self.active:
                # blocked, the NIC's schedule is no reason to wake (it is due already: waking
                # for it spun the loop at 100% CPU until an ACK came, the whole time a window
                # was full); what unblocks a flow is an ACK (the socket wakes select), a timer
                # (the tick) or its pacer
                if not blocked and next_tx - lead - now < wait:
                    wait, slack = max(0.0, next_tx - lead - now), lead
                if self._held_until is not None and self._held_until - now < wait:
                    wait, slack = max(0.0, self._held_until - now), 0.0  # a flow's own pacer
            if wait > 0:
                ready, _, _ = select.select([self.udp], [], [], wait)
                if not ready:   # woke for a paced send or a timer: how late (CPU lag)?
                    late = time.monotonic() - now - wait - slack
                    self.send_lag_us.add(max(0, int(late * 1e6)))

    def _deliver_held(self, now: float, held: list[tuple[float, bytes, str, int, bool]]
                      ) -> None:
        """Handle datagrams whose propagation delay has passed (traffic.delayline)."""
        line, self.delayline = self.delayline, None   # _datagram must not hold them again
        try:
            for _due, data, ip, sport, ce in held:
                self._datagram(data, 0, len(data), ip, sport, ce, now)
        finally:
            self.delayline = line

    def _next_ready(self) -> float:
        """When the earliest rank waiting for time (idle or computing) may go on (inf: none)."""
        return min((st.ready_at for r, st in self.state.items()
                    if not st.done and st.pos < len(self.s.programs[r])
                    and st.phase in ("idle", "compute")), default=float("inf"))

    # -- receive path ------------------------------------------------------------------------
    def _sender(self, dev: str) -> batchio.BatchSender | batchio.PlainSender:
        """Where frames for interface ``dev`` go (made on first use from its raw socket)."""
        out = self.out.get(dev)
        if out is None:
            out = self.out[dev] = batchio.sender(self.raw[dev])
        return out

    def _flush(self) -> None:
        """Write every queued frame (data, ACKs, beacons) to the wire."""
        for out in self.out.values():
            if out.n:
                out.flush()

    def _receive(self, buf: bytearray, now: float) -> None:
        """Drain the UDP socket (at most 256 datagrams): batched when recvmmsg is there."""
        rb = self.rxb
        if rb is None:
            self._receive_one_by_one(buf, now)
            return
        ecn = self.ecn
        slot = rb.slot_size
        mono = time.monotonic() - time.time() if self._stamps else 0.0   # realtime -> ours
        for _ in range(256 // rb.slots or 1):
            k = rb.recv()
            for i in range(k):
                ip, sport = rb.source(i)
                at = None
                if self._stamps and (ts := rb.stamp(i)) is not None:
                    at = self._arrived(ts + mono, now)
                self._datagram(rb.buf, i * slot, rb.length(i), ip, sport,
                               ecn and rb.tos(i) & 0x03 == ECN_CE, now, at)
            if k < rb.slots:
                return

    def _arrived(self, at: float, now: float) -> float:
        """A datagram's arrival (the kernel's stamp on our clock), never after ``now`` (the
        pass's time); the wait before this read goes into ``read_lag_us``."""
        if at > now:
            return now
        self.read_lag_us.add(int((now - at) * 1e6))
        return at

    def _receive_one_by_one(self, buf: bytearray, now: float) -> None:
        udp = self.udp
        ecn = self.ecn
        ce = False
        at = None
        mono = time.monotonic() - time.time() if self._stamps else 0.0
        for _ in range(256):
            try:
                if ecn or self._stamps:
                    n, anc, _fl, addr = udp.recvmsg_into([buf], batchio.CTRL)
                    # IP_RECVTOS delivers the TOS byte as an IP_TOS control message
                    ce = ecn and any(t == socket.IP_TOS and d and d[0] & 0x03 == ECN_CE
                                     for _lv, t, d in anc)
                    ts = batchio.timespec_stamp(anc) if self._stamps else None
                    at = None if ts is None else self._arrived(ts + mono, now)
                else:
                    n, addr = udp.recvfrom_into(buf)
            except BlockingIOError:
                return
            self._datagram(buf, 0, n, addr[0], addr[1], ce, now, at)

    def _datagram(self, buf: bytearray | bytes, off: int, n: int, ip: str, sport: int,
                  ce: bool, now: float, arrived: float | None = None) -> None:
        """One datagram from ``ip``:``sport``, ``n`` bytes at ``buf[off:]``; ``arrived``: when
        the kernel received it (None: ``now``), where its propagation delay counts from."""
        if self.delayline is not None and \
                self.delayline.hold(now if arrived is None else arrived,
                                    bytes(buf[off:off + n]), ip, sport, ce):
            return
        if n < HDR.size:
            self.rx_malformed += 1
            return
        (ver, flags, job, src, dst, _step, _ent, flow, seq, npkts, length,
         _r) = HDR.unpack_from(buf, off)
        if ver != VERSION or job != self.s.job:
            if ver != VERSION:
                self.rx_malformed += 1
            else:
                self.rx_stale += 1
            return
        if self.unheard and ip in self.unheard:
            self.unheard.discard(ip)
        if flags & F_DONE == F_DONE:
            if seq == self.run_nonce:
                self.finished_peers.add(ip)
            return
        if flags & F_READY:
            # answer a beacon (READY) so a peer that started after our beacons hears us;
            # never answer an answer (READY|ACK): two agents would bounce READYs to each
            # other for the whole run, flooding the fabric
            if not flags & F_ACK:
                self._send_ready(ip, answer=True, sport=sport)
            return
        if flags & F_ACK:
            tf = self.tx.get(flow)
            if tf is not None and n >= HDR.size + ACK.size:
                cum, base, sack, ce_bits = ACK.unpack_from(buf, off + HDR.size)
                self._ack_arrived(tf, Ack.parse(flags, cum, base, sack, ce_bits), now)
            elif tf is None:
                self.rx_stale += 1
            else:
                self.rx_malformed += 1
            return
        if dst not in self.state or src >= self.s.ranks:
            self.rx_stale += 1
            return
        key = (src, flow)
        self._last_data = now
        self.rx_sport[key] = sport
        rx = self.rx.get(key)
        if rx is None:
            if flow not in self.flows or self.flows[flow][1].dst != dst:
                self.rx_stale += 1
                return
            rx = self.rx[key] = ReceiverFlow(npkts, self.cfg.transport)
        if n < HDR.size + length:   # a switch cut it to its headers (trimming): NACK it
            acks = rx.on_trimmed(seq, now)
        else:
            _new, acks = rx.on_data(seq, length, bool(flags & F_RETX), now, ce,
                                    bool(flags & F_ACKREQ))
        for a in acks:
            self._send_ack(ip, dst, src, flow, a, sport)

    def _ack_arrived(self, tf: _TxFlow, a: Ack, now: float) -> None:
        """An ACK of flow ``tf`` at ``now``: the sender's state (window, rate, RTT, RTO) and
        the path policy's feedback."""
        tf.tx.on_ack(a, now)
        if tf.tx.newly_acked is not None:
            feed_ack(tf.policy, tf.tx.newly_acked, a, now)

    def _send_ready(self, ip: str, answer: bool = False, sport: int | None = None) -> None:
        """A READY beacon (or, ``answer``, its answer from the beacon's own source port).
        Beacons rotate over BEACON_ENTROPIES source ports like data over its entropies: from
        one fixed port a beacon whose ECMP path died would never arrive, and a late-starting
        agent would wait at the barrier until its timeout."""
        flags = F_READY | (F_ACK if answer else 0)
        try:
            if ip in self.routes:
                if sport is None:
                    sport = self._beacon_ports[self._beacons % BEACON_ENTROPIES]
                    self._beacons += 1
                self._sender(self.routes[ip].dev).send(
                    self.frames.control(ip, sport, flags, self.s.job))
                return
            msg = HDR.pack(VERSION, flags, self.s.job, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            self.udp.sendto(msg, (ip, self.cfg.port))
        except OSError:
            pass

    @property
    def run_nonce(self) -> int:
        """What every agent of this run shares and the previous run's did not: its start time
        (ms, 32 bits)."""
        return int(round((self.cfg.start_at or 0.0) * 1000)) & 0xFFFFFFFF

    def _tell_finished(self) -> None:
        """Tell every peer we sent data to that we finished (F_DONE)."""
        for ip in sorted(self.receivers):
            sport = self._beacon_ports[self._beacons % BEACON_ENTROPIES]
            self._beacons += 1
            try:
                self._sender(self.routes[ip].dev).send(
                    self.frames.control(ip, sport, F_DONE, self.s.job, cum=self.run_nonce))
            except OSError:
                pass   # lost: the peer lingers instead
        self._flush()

    def _send_ack(self, ip: str, me: int, peer: int, flow: int, a: Ack, sport: int) -> None:
        """One ACK to ``ip`` from source port ``sport`` (the entropy of the data it answers),
        as a raw frame; through the kernel socket (port 4791) only to a host we have no
        route for."""
        try:
            rt = self.routes.get(ip)
            if rt is not None:
                self._sender(rt.dev).send(self.frames.ack(ip, sport, self.s.job, me, peer,
                                                          flow, a.cum, a.base, a.sack, a.nack,
                                                          a.ce, a.dup, a.trimmed))
                return
            msg = HDR.pack(VERSION, a.flags, self.s.job, me, peer, 0, 0, flow, a.cum, 0, 0, 0) \
                + ACK.pack(a.cum, a.base, a.sack, a.ce)
            self.udp.sendto(msg, (ip, self.cfg.port))
        except OSError:
            pass  # a lost ACK is recovered by the sender's timer

    # -- send path ---------------------------------------------------------------------------
    def _send_one(self, now: float) -> int:
        """Send one packet of the next flow in round-robin order; bytes on the wire or 0.
        A flow its pacer holds is skipped, and the earliest such hold is remembered for the
        loop's wait (``_held_until``)."""
        self._held_until = None
        for _ in range(len(self.active)):
            fid = self.active[0]
            self.active.rotate(-1)
            tf = self.tx[fid]
            tx = tf.tx
            if tx.done:
                self.active.remove(fid)
                continue
            t = tx.conn.paced_until   # the connection's pacer (SenderFlow.paced_until)
            if now < t - PACE_SLACK:   # SenderFlow.held inline: no call per paced wake-up
                if self._held_until is None or t < self._held_until:
                    self._held_until = t
                continue
            pkt = tx.next_packet(now)
            if pkt is None:
                continue
            seq, retx = pkt
            length = tx.length(seq)
            pol = tf.policy
            qp = pol.choose(seq, now)
            flags = tx.flags(seq, retx)
            frame = self.frames.frame(tf.dst_ip, tf.header, pol.ports[qp], qp, seq, length,
                                      flags)
            # dropped locally for lack of buffers: the transport's timer resends it
            self._sender(self.routes[tf.dst_ip].dev).send(frame)
            return len(frame)
        return 0

    def _tick(self, now: float) -> None:
        for fid in self.active:
            self.tx[fid].tx.on_tick(now)
        for (src, flow), rx in self.rx.items():
            if rx.ack_pending:
                for a in rx.on_tick(now):
                    self._send_ack(self.hosts[src], self.flows[flow][1].dst, src, flow, a,
                                   self.rx_sport[(src, flow)])

    # -- programs ----------------------------------------------------------------------------
    def _recv_done(self, src: int, flow: int) -> bool:
        if flow in self.local_done:
            return True
        rx = self.rx.get((src, flow))
        return rx is not None and rx.done

    def _send_done(self, flow: int) -> bool:
        return flow in self.local_done or self.tx[flow].tx.done

    def _rank_sends_done(self, r: int) -> bool:
        return all(tf.tx.done for tf in self.tx.values() if tf.rank == r)

    def _advance(self, now: float) -> None:
        for r, st in self.state.items():
            prog = self.s.programs[r]
            while not st.done:
                if st.pos >= len(prog):
                    # a rank is finished once its last step is and every send was acknowledged
                    if not self._rank_sends_done(r):
                        break
                    st.done = True
                    self.metrics[r].finish = self.wall(now)
                    break
                step = prog[st.pos]
                if st.phase == "idle":
                    if now < st.ready_at:
                        break
                    st.phase = "compute"
                    st.step_compute_start = now
                    at = (self._start_of(r) + step.at_us * 1e-6) if step.at_us is not None \
                        else now
                    st.ready_at = max(now + step.compute_us * 1e-6, at)
                if st.phase == "compute":
                    if now < st.ready_at:
                        break
                    self._post(r, st.pos, now)
                    st.phase = "running"
                    st.step_start = now
                if st.phase == "running":
                    if not all(self._recv_done(x.src, x.flow) for x in step.recvs):
                        break
                    if step.wait_sends and not all(self._send_done(x.flow)
                                                   for x in step.sends):
                        break
                    if not all(self._send_done(fl) for fl in step.wait_acked):
                        break
                    self.metrics[r].steps.append(StepRecord(
                        rank=r, step=st.pos, label=step.label, collective=step.collective,
                        compute_start=self.wall(st.step_compute_start),
                        start=self.wall(st.step_start), finish=self.wall(now)))
                    st.pos += 1
                    st.phase = "idle"
                    st.ready_at = now

    def _start_of(self, r: int) -> float:
        return self._start_mono

    def _post(self, r: int, idx: int, now: float) -> None:
        """Rank ``r`` posts its step ``idx``: its sends start (a send to a rank on this host
        is done at once)."""
        step = self.s.programs[r][idx]
        m = self.metrics[r]
        if m.start is None:
            m.start = self.wall(now)
        for snd in step.sends:
            if snd.dst in self.state:  # both ranks on this host: no network involved
                self.local_done[snd.flow] = now
            else:
                self._post_send(r, idx, step, snd, now)

    def _post_send(self, r: int, idx: int, step: Step, snd: Send, now: float) -> None:
        """Hook: start send ``snd`` of step ``idx`` of rank ``r`` over the network."""
        tx = self.connections.open(snd.bytes, self.cfg.transport, self.cfg.rate_bps, snd.dst,
                                   now)
        h = FlowHeader(self.s.job, r, snd.dst, idx, snd.flow, tx.npkts)
        self.tx[snd.flow] = _TxFlow(snd.flow, r, snd.dst, idx, step.collective, tx, h,
                                    self.hosts[snd.dst], now,
                                    self._policy(r, snd, tx))
        self.active.append(snd.flow)

    def _policy(self, r: int, snd: Send, tx: SenderFlow) -> PathPolicy:
        """The flow's path policy over its entropy set (pinned split: pathmodel.py)."""
        pol = self.cfg.path_policy
        if self._path_model is not None:
            from model.paths import pinned_flow_ports

            ports = pinned_flow_ports(self._path_model, self.s.job, r, snd.flow, self.hosts[r],
                                      self.hosts[snd.dst], pol.entropies(self.cfg.qps))
        else:
            ports = pol.ports(self.s.job, r, snd.flow, self.cfg.qps)
        p = pol.make(ports, tx.npkts, self.s.job, r, snd.flow)
        if p.feedback:
            tx.newly_acked = []
        return p

    # -- results -----------------------------------------------------------------------------
    def results(self) -> dict[int, RankMetrics]:
        """Every rank's metrics: the network flows' records (``_flow_records``), the local
        flows', whether the rank finished, its collectives' times."""
        self._flow_records()
        for flow, t in self.local_done.items():
            src, snd = self.flows[flow]
            self.metrics[src].flows.append(FlowRecord(
                flow=flow, src=src, dst=snd.dst, step=-1, collective=-1, bytes=snd.bytes,
                packets=0, packets_sent=0, posted=self.wall(t), start=self.wall(t),
                finish=self.wall(t), local=True))
        for r, m in self.metrics.items():
            m.send_lag_us = list(self.send_lag_us.counts)
            if self._stamps:
                m.read_lag_us = list(self.read_lag_us.counts)
            if r == self.local[0]:   # the agent's, once per host: on its first rank
                m.agent_drops = self.drops
            m.completed = self.state[r].done and m.error is None
            m.collectives = m.collective_times(self.s)
        return self.metrics

    def _flow_records(self) -> None:
        """Hook: append the records of the flows sent and received over the network."""
        for tf in self.tx.values():
            t = tf.tx
            self.metrics[tf.rank].flows.append(FlowRecord(
                flow=tf.flow, src=tf.rank, dst=tf.dst, step=tf.step, collective=tf.collective,
                bytes=t.nbytes, packets=t.npkts, packets_sent=t.packets_sent,
                posted=self.wall(tf.posted),
                start=self.wall(t.start) if t.start is not None else None,
                finish=self.wall(t.finish) if t.finish is not None else None,
                retransmissions=t.retransmissions, timeouts=t.timeouts, nacks=t.nacks,
                trim_nacks=t.trim_nacks,
                acked_packets=t.n_acked, sports=list(tf.policy.ports),
                sport_packets=list(tf.policy.uses), **cc_fields(t)))
        for (src, flow), rx in self.rx.items():
            dst = self.flows[flow][1].dst
            st = rx.stats
            self.metrics[dst].received.append(RecvRecord(
                flow=flow, src=src, dst=dst, bytes=rx.bytes, packets=rx.npkts,
                packets_received=rx.received, arrivals=st.packets, duplicates=st.duplicates,
                reordered=st.reordered,
                reorder_distance={int(k): v for k, v in sorted(st.reorder_distance.items())},
                start=self.wall(rx.start) if rx.start is not None else None,
                finish=self.wall(rx.finish) if rx.finish is not None else None))
