"""The TCP mode of the host agent: the same schedule over kernel TCP connections.

Packet spraying reorders packets; the UDP mode's transport tolerates that, TCP does not: it
reads reordering as loss (duplicate ACKs / SACK holes), retransmits spuriously and shrinks its
window. This mode runs the same steps, sends, receives and compute phases as `HostAgent`, but
each flow goes over `qps` TCP connections (its bytes split evenly across them, each connection
with its own kernel-chosen source port, so ECMP can hash them apart), and reports what TCP
itself saw per connection (TCP_INFO, read just before close; see `tcpinfo.py`).

Life of a connection (one per flow and QP): set up before the start barrier (the sender
connects to the receiver's listener, TCP port `tcp_port`, retrying while the peer is not yet
listening, and sends HELLO); the step posts the flow -> the sender writes one length-prefixed
DATA message; the receiver answers with an ACK message once it has every byte; the sender
reads TCP_INFO and closes; the receiver sees EOF, reads TCP_INFO and closes. Sockets are
non-blocking under one selector; every wait is bounded by `timeout`.
"""

from __future__ import annotations

import errno
import resource
import selectors
import socket
import struct
import sys
import time
from dataclasses import dataclass, field

from . import framing
from .agent import AgentConfig, HostAgent
from .framing import Decoder, Header
from .metrics import FlowRecord, RecvRecord
from .schedules import Schedule, Send, Step, split
from .tcpinfo import TcpInfo, aggregate
from .tcpinfo import read as read_tcp_info

TCP_PORT = 4792                 # listener port of the TCP mode (UDP mode uses 4791)
SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)  # Linux value
_CHUNK = 256 << 10
_ZEROS = memoryview(bytes(_CHUNK))
_RETRY = 0.02                   # reconnect interval while a peer's listener is not up


@dataclass(eq=False)
class _Conn:
    sock: socket.socket
    out: bool                      # we send the DATA (True) or receive it
    flow: int = -1
    qp: int = -1
    nbytes: int = 0                # this QP's share of the flow
    peer: tuple[str, int] = ("", 0)
    connected: bool = False
    hello: bool = False            # HELLO fully written (out) / received (in)
    ready_sent: bool = False       # start barrier: we told the peer all our connections are up
    peer_ready: bool = False       # ... and the peer told us
    wbuf: bytes = b""              # header bytes still to write
    to_write: int = 0              # payload bytes still to write
    got: int = 0                   # payload bytes received (in)
    done: bool = False             # out: ACK received; in: whole DATA message received
    closed: bool = False
    retry_at: float = 0.0
    decoder: Decoder = field(default_factory=Decoder)
    info: TcpInfo | None = None
    sport: int = 0
    dport: int = 0
    finish: float | None = None

    def describe(self, wall) -> dict:
        d = {"qp": self.qp, "bytes": self.nbytes, "sport": self.sport, "dport": self.dport,
             "finish": None if self.finish is None else wall(self.finish)}
        d.update({k: v for k, v in (self.info.to_dict() if self.info else {}).items()
                  if v is not None})
        return d


@dataclass(eq=False)
class _Flow:
    flow: int
    src: int
    dst: int
    nbytes: int
    conns: list[_Conn]
    step: int = -1
    collective: int = 0
    posted: float | None = None
    start: float | None = None
    finish: float | None = None
    got: int = 0

    @property
    def done(self) -> bool:
        return self.finish is not None


def _pacing_value(bytes_per_s: float) -> bytes:
    v = int(bytes_per_s)
    return struct.pack("=I", min(v, 0xFFFFFFFF)) if v < 0xFFFFFFFF else struct.pack("=Q", v)


class TcpHostAgent(HostAgent):
    """Executes `local_ranks` of `schedule` over TCP; `hosts[r]` is rank r's IPv4 address.

    `cfg.tcp_ports` (one per rank) overrides the listener port per rank, so that several
    agents can share one address (tests on 127.0.0.1)."""

    def __init__(self, schedule: Schedule, local_ranks: list[int], hosts: list[str],
                 cfg: AgentConfig) -> None:
        super().__init__(schedule, local_ranks, hosts, cfg)
        for m in self.metrics.values():
            m.transport = "tcp"
        self.txf: dict[int, _Flow] = {}
        self.rxf: dict[int, _Flow] = {}
        self.sel = selectors.DefaultSelector()
        self.listeners: list[socket.socket] = []
        self.pending: list[_Conn] = []     # out connections waiting to (re)connect
        self.conns: list[_Conn] = []
        self.warnings: list[str] = []
        self.unknown_conns = 0

    def port_of(self, rank: int) -> int:
        ports = self.cfg.tcp_ports
        return ports[rank] if ports else self.cfg.tcp_port

    # -- set-up ------------------------------------------------------------------------------
    def _raise_fd_limit(self, need: int) -> None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if need + 64 > soft and soft != hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        if need + 64 > soft:
            raise OSError(errno.EMFILE, f"the TCP mode needs {need} connections "
                          f"(one per flow and QP) but RLIMIT_NOFILE is {soft}")

    def open(self) -> None:
        job = self.s.job
        for r in self.local:
            for idx, st in enumerate(self.s.programs[r]):
                for snd in st.sends:
                    if snd.dst in self.state:
                        continue
                    shares = split(snd.bytes, max(1, min(self.cfg.qps, snd.bytes)))
                    conns = [_Conn(socket.socket(), True, snd.flow, q, b,
                                   (self.hosts[snd.dst], self.port_of(snd.dst)))
                             for q, b in enumerate(shares)]
                    for c in conns:
                        c.wbuf = Header(framing.HELLO, job, r, snd.dst, c.qp, len(shares),
                                        snd.flow).pack()
                    self.txf[snd.flow] = _Flow(snd.flow, r, snd.dst, snd.bytes, conns, idx,
                                               st.collective)
                    self.pending += conns
                    self.conns += conns
        for r in self.local:
            for st in self.s.programs[r]:
                for x in st.recvs:
                    if x.src not in self.state:
                        self.rxf[x.flow] = _Flow(x.flow, x.src, r, self.flows[x.flow][1].bytes,
                                                 [])
        n_in = sum(max(1, min(self.cfg.qps, f.nbytes)) for f in self.rxf.values())
        self._raise_fd_limit(len(self.conns) + n_in)
        # one listener per (address, port) of our ranks: the rank's own address, so that
        # agents on 127.0.0.1 and 127.0.0.2 (or several addresses of one host) can share a port
        for addr in sorted({(self.hosts[r], self.port_of(r)) for r in self.local}):
            ls = socket.socket()
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind(addr)
            ls.listen(4096)
            ls.setblocking(False)
            self.sel.register(ls, selectors.EVENT_READ, None)
            self.listeners.append(ls)
        self.n_in_expected = n_in
        self.n_in_known = 0
        rate = self.cfg.tcp_rate_bps
        for c in self.conns:
            s = c.sock
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if rate:
                try:  # per connection: a flow of qps connections then sends at most `rate`
                    s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE,
                                 _pacing_value(rate / 8 / self.cfg.qps))
                except OSError as e:
                    self._warn(f"SO_MAX_PACING_RATE not set ({e}); TCP is not paced")
                    rate = None

    def _warn(self, msg: str) -> None:
        if msg not in self.warnings:
            self.warnings.append(msg)
            print(f"traffic.run: warning: {msg}", file=sys.stderr)

    def close(self) -> None:
        for c in self.conns:
            self._close(c)
        for ls in self.listeners:
            self.sel.unregister(ls)
            ls.close()
        self.sel.close()

    def _close(self, c: _Conn) -> None:
        if c.closed:
            return
        c.closed = True
        if c.connected or not c.out:
            c.info = read_tcp_info(c.sock)
        try:
            self.sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        c.sock.close()

    def _try_connect(self, c: _Conn, now: float) -> None:
        if c.retry_at > now:
            return
        if c.sock.fileno() < 0:  # refused earlier: a fresh socket
            s = c.sock = socket.socket()
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.cfg.tcp_rate_bps:
                try:
                    s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE,
                                 _pacing_value(self.cfg.tcp_rate_bps / 8 / self.cfg.qps))
                except OSError:
                    pass
        err = c.sock.connect_ex(c.peer)
        if err in (0, errno.EINPROGRESS):
            self.sel.register(c.sock, selectors.EVENT_WRITE, c)
            c.retry_at = float("inf")  # until the connect completes or fails
        else:
            c.sock.close()
            c.retry_at = now + _RETRY

    # -- main loop ---------------------------------------------------------------------------
    def _loop(self) -> None:
        cfg = self.cfg
        now, start, deadline = self._begin()
        started = False
        finished_at: float | None = None
        buf = bytearray(_CHUNK)
        while True:
            now = time.monotonic()
            if self._timed_out(now, deadline):
                break
            if self.pending:
                for c in self.pending:
                    self._try_connect(c, now)
                self.pending = [c for c in self.pending if c.retry_at != float("inf")]
            if not started and self._ready():
                self._send_ready_conns()
            if not started and self._ready() and now >= start and all(
                    c.peer_ready for c in self.conns if c.flow >= 0 and c.hello):
                # start barrier: every connection this host sends or receives on is up, and
                # every peer at their other ends said the same of theirs (READY)
                started = True
                self._release(now)
            self._advance(now)
            if finished_at is None and all(st.done for st in self.state.values()):
                finished_at = now
            if finished_at is not None and (now - finished_at >= cfg.linger
                                            or all(c.closed for c in self.conns)):
                break
            wait = min(deadline, now + 0.005) - now
            if not started:
                wait = min(wait, max(0.0, start - now), _RETRY)
            for key, ev in self.sel.select(max(0.0, wait)):
                self._event(key, ev, buf, time.monotonic())

    def _send_ready_conns(self) -> None:
        for c in self.conns:
            if c.ready_sent or c.closed or c.flow < 0 or not c.hello:
                continue
            c.ready_sent = True
            h = self.txf[c.flow] if c.out else self.rxf[c.flow]
            msg = Header(framing.READY, self.s.job, h.src if c.out else h.dst,
                         h.dst if c.out else h.src, c.qp, len(h.conns), c.flow).pack()
            try:
                c.sock.send(msg)  # the connection is idle: its send buffer is empty
            except OSError as e:
                self._fail(c, f"send READY: {e.strerror or e}")

    def _ready(self) -> bool:
        return (not self.pending and all(c.hello for c in self.conns if c.out)
                and self.n_in_known == self.n_in_expected)

    def _event(self, key: selectors.SelectorKey, ev: int, buf: bytearray, now: float) -> None:
        c: _Conn | None = key.data
        if c is None:  # a listener
            ls: socket.socket = key.fileobj  # type: ignore[assignment]  # a listener's key holds its socket
            for _ in range(64):
                try:
                    s, addr = ls.accept()
                except (BlockingIOError, InterruptedError):
                    return
                s.setblocking(False)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                nc = _Conn(s, False, peer=addr, connected=True, sport=addr[1],
                           dport=s.getsockname()[1])
                self.conns.append(nc)
                self.sel.register(s, selectors.EVENT_READ, nc)
            return
        if c.closed:
            return
        if c.out and not c.connected:
            err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            self.sel.unregister(c.sock)
            if err:
                c.sock.close()
                c.retry_at = now + _RETRY
                self.pending.append(c)
                return
            c.connected = True
            c.sport, c.dport = c.sock.getsockname()[1], c.peer[1]
            self.sel.register(c.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
        if ev & selectors.EVENT_READ:
            self._readable(c, buf, now)
        if ev & selectors.EVENT_WRITE and not c.closed:
            self._writable(c, now)

    def _fail(self, c: _Conn, why: str) -> None:
        rank = self.txf[c.flow].src if c.out else (
            self.rxf[c.flow].dst if c.flow in self.rxf else None)
        if rank is not None:
            m = self.metrics[rank]
            m.error = m.error or f"flow {c.flow} qp {c.qp}: {why}"
        self._close(c)

    def _writable(self, c: _Conn, now: float) -> None:
        s = c.sock
        try:
            while c.wbuf:
                n = s.send(c.wbuf)
                c.wbuf = c.wbuf[n:]
            if not c.hello:
                c.hello = True
            f = self.txf[c.flow]
            while c.to_write:
                n = s.send(_ZEROS[:min(c.to_write, _CHUNK)])
                if f.start is None:
                    f.start = now
                c.to_write -= n
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._fail(c, f"send: {e.strerror or e}")
            return
        self.sel.modify(s, selectors.EVENT_READ, c)  # nothing more to write until posted

    def _readable(self, c: _Conn, buf: bytearray, now: float) -> None:
        try:
            n = c.sock.recv_into(buf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._fail(c, f"recv: {e.strerror or e}")
            return
        if n == 0:  # EOF: the sender closed after our ACK (or gave up)
            if not c.out and not c.done and c.flow >= 0:
                self._fail(c, "peer closed before the message was complete")
            else:
                self._close(c)
            return
        try:
            events = c.decoder.feed(memoryview(buf)[:n])
        except framing.FramingError as e:
            self._fail(c, f"framing: {e}")
            return
        for event in events:
            if event.header is not None:
                self._on_header(c, event.header, now)
                if c.closed:
                    return
            elif event.payload:
                c.got += event.payload
                f = self.rxf[c.flow]
                f.got += event.payload
                if f.start is None:
                    f.start = now
            if event.end is not None and event.end.kind == framing.DATA and not c.out:
                self._on_data_end(c, now)

    def _on_header(self, c: _Conn, h: Header, now: float) -> None:
        if h.kind == framing.READY:
            c.peer_ready = True
            return
        if c.out:
            if h.kind == framing.ACK and h.flow == c.flow:
                c.done = True
                c.finish = now
                f = self.txf[c.flow]
                if all(x.done for x in f.conns):
                    f.finish = now
                self._close(c)  # reads TCP_INFO first: every byte of ours was delivered
            return
        if h.kind == framing.HELLO:
            rx = self.rxf.get(h.flow)
            if (rx is None or h.job != self.s.job or h.src != rx.src or h.dst != rx.dst
                    or any(x.qp == h.qp for x in rx.conns)):
                self.unknown_conns += 1
                self._close(c)
                return
            nq = max(1, min(self.cfg.qps, rx.nbytes))
            if h.nqps != nq:
                self._fail(c, f"peer uses {h.nqps} QPs, we expect {nq} (same --qps?)")
                return
            c.flow, c.qp, c.hello = h.flow, h.qp, True
            c.nbytes = split(rx.nbytes, nq)[h.qp]
            rx.conns.append(c)
            self.n_in_known += 1
        elif h.kind == framing.DATA:
            if c.flow != h.flow or h.length != c.nbytes:
                self._fail(c, f"DATA of flow {h.flow} ({h.length} B) on the connection of "
                           f"flow {c.flow} ({c.nbytes} B)")
            elif h.length == 0:
                pass  # the end event follows
        # an ACK towards a receiver is ignored

    def _on_data_end(self, c: _Conn, now: float) -> None:
        c.done = True
        c.finish = now
        f = self.rxf[c.flow]
        if f.start is None:
            f.start = now
        if all(x.done for x in f.conns) and len(f.conns) == max(1, min(self.cfg.qps,
                                                                         f.nbytes)):
            f.finish = now
        ack = Header(framing.ACK, self.s.job, f.dst, f.src, c.qp, len(f.conns), c.flow,
                     c.got).pack()
        try:
            c.sock.send(ack)  # 28 bytes into an empty send buffer: never partial
        except OSError as e:
            self._fail(c, f"send ACK: {e.strerror or e}")

    # -- programs: hooks of HostAgent ---------------------------------------------------------
    def _post_send(self, r: int, idx: int, step: Step, snd: Send, now: float) -> None:
        f = self.txf[snd.flow]
        f.posted = now
        for c in f.conns:
            c.wbuf += Header(framing.DATA, self.s.job, r, snd.dst, c.qp, len(f.conns),
                             snd.flow, c.nbytes).pack()
            c.to_write = c.nbytes
            if not c.closed:
                self.sel.modify(c.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, c)

    def _recv_done(self, src: int, flow: int) -> bool:
        if flow in self.local_done:
            return True
        f = self.rxf.get(flow)
        return f is not None and f.done

    def _send_done(self, flow: int) -> bool:
        return flow in self.local_done or self.txf[flow].done

    def _rank_sends_done(self, r: int) -> bool:
        return all(f.done for f in self.txf.values() if f.src == r)

    # -- results -----------------------------------------------------------------------------
    def _w(self, t: float | None) -> float | None:
        return None if t is None else self.wall(t)

    def _flow_records(self) -> None:
        for f in self.txf.values():
            agg = aggregate([c.info for c in f.conns])
            self.metrics[f.src].flows.append(FlowRecord(
                flow=f.flow, src=f.src, dst=f.dst, step=f.step, collective=f.collective,
                bytes=f.nbytes, packets=agg["data_segs_out"] or 0,
                packets_sent=agg["data_segs_out"] or 0,
                posted=self.wall(f.posted) if f.posted is not None else self.wall(self._t0),
                start=self._w(f.start), finish=self._w(f.finish),
                retransmissions=agg["total_retrans"] or 0, timeouts=agg["total_rto"] or 0,
                acked_packets=sum(1 for c in f.conns if c.done), tcp=agg,
                connections=[c.describe(self.wall) for c in f.conns]))
        for f in self.rxf.values():
            agg = aggregate([c.info for c in f.conns])
            self.metrics[f.dst].received.append(RecvRecord(
                flow=f.flow, src=f.src, dst=f.dst, bytes=f.got, packets=agg["data_segs_in"] or 0,
                packets_received=agg["data_segs_in"] or 0, arrivals=agg["data_segs_in"] or 0,
                duplicates=0, reordered=0, reorder_distance={},
                start=self._w(f.start), finish=self._w(f.finish), tcp=agg,
                connections=[c.describe(self.wall)
                             for c in sorted(f.conns, key=lambda c: c.qp)]))
