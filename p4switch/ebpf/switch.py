"""``EbpfSwitch``: a p4switch whose packets never leave the kernel.

Each port is a Linux interface with the compiled program on its tc clsact ingress; a frame is
parsed, matched, rewritten and redirected to the egress interface inside the kernel. The
process keeps the control plane: the P4Runtime server drives this switch exactly as the Python
one (``Switch.pipeline`` is an ``EbpfPipeline``, the same ``PipelineAPI``).

The CPU port is a veth pair this switch creates: the program redirects CPU-port output to one
end (``p4ft-c<pid>k``, a port like any other), the process reads it from the other end
(``p4ft-c<pid>u``) and hands it to the packet-in listeners; a packet-out is written into the
user end and so enters the program on the CPU port, as on the Python target.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from p4switch import ir
from p4switch.hidden import SwitchDropSites
from p4switch.switch import Switch

from . import qdisc
from .dataplane import EbpfPipeline
from .layout import PIPELINE_REASONS

log = logging.getLogger("p4switch")
ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def _operstate(ifname: str) -> str:
    try:
        return Path(f"/sys/class/net/{ifname}/operstate").read_text().strip()
    except OSError:
        return "notpresent"


def cpu_veth_names(pid: int) -> tuple[str, str]:
    """The CPU-port veth pair of the eBPF switch process ``pid`` (kernel end, user end)."""
    return f"p4ft-c{pid}k", f"p4ft-c{pid}u"


def _remove_stale_cpu_veths() -> None:
    """Delete CPU veths whose switch process is gone (killed before it could clean up): the
    name carries the pid, and a pid without a /proc entry runs nothing."""
    for path in Path("/sys/class/net").glob("p4ft-c*k"):
        m = re.fullmatch(r"p4ft-c(\d+)k", path.name)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            subprocess.run(["ip", "link", "del", path.name], capture_output=True, check=False)


class EbpfSwitch(Switch):
    """``Switch`` with the eBPF data plane on ``interfaces`` ({port: ifname})."""

    def __init__(self, interfaces: dict[int, str], **kw: Any) -> None:
        super().__init__(pipeline_factory=self._build, **kw)
        self.interfaces = dict(interfaces)
        for n, ifname in self.interfaces.items():
            socket.if_nametoindex(ifname)  # OSError now, not at load time
            if n in (self.cpu_port, self.drop_port):
                raise ValueError(f"port {n} is the {'CPU' if n == self.cpu_port else 'drop'} port")
        self._current: EbpfPipeline | None = None
        self._cpu_sock: socket.socket | None = None
        self._cpu_pair: tuple[str, str] | None = None
        self._readers: list[threading.Thread] = []
        self._reading = False
        self._qdiscs: set[str] = set()
        self._applied: dict[int, tuple[float | None, int, int]] = {}  # (bps, depth, prios)
        self._qdisc_drops_before = 0
        """Drops of the qdiscs this switch replaced or removed (theirs are gone with them)."""
        if self.cpu_port is not None:
            _remove_stale_cpu_veths()
            kern, user = cpu_veth_names(os.getpid())
            _ip("link", "add", kern, "type", "veth", "peer", "name", user)
            self._cpu_pair = (kern, user)
            for dev in (kern, user):  # no IPv6 chatter (router solicitations) into the program
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1"],
                               capture_output=True, check=False)
                _ip("link", "set", dev, "up")
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            s.bind((user, ETH_P_ALL))
            s.settimeout(0.2)
            self._cpu_sock = s

    # the pipeline --------------------------------------------------------------------------
    def _build(self, program: ir.Program, *, drop_port: int, cpu_port: int | None
               ) -> EbpfPipeline:
        """Compile, load and attach; the previous program's filters are replaced in place
        (BPF_TC_F_REPLACE), then its object is closed."""
        pl = EbpfPipeline(program, drop_port=drop_port, cpu_port=cpu_port)
        ports = dict(self.interfaces)
        if self._cpu_pair is not None and cpu_port is not None:
            ports[cpu_port] = self._cpu_pair[0]
        try:
            pl.attach(ports)
        except BaseException:
            pl.close()
            raise
        old, self._current = self._current, pl
        if old is not None:
            old.close(detach=False)
        for port in self.interfaces:  # the new program's queue models get the port settings
            self._apply_queue(port)
        return pl

    # packet I/O with the control plane ----------------------------------------------------
    def packet_out(self, data: bytes) -> None:
        if self._cpu_sock is None or self._current is None:
            self.counters.packet_out_dropped += 1
            return
        try:
            self._cpu_sock.send(data)
            self.counters.packet_out += 1
        except OSError:
            self.counters.packet_out_dropped += 1

    def _read_cpu(self) -> None:
        sock = self._cpu_sock
        assert sock is not None
        while self._reading:
            try:
                frame = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            self.counters.packet_in += 1
            listeners: list[Callable[[bytes], None]] = list(self._packet_in_listeners)
            for cb in listeners:
                try:
                    cb(frame)
                except Exception:  # a listener's bug must not stop packet-in
                    log.exception("packet-in listener failed")

    def _read_digests(self) -> None:
        """The program's digests (its ring buffer) to the digest listeners (the P4Runtime
        server's DigestList), as the Python target's loop hands them over."""
        while self._reading:
            pl = self._current
            if pl is None or not pl.layout.digests:
                time.sleep(0.2)
                continue
            for dg in pl.read_digests(timeout_ms=200):
                self.counters.digests += 1
                for dcb in list(self._digest_listeners):
                    try:
                        dcb(dg)
                    except Exception:  # a listener's bug must not stop the digests
                        log.exception("digest listener failed")

    # lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        super().start()
        self._reading = True
        self._readers = [threading.Thread(target=self._read_digests, name="p4switch-digests",
                                          daemon=True)]
        if self._cpu_sock is not None:
            self._readers.append(threading.Thread(target=self._read_cpu, name="p4switch-cpu",
                                                  daemon=True))
        for t in self._readers:
            t.start()
        log.info("eBPF data plane on %s", ", ".join(f"{n}@{i}" for n, i in
                                                     sorted(self.interfaces.items())))

    def stop(self, *, log_stats: bool = True) -> None:
        self._reading = False
        for t in self._readers:
            t.join(timeout=2.0)
        self._readers = []
        if log_stats and self._current is not None:
            log.info("eBPF: %s", " ".join(f"{k}={v}" for k, v in self._current.stats().items()))
        super().stop(log_stats=False)
        self.close()

    def close(self) -> None:
        """Detach from every interface, close the object, remove the CPU veth; idempotent."""
        if self._current is not None:
            self._current.close()
            self._current = None
        for ifname in sorted(self._qdiscs):
            qdisc.clear(ifname)
        self._qdiscs.clear()
        self._applied.clear()
        if self._cpu_sock is not None:
            self._cpu_sock.close()
            self._cpu_sock = None
        if self._cpu_pair is not None:
            subprocess.run(["ip", "link", "del", self._cpu_pair[0]], capture_output=True,
                           check=False)
            self._cpu_pair = None

    # queues: the egress interface's qdisc ------------------------------------------------
    def _apply_queue(self, port: int) -> None:
        ifname = self.interfaces.get(port)
        if ifname is None:
            return
        rate = self.queues.rate(port)
        prios = self.queues.priorities
        want = (rate.bps, self.queues.depth(port), prios)
        if self._applied.get(port) != want:  # other ports' queues are left alone
            if ifname in self._qdiscs:
                self._qdisc_drops_before += qdisc.drops({ifname})
            if rate.bps:
                qdisc.serve_at(ifname, rate.bps, want[1], prios)
                self._qdiscs.add(ifname)
            elif ifname in self._qdiscs:
                qdisc.clear(ifname)
                self._qdiscs.discard(ifname)
            self._applied[port] = want
        if self._current is not None:
            self._current.set_port_queue(port, rate.bps, self.queues.depth(port), prios)
        if rate.pps:
            log.warning("port %d: packet rates are not modelled by the eBPF target's qdisc "
                        "(served at line rate)", port)

    def _rates_changed(self) -> None:
        super()._rates_changed()
        for port in self.interfaces:
            self._apply_queue(port)

    def set_queue_depth(self, port: int | None, depth: int) -> None:
        super().set_queue_depth(port, depth)
        for p in ([port] if port is not None else list(self.interfaces)):
            self._apply_queue(p)

    def port_stats(self) -> dict[int, dict[str, Any]]:
        """Per port: the interface's oper state (the controller's link-down signal), its
        kernel counters and the program's queue model (enqueued, tail drops, backlog; the
        depth now in full-size frames)."""
        out: dict[int, dict[str, Any]] = {}
        for n, ifname in sorted(self.interfaces.items()):
            state = _operstate(ifname)
            q = self._current.port_queue(n) if self._current is not None else {}
            rate = self.queues.rate(n)
            mtu_ns = 1514 * 8e9 / rate.bps if rate.bps else 0
            d: dict[str, Any] = {"oper_state": state, "oper_up": int(state in ("up", "unknown")),
                                 "queue_enqueued": q.get("enqueued", 0),
                                 "queue_dequeued": q.get("enqueued", 0),
                                 "tail_drops": q.get("tail_drops", 0),
                                 "queue_max_depth": q.get("max_depth", 0),
                                 "queue_backlog_us": q.get("backlog_ns", 0) // 1000,
                                 "queue_depth_now": int(q.get("backlog_ns", 0) / mtu_ns)
                                 if mtu_ns else 0,
                                 "queue_depth_limit": self.queues.depth(n),
                                 "rate_bps": rate.bps or 0, "rate_pps": 0}
            for k in ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "tx_dropped"):
                try:
                    d[k] = int(Path(f"/sys/class/net/{ifname}/statistics/{k}").read_text())
                except (OSError, ValueError):
                    d[k] = 0
            out[n] = d
        return out

    def hidden_stats(self) -> dict[str, Any]:
        """``Switch.hidden_stats`` from the program's maps: the frames it received (one
        entry, ``kernel``: no socket queues in front of it, so nothing is dropped there), the
        ingress lag (a frame from another switch arriving after its last bit was due by that
        switch's queue model: the HTB and CPU backlog the program cannot see) and the egress
        queueing delay (the model's waits); and the drop sites under the Python target's
        names (cgen's statistics, layout.PIPELINE_REASONS), with the egress HTB qdiscs'
        drops and what this target cannot do (``unsupported``) among the discards."""
        pl = self._current
        if pl is None:
            return super().hidden_stats()
        st = pl.stats()
        lag, egress = pl.histograms()
        queues = [pl.port_queue(n) for n in self.interfaces]
        pipeline: dict[str, int] = {}
        for stat, reason in PIPELINE_REASONS.items():
            if st.get(stat):
                pipeline[reason] = pipeline.get(reason, 0) + st[stat]
        qdrops = self._qdisc_drops_before + qdisc.drops(self._qdiscs)
        discards = {"rx_too_short": 0, "rx_oversized": 0, "no_program": 0,
                    "pipeline_errors": 0, "tx_no_port": st.get("no_port", 0), "flushed": 0,
                    "packet_out_dropped": self.counters.packet_out_dropped,
                    "unsupported": st.get("unsupported", 0), "egress_qdisc": qdrops}
        sites = SwitchDropSites(tail_drops=sum(q.get("tail_drops", 0) for q in queues),
                                pipeline=pipeline, discards=discards)
        return {"ports": {"kernel": {"kernel_packets": st.get("rx", 0), "kernel_drops": 0,
                                     "tx_errors": 0, "ingress_lag_us": lag.sparse()}},
                "egress_delay_us": egress.sparse(), "dequeued": egress.n,
                "drop_sites": sites.as_dict()}
