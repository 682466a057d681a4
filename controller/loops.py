"""The controller's control loops: link failure detection and Whack-a-Mole re-weighting.

(Reconcile, the third loop, is event-driven: a connection that comes back calls the
controller, which re-pushes pipeline and entries; see ``FabricController._on_reconnect``.)

Failure: every control period the controller sends a probe packet-out on every switch-switch
port (IPv4/UDP to the reserved PROBE_IP, payload = magic, sender device id, port, sequence).
The neighbour's ``send_to_cpu`` route punts it; the PacketIn's ``ingress_port`` names the link
end. A link whose probes (in either direction) lag ``probe_miss_periods`` rounds behind the
freshest probe the receiving switch heard on its other ports is down (relative, so a switch whose
packet-ins are merely late, on a loaded machine, keeps its links): the controller recomputes routes without it and writes only the diff, in the same period.
When probes flow again in both directions the link is restored. The controller notices dead
links by itself, whatever killed them (ip link down, a dead switch, a cut cable).

Whack-a-Mole: every period read ``port_qdepth_max`` (and clear it) of the member ports of
every WaM group; :func:`wam_decide` (pure) moves balls off members whose queue stays high, with
hysteresis, never below a floor share; the new weights rewrite only that group's ranges.
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

import networkx as nx

from common.checksum import csum16
from model.routing import PROBE_IP
from model.schemes import WhackAMole
from model.spec import LinkSpec, mac_int

from .connection import PacketIn, SwitchError

if TYPE_CHECKING:
    from .fabric import FabricController


class ControlLoop(StrEnum):
    """The controller's loops (``FabricController.start(loops=...)``, the YAML ``loops``)."""

    FAILURE = "failure"
    """Probe every link each period; reroute around one that stops answering, and back."""
    RECONCILE = "reconcile"
    """Re-program a switch that reconnected (it lost or kept its state)."""
    WAM = "wam"
    """Whack-a-Mole: move balls off congested members of each group."""


LOOP_NAMES: tuple[str, ...] = tuple(lp.value for lp in ControlLoop)

PROBE_MAGIC = b"P4FP"
PROBE_UDP_PORT = 0xFAB0
PROBE_SRC_IP = "169.254.0.1"
_PROBE = struct.Struct("!4sHHI")  # magic, device id, port, sequence


# ---- probes ----------------------------------------------------------------------------------

def _ip4(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def probe_frame(device_id: int, port: int, seq: int, smac: str) -> bytes:
    """Ethernet/IPv4/UDP to PROBE_IP with the sender's (device id, port, seq) as payload."""
    payload = _PROBE.pack(PROBE_MAGIC, device_id & 0xFFFF, port & 0xFFFF, seq & 0xFFFFFFFF)
    udp = struct.pack("!HHHH", PROBE_UDP_PORT, PROBE_UDP_PORT, 8 + len(payload), 0)
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(udp) + len(payload), 0, 0, 64, 17, 0,
                     _ip4(PROBE_SRC_IP), _ip4(PROBE_IP))
    ip = ip[:10] + struct.pack("!H", csum16(ip)) + ip[12:]
    eth = b"\xff" * 6 + mac_int(smac).to_bytes(6, "big") + b"\x08\x00"
    return eth + ip + udp + payload


def parse_probe(frame: bytes) -> tuple[int, int, int] | None:
    """(sender device id, sender port, seq) of a probe frame, None for anything else."""
    if len(frame) < 14 + 20 + 8 + _PROBE.size or frame[12:14] != b"\x08\x00":
        return None
    if frame[14 + 9] != 17 or frame[14 + 16:14 + 20] != _ip4(PROBE_IP).to_bytes(4, "big"):
        return None
    magic, dev, port, seq = _PROBE.unpack_from(frame, 14 + 20 + 8)
    return (dev, port, seq) if magic == PROBE_MAGIC else None


# ---- Whack-a-Mole decision (pure) ------------------------------------------------------------
@dataclass(frozen=True)
class WamPolicy:
    """Thresholds in packets of queue depth (the egress queue holds 64 by default)."""

    high: int = 16
    """A member whose max queue depth is >= high for ``hold`` periods is congested."""
    low: int = 4
    """A congested member recovers when its max depth is back <= low (hysteresis)."""
    hold: int = 2
    full: int = 60
    """Depth at which tail drops are imminent: congested at once, no hold."""
    step: float = 0.25
    """Fraction of a congested member's weight moved away per period; also the recovery step."""
    floor: float = 0.25
    """Minimum weight relative to the equal share (1.0): a busy member is never starved."""

    def __post_init__(self) -> None:
        if not 0 <= self.low < self.high <= self.full:
            raise ValueError("WamPolicy needs 0 <= low < high <= full")
        if not 0 < self.step <= 1 or not 0 < self.floor <= 1 or self.hold < 1:
            raise ValueError("WamPolicy needs 0 < step, floor <= 1 and hold >= 1")


@dataclass
class MemberState:
    above: int = 0
    congested: bool = False


@dataclass
class WamGroupState:
    members: dict[int, MemberState] = field(default_factory=dict)


def wam_decide(weights: Mapping[int, float], qdepth_max: Mapping[int, int],
               state: WamGroupState, policy: WamPolicy = WamPolicy()) -> dict[int, float]:
    """New per-port weights of one group from this period's max queue depth per member port.

    Congested members (above ``high`` for ``hold`` periods, or at ``full``) lose ``step`` of
    their weight per period down to ``floor``; members back at or below ``low`` regain ``step``
    per period up to 1.0. When every member is congested nothing moves (no better path).
    Updates ``state`` in place; returns the weights (unchanged values when nothing moved).
    """
    for port in weights:
        st = state.members.setdefault(port, MemberState())
        q = qdepth_max.get(port, 0)
        st.above = st.above + 1 if q >= policy.high else 0
        if q >= policy.full or st.above >= policy.hold:
            st.congested = True
        elif st.congested and q <= policy.low:
            st.congested = False
    out = {p: float(w) for p, w in weights.items()}
    congested = [p for p in weights if state.members[p].congested]
    if congested and len(congested) == len(weights):
        return out
    for p in weights:
        q = qdepth_max.get(p, 0)
        if state.members[p].congested:
            out[p] = max(policy.floor, out[p] * (1 - policy.step))
        elif out[p] < 1.0 and q <= policy.low:
            out[p] = min(1.0, out[p] + policy.step)
    return out


# ---- the loop thread -------------------------------------------------------------------------
class ControlLoops:
    """One thread running the periodic loops of a FabricController."""

    def __init__(self, ctl: FabricController, loops: list[str],
                 policy: WamPolicy | None = None) -> None:
        self.ctl = ctl
        self.names = loops
        self.policy = policy or WamPolicy()
        self.period = ctl.control_period
        self.miss = ctl.probe_miss_periods
        self.seq = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen_lock = threading.Lock()
        # (receiving switch, its port) -> round (seq) of the last probe that arrived there.
        # Counting rounds, not seconds: a loop that stalls (a long pipeline push, a loaded
        # machine) sends no rounds, so it cannot mistake its own silence for dead links.
        self.last_seen: dict[tuple[str, int], int] = {}
        self.miswired: set[tuple[str, int]] = set()
        self.kept: set[int] = set()  # silent links kept because they are the last way in
        self.down: set[int] = set()
        self.wam_state: dict[tuple[str, int], WamGroupState] = {}
        self.periods = 0
        self._dirty = False  # link state changed but not yet written (a failed Write retries)
        spec = ctl.spec
        self.dev_name = {sw.device_id: n for n, sw in spec.switches.items()}
        self.switch_links = [(i, lk) for i, lk in enumerate(spec.links)
                             if lk.a in spec.switches and lk.b in spec.switches]
        for _, lk in self.switch_links:
            self.last_seen[(lk.a, lk.a_port)] = 0
            self.last_seen[(lk.b, lk.b_port)] = 0

    def start(self) -> None:
        self.ctl.packet_in_handlers.append(self.on_packet_in)
        self._thread = threading.Thread(target=self._run, name="fabric-loops", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self.on_packet_in in self.ctl.packet_in_handlers:
            self.ctl.packet_in_handlers.remove(self.on_packet_in)
        if self._thread is not None:
            self._thread.join(timeout=5 * self.period + 5)

    def _run(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception as e:  # a loop must survive a bad period (switch gone, ...)
                self.ctl.event("loops", None, f"period failed: {type(e).__name__}: {e}")
            next_t += self.period
            self._stop.wait(max(0.0, next_t - time.monotonic()))
            if time.monotonic() - next_t > self.period:
                next_t = time.monotonic()  # fell behind: do not burst

    def tick(self) -> None:
        self.periods += 1
        if ControlLoop.FAILURE in self.names:
            self.check_links()
            self.send_probes()
        if ControlLoop.WAM in self.names:
            self.wam_step()

    # ---- failure -----------------------------------------------------------------------------
    def send_probes(self) -> None:
        ctl = self.ctl
        if ctl.schema is None:
            return
        self.seq += 1
        for name, sw in ctl.spec.switches.items():
            conn = ctl.conns.get(name)
            if conn is None or not conn.connected:
                continue
            for port, (peer, _) in sorted(ctl.spec.ports(name).items()):
                if peer not in ctl.spec.switches:
                    continue
                pkt = ctl.schema.packet_out(probe_frame(sw.device_id, port, self.seq,
                                                        sw.port_mac(port)), egress_port=port)
                try:
                    conn.packet_out(pkt)
                except SwitchError:
                    break

    def on_packet_in(self, pkt: PacketIn) -> None:
        probe = parse_probe(pkt.payload)
        if probe is None or self.ctl.schema is None:
            return
        meta = self.ctl.schema.packet_in_metadata(pkt.metadata)
        port = meta.get("ingress_port")
        if port is not None:
            self.record_probe(pkt.switch, port, *probe)

    def record_probe(self, switch: str, port: int, dev: int, src_port: int, seq: int) -> None:
        """A probe (sender device ``dev``, its port, round ``seq``) arrived on switch:port."""
        peer = self.ctl.spec.ports(switch).get(port)
        sender = self.dev_name.get(dev)
        if peer is None or peer != (sender, src_port):
            if (switch, port) not in self.miswired:  # say it once per port
                self.miswired.add((switch, port))
                self.ctl.event("failure", switch, f"port {port}: probe from {sender}:"
                               f"{src_port}, but the spec says {peer}: ignored (miswired?)")
            return
        with self._seen_lock:
            key = (switch, port)
            self.last_seen[key] = max(self.last_seen.get(key, 0), seq)

    def _freshest(self, seen: Mapping[tuple[str, int], int]) -> dict[str, int]:
        """Per receiving switch, the newest round heard on any of its switch ports.

        A port's lag is measured against this, not against the round last sent: when a
        switch's packet-ins come late (its process or the controller starved of CPU, the
        PacketIn stream backed up) all its ports lag together and no link is declared dead;
        a dead link lags behind its switch's live ports. A switch with a single switch port
        has no siblings to compare with and uses the freshest round heard anywhere."""
        fresh: dict[str, int] = {}
        count: dict[str, int] = {}
        for (sw, _), rnd in seen.items():
            fresh[sw] = max(fresh.get(sw, 0), rnd)
            count[sw] = count.get(sw, 0) + 1
        overall = max(fresh.values(), default=0)
        return {sw: (r if count[sw] > 1 else overall) for sw, r in fresh.items()}

    def _keep_connected(self, candidates: list[tuple[int, LinkSpec]]) -> list[tuple[int, LinkSpec]]:
        """Drop the candidates whose removal would cut a host-facing switch off the others.

        Rerouting around such a link cannot help: a dead one leaves its hosts unreachable
        either way, while a live one whose probes were merely lost (tail-dropped behind an
        incast, late from a starved switch) would turn delivery into route-miss drops for
        every packet to those hosts. Such a link stays in service and is reported once."""
        if not candidates:
            return candidates
        spec = self.ctl.spec
        edge_sw = {h.switch for h in spec.hosts.values()}
        g = nx.MultiGraph()
        g.add_nodes_from(spec.switches)
        g.add_edges_from((lk.a, lk.b, i) for i, lk in self.switch_links if i not in self.down)
        accepted = []
        for i, lk in candidates:
            g.remove_edge(lk.a, lk.b, key=i)
            reach: set[str] = max((c for c in nx.connected_components(g)),
                        key=lambda c: len(c & edge_sw), default=set())
            if edge_sw <= reach:
                accepted.append((i, lk))
                self.kept.discard(i)
                continue
            g.add_edge(lk.a, lk.b, key=i)
            if i not in self.kept:
                self.kept.add(i)
                cut = sorted(edge_sw - reach)
                self.ctl.event("failure", lk.a, f"link {lk.a}:{lk.a_port}-{lk.b}:{lk.b_port} "
                               f"silent for {self.miss} periods but kept: without it "
                               f"{', '.join(cut)} would be cut off (rerouting cannot help)")
        return accepted

    def check_links(self) -> None:
        """Before this period's probes: a direction that lags ``miss`` rounds behind the
        freshest probe its switch heard is dead; a down link heard in both directions within
        the last round (or the one before, when ``miss`` > 1: a probe may still be in flight)
        of its switches' freshest is back."""
        with self._seen_lock:
            seen = dict(self.last_seen)
        fresh = self._freshest(seen)
        newly_down, newly_up = [], []
        for i, lk in self.switch_links:
            lag = max(fresh[lk.a] - seen.get((lk.a, lk.a_port), 0),
                      fresh[lk.b] - seen.get((lk.b, lk.b_port), 0))
            if i not in self.down and lag >= self.miss:
                newly_down.append((i, lk))
            elif i in self.down and lag < min(2, self.miss):
                newly_up.append((i, lk))
        newly_down = self._keep_connected(newly_down)
        for i, lk in newly_down:
            self.down.add(i)
            self.ctl.event("failure", lk.a, f"link {lk.a}:{lk.a_port}-{lk.b}:{lk.b_port} down "
                           f"(no probe for {self.miss} periods)")
        for i, lk in newly_up:
            self.down.discard(i)
            self.ctl.event("failure", lk.a, f"link {lk.a}:{lk.a_port}-{lk.b}:{lk.b_port} up "
                           f"(probes back)")
        if newly_down or newly_up:
            self._dirty = True
        if self._dirty:
            with self.ctl._mu:
                self.ctl.detected_failed = set(self.down)
                self.ctl.apply("failure", "reroute")
            self._dirty = False

    # ---- Whack-a-Mole ------------------------------------------------------------------------
    def wam_step(self) -> None:
        ctl = self.ctl
        entries = ctl.entries
        if entries is None:
            return
        wam_groups = [(s, gid, g) for s in entries for gid, g in entries[s].groups.items()
                      if isinstance(entries[s].scheme[gid], WhackAMole)]
        if not wam_groups:
            return
        switches = sorted({s for s, _, _ in wam_groups if ctl.conns.get(s) and
                           ctl.conns[s].connected})
        q = ctl.read_queues(clear=True, switches=switches)
        depth = {(r.switch, int(r.port)): int(r.qdepth_max) for r in q.itertuples()}
        changed = False
        for s, gid, g in wam_groups:
            if s not in switches:
                continue
            cur = {p: ctl.weights.get((s, gid), {}).get(p, 1.0) for p in g.ports}
            st = self.wam_state.setdefault((s, gid), WamGroupState())
            new = wam_decide(cur, {p: depth.get((s, p), 0) for p in g.ports}, st, self.policy)
            if new != cur:
                ctl.weights[(s, gid)] = new
                changed = True
                ctl.event("wam", s, f"group {gid} weights "
                          f"{[round(new[p], 2) for p in g.ports]} (qdepth_max "
                          f"{[depth.get((s, p), 0) for p in g.ports]})")
        if changed:
            ctl.apply("wam", "rebalance")
