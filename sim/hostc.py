"""The hosts' per-packet path in C beside the core: ``engage`` and ``CHost``.

With the hop in C (sim.core), a host's NIC event and a frame reaching a host were most of a
run's Python: a data frame in (the SACK bitmap, an ACK every ``ack_every`` packets, a NACK on
a gap), an ACK in (window, RTT sample, timers), the next data frame built and sent. ``engage``
moves all of that into C (sim/hostc_c.py, compiled into the core's module) for every host of
a network whose transport it can run — the window algorithms NSCC, DCTCP and the fixed window,
a path policy without feedback (``single``, ``split``, ``entropy-spray``), no delay held at the
hosts — and each host becomes a ``CHost``: the same SimHost, whose rank programs, flow
postings, completions, timer ticks and results stay in Python, while its flows' state lives
in C only. Anything else (DCQCN's pacer, REPS, ECN-adaptive, ``prop_at_hosts``) keeps the
Python hosts on the C core, as ``SimConfig(host_path="python")`` (``--host-path python``)
does on request.

Results equal the Python hosts' byte for byte (tests/sim/test_hostc.py runs both in lock-step:
the golden digests, every flow's record, the hosts' counters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from model.spec import mac_int
from traffic.congestion import CcContext, make_cc
from traffic.metrics import FlowRecord, RankMetrics, RecvRecord
from traffic.policies import RandomSpray
from traffic.transport import INITIAL_RTO_RTTS, WIRE_OVERHEAD, packets_for
from traffic.wire import HDR

from . import frames
from .host import HostConfig, Job, SimHost, _Rank

if TYPE_CHECKING:
    from traffic.schedules.format import Send, Step

    from .core import CoreLoop
    from .network import SimNetwork

CC_KINDS = {"none": 0, "nscc": 1, "dctcp": 2}
"""The algorithms the C hosts run (sim/hostc_c.py's CC_*)."""
NOTE_RX_DONE, NOTE_TX_DONE = 1, 2
_HDR_unpack_from = HDR.unpack_from
_ADDED = 256


def eligible(cfg: HostConfig, hosts: list[SimHost]) -> str | None:
    """Why these hosts' per-packet path cannot run in C (None: it can)."""
    if cfg.transport.cc not in CC_KINDS:
        return f"congestion control {cfg.transport.cc!r}"
    if cfg.path_policy.name in ("reps", "ecn-adaptive"):
        return f"path policy {cfg.path_policy.name!r} (per-packet feedback)"
    if len(hosts) >= 1 << 20:
        return "more than 2^20 hosts"
    for h in hosts:
        if h.hold_us:
            return "frames held at the hosts (prop_at_hosts)"
        if h.tx or h.rx:
            return f"host {h.name} has flows already"
        if h.link is None or h.link.outbox is not None:
            return f"host {h.name}: no link, or one to another part"
    return None


def cc_template(cc: Any) -> list[float]:
    """A new connection's algorithm state, as sim/hostc_c.py's ``hc_host`` reads it."""
    p = cc.p
    base, target, delay = (getattr(cc, a, None) for a in ("base_rtt", "_target", "delay"))
    return [getattr(cc, "cwnd", 0.0), getattr(cc, "cap", 0.0), getattr(cc, "floor", 0.0),
            getattr(cc, "_hold_left", 0.0), float(base is not None), base or 0.0,
            float(getattr(cc, "_measure_base", False)), getattr(cc, "_qtarget", 0.0),
            float(target is not None), target or 0.0, float(delay is not None), delay or 0.0,
            getattr(p, "ai", 0.0), getattr(p, "pi", 0.0), getattr(p, "beta", 0.0),
            getattr(p, "max_mdf", 0.0), getattr(cc, "ssthresh", 0.0),
            getattr(cc, "alpha", 0.0), getattr(p, "g", 0.0), getattr(cc, "_win_end", 0.0),
            getattr(cc, "_w", 0.0)]


def engage(loop: CoreLoop, net: SimNetwork) -> list[CHost]:
    """Run the hosts' per-packet path of ``net`` in ``loop``'s C core, if it can (the hosts,
    now CHosts); else leave them as they are (an empty list)."""
    hosts = list(net.hosts.values())
    cfg = net.cfg.host
    if net.cfg.host_path != "c" or not hosts or eligible(cfg, hosts) is not None:
        return []
    lib, K = loop._lib, loop._K
    t = cfg.transport
    lib.hc_setup(K, len(hosts), t.mss, t.window, t.ack_every, t.nack_gap, t.rto, t.ack_delay,
                 t.tick, t.tick * 1e6)
    link_index = {id(d): i for i, d in enumerate(loop.links)}
    index = {h.name: i for i, h in enumerate(hosts)}
    for i, h in enumerate(hosts):
        h.__class__ = CHost
        assert isinstance(h, CHost) and h.link is not None
        cc = make_cc(t.cc, CcContext(h.line_rate_bps, t.mss + WIRE_OVERHEAD, t.window,
                                     t.base_rtt), dict(t.cc_params))
        lib.hc_host(K, i, link_index[id(h.link)], h.link.us_per_byte,
                    mac_int(h.mac).to_bytes(6, "big"), mac_int(h.gw_mac).to_bytes(6, "big"),
                    frames.ip_int(h.ip), loop.handle(h._tick), CC_KINDS[t.cc], cc_template(cc))
        h._hc_bind(loop, i)
    for j, d in enumerate(loop.links):
        hi = index.get(d.dst)
        if hi is not None and getattr(d._peer, "__func__", None) is SimHost.receive:
            lib.hc_link_host(K, j, hi)
    return hosts  # type: ignore[return-value]  # every one a CHost now


class _CTx:
    """A flow this host sends (its state in C, at index ``fi``)."""

    __slots__ = ("flow", "rank", "dst", "step", "collective", "posted", "fi", "ports")

    def __init__(self, flow: int, rank: int, dst: int, step: int, collective: int,
                 posted: float, fi: int, ports: list[int]) -> None:
        self.flow, self.rank, self.dst, self.step = flow, rank, dst, step
        self.collective, self.posted, self.fi, self.ports = collective, posted, fi, ports


class CHost(SimHost):
    """A SimHost whose flows live in C (module docstring); made by ``engage``."""

    _loop: CoreLoop
    _i: int

    def _hc_bind(self, loop: CoreLoop, i: int) -> None:
        self._loop, self._lib, self._K, self._i = loop, loop._lib, loop._K, i
        self._ctx: dict[int, _CTx] = {}
        self._crx: dict[int, tuple[int, int, int]] = {}
        """Flows this host receives: (index in C, source rank, destination rank)."""
        self._peer: dict[int, tuple[int, int]] = {}
        """Per peer rank: its last flow's index and the connection whose RTT estimate the
        next one starts from (traffic.transport.Connections)."""
        self._buf = loop._ffi.new("int64_t[]", _ADDED)
        self._o = loop._ffi.new("int64_t[16]")
        self._d = loop._ffi.new("double[8]")
        counts = (self.__dict__.pop("frames_sent", 0), self.__dict__.pop("bytes_sent", 0),
                  self.__dict__.pop("frames_received", 0), self.__dict__.pop("bad_frames", 0))
        self._lib.hc_set_counts(self._K, i, counts)
        if self.job is not None:
            self._lib.hc_job(self._K, i, self.job.s.job, int(self.job.ect))

    # -- counters (in C) --------------------------------------------------------------------
    def _count(self, k: int) -> int:
        self._lib.hc_counts(self._K, self._i, self._o)
        return int(self._o[k])

    def _set_count(self, k: int, v: int) -> None:
        self._lib.hc_counts(self._K, self._i, self._o)
        self._o[k] = v
        self._lib.hc_set_counts(self._K, self._i, self._o)

    frames_sent = property(lambda self: self._count(0), lambda self, v: self._set_count(0, v))
    bytes_sent = property(lambda self: self._count(1), lambda self, v: self._set_count(1, v))
    frames_received = property(lambda self: self._count(2),
                               lambda self, v: self._set_count(2, v))
    bad_frames = property(lambda self: self._count(3), lambda self, v: self._set_count(3, v))

    # -- what Python keeps -----------------------------------------------------------------
    def add_rank(self, rank: int, job: Job) -> None:
        super().add_rank(rank, job)
        self._lib.hc_job(self._K, self._i, job.s.job, int(job.ect))

    def _kick(self, now: float) -> None:
        if self._lib.hc_kick(self._K, self._i, now) < 0:
            self._loop._raise()

    def _ensure_tick(self, now: float) -> None:
        self._lib.hc_ensure_tick(self._K, self._i, now)

    def _tick(self, now: float, _: Any) -> None:
        """SimHost._tick: the timers in C; the delayed ACKs in the order of the Python set
        of receives with an ACK owed (C logs which joined it)."""
        lib, K, i = self._lib, self._K, self._i
        lib.hc_tick_timers(K, i, now)
        pend, buf = self._rx_pending, self._buf
        while True:
            k = lib.hc_take_added(K, i, buf, _ADDED)
            for j in range(k):
                pend.add(buf[j])
            if k < _ADDED:
                break
        crx = self._crx
        for flow in list(pend):
            if not lib.hc_rx_tick(K, i, crx[flow][0], now):
                pend.discard(flow)
        if lib.hc_tick_end(K, i, now, 1 if pend else 0) < 0:
            self._loop._raise()

    def note(self, kind: int, flow: int, rank: int, now: float) -> None:
        """A flow completed in C: a receive (``NOTE_RX_DONE``) or a send fully acknowledged
        (``NOTE_TX_DONE``, after which SimHost._on_ack kicks the NIC)."""
        if kind == NOTE_RX_DONE:
            dst_rank = self._rank.get(rank)
            if dst_rank is not None:
                self._flow_done(dst_rank, flow, now)
            return
        st = self._rank[rank]
        self._finished_tx.add(flow)
        st.open_sends -= 1
        self._flow_done(st, flow, now)
        self._kick(now)

    def arrive(self, now: float, frame: bytes, n: int, held: bool = False) -> None:
        """A data frame of a flow C does not know yet (C handles everything else): its
        receiver is made here, as SimHost.arrive makes it, then C takes the frame."""
        lib, K, i = self._lib, self._K, self._i
        r = lib.hc_arrive(K, i, now, frame, len(frame), n)
        if r == 2:
            job = self.job
            assert job is not None
            (_v, _flags, _jid, src, dst, _step, _qp, flow, _seq, npkts, _length,
             _resv) = _HDR_unpack_from(frame, frames.HDR_AT)
            info = job.flows.get(flow)
            if info is None or info[0] != src or info[1].dst != dst:
                lib.hc_bad(K, i)
                return
            peer = job.rank_hosts[src]
            self._crx[flow] = (lib.hc_rx_new(K, i, flow, src, dst, npkts,
                                             frames.ip_int(peer.ip)), src, dst)
            r = lib.hc_arrive(K, i, now, frame, len(frame), n)
        if r == 1:
            self.note(K.note_kind, K.note_flow, K.note_rank, now)
        elif r < 0:
            self._loop._raise()

    def _recv_done(self, flow: int) -> bool:
        if flow in self.local_done:
            return True
        x = self._crx.get(flow)
        return x is not None and bool(self._lib.hc_rx_done(self._K, x[0]))

    def _open_send(self, st: _Rank, step: Step, snd: Send, dst_host: SimHost,
                   now: float) -> None:
        """SimHost._open_send with the flow opened in C (traffic.transport.Connections.open's
        decisions: join the peer's open connection, take over a just-finished one's
        algorithm, start the RTT estimate from the last one to the peer)."""
        job = self.job
        assert job is not None
        lib, K = self._lib, self._K
        t = job.cfg.transport
        first = max(t.rto, INITIAL_RTO_RTTS * t.base_rtt)
        lo = min(t.min_rto, t.max_rto)
        joined = self._loop._ffi.new("int32_t *")
        p = self._policy_for(st.rank, snd.flow, dst_host, packets_for(snd.bytes, t.mss))
        draws = p.draws if isinstance(p, RandomSpray) else [0]
        prev, cache = self._peer.get(snd.dst, (-1, -1))
        fi = lib.hc_open(K, self._i, snd.flow, st.rank, snd.dst, st.pos, snd.bytes,
                         frames.ip_int(dst_host.ip), prev, cache, now * 1e-6, first, lo,
                         t.max_rto, p.n, p.ports, draws,
                         len(draws) if isinstance(p, RandomSpray) else 0, joined)
        self._peer[snd.dst] = (fi, cache if joined[0] else lib.hc_conn_of(K, fi))
        self._ctx[snd.flow] = _CTx(snd.flow, st.rank, snd.dst, st.pos, step.collective,
                                   now, fi, list(p.ports))
        lib.hc_make_ready(K, self._i, fi)

    # -- results ---------------------------------------------------------------------------
    def _flow_records(self, by_rank: dict[int, RankMetrics]) -> None:
        """SimHost._flow_records, the flows' figures read from C."""
        job = self.job
        assert job is not None
        lib, K, o, d = self._lib, self._K, self._o, self._d
        ffi = self._loop._ffi
        cc = job.cfg.transport.cc
        for f in self._ctx.values():
            lib.hc_tx_stats(K, f.fi, o, d)
            uses = ffi.new("int64_t[]", len(f.ports))
            lib.hc_tx_uses(K, f.fi, uses)
            by_rank[f.rank].flows.append(FlowRecord(
                flow=f.flow, src=f.rank, dst=f.dst, step=f.step, collective=f.collective,
                bytes=o[1], packets=o[0], packets_sent=o[2], posted=f.posted * 1e-6,
                start=d[0] if o[11] else None, finish=d[1] if o[12] else None,
                retransmissions=o[3], timeouts=o[4], nacks=o[5], trim_nacks=o[6],
                acked_packets=o[7], sports=list(f.ports), sport_packets=list(uses),
                ce_acked=o[8], cc=cc, mean_window=d[2] / o[10] if o[10] else None,
                mean_rate=None, srtt=d[3] if o[13] else None, rto=d[4], spurious=o[9]))

    def _recv_records(self, by_rank: dict[int, RankMetrics]) -> None:
        """SimHost._recv_records, the receives' figures read from C."""
        lib, K, o, d = self._lib, self._K, self._o, self._d
        ffi = self._loop._ffi
        for flow, (ri, src, dst) in self._crx.items():
            lib.hc_rx_stats(K, ri, o, d)
            dist: dict[int, int] = {}
            if o[8]:
                arr = ffi.new("int64_t[]", int(o[0]))
                lib.hc_rx_rdist(K, ri, arr)
                dist = {k: int(v) for k, v in enumerate(arr) if v}
            by_rank[dst].received.append(RecvRecord(
                flow=flow, src=src, dst=dst, bytes=o[1], packets=o[0],
                packets_received=o[2], arrivals=o[3], duplicates=o[4], reordered=o[5],
                reorder_distance=dist, start=d[0] if o[6] else None,
                finish=d[1] if o[7] else None))
