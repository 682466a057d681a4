"""The controller's control loops: link failure detection and Whack-a-Mole re-weighting.

(Reconcile, the third loop, is event-driven: a connection that comes back calls the
controller, which re-pushes pipeline and entries; see ``FabricController._on_reconnect``.)

Failure: a round of probes is a packet-out on every switch-switch port (IPv4/UDP to the
reserved PROBE_IP, payload = magic, sender device id, port, sequence). A round goes out at a
control period once the previous one has come back (every port of a link in service heard it)
or has had its time: one period while rounds come back within a period, else twice the
slowest of the last rounds (:meth:`ControlLoops.round_timeout`). So the rounds keep
the pace of the probes' round trip: a controller or switches starved of CPU, or a fabric
whose probes queue, send fewer rounds instead of piling rounds up in their queues (which made
every probe seconds late, and a port behind a longer queue look dead).
The neighbour's ``send_to_cpu`` route punts it; the PacketIn's ``ingress_port`` names the link
end. A link whose probes (in either direction) lag ``probe_miss_periods`` rounds behind the
freshest probe the receiving switch heard on its other ports is down (relative, so a switch whose
packet-ins are merely late, on a loaded machine, keeps its links): the controller recomputes routes without it and writes only the diff, in the same period.
When probes flow again in both directions the link is restored. The controller notices dead
links by itself, whatever killed them (ip link down, a dead switch, a cut cable).

Whack-a-Mole: every period read ``port_qdepth_max`` (and clear it) of the member ports of
every WaM group; :func:`wam_decide` (pure) moves balls off members whose queue stays high, with
hysteresis, never below a floor share; the new weights rewrite only that group's ranges.

The loops talk to a fabric only through :class:`FabricControl`: read member queue depths,
write group weights, route around detected links, send probes and hear them, record events.
``FabricController`` implements it over P4Runtime and runs :class:`ControlLoops` in a thread
(wall-clock periods); the simulator implements it over its pipelines and ticks the same
:class:`ControlLoops` from its event loop (virtual time), so both run one implementation.
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import networkx as nx

from common.checksum import csum16
from model.routing import PROBE_IP, GroupKey
from model.routing import Group as LbGroup
from model.spec import FabricSpec, LinkSpec, mac_int


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


# ---- what the loops need of a fabric ---------------------------------------------------------
ProbeHandler = Callable[[str, int, int, int, int], None]
"""Called for each probe heard: (receiving switch, its port, sender device id, sender port,
round)."""


class FabricControl(Protocol):
    """The public face a fabric shows its control loops (FabricController over P4Runtime,
    sim.control.SimControl over simulated pipelines). Every call is made from the loops' one
    driver (a thread, or the simulator's event loop), except the probe handler, which the
    fabric may call from anywhere."""

    @property
    def spec(self) -> FabricSpec: ...

    def event(self, loop: str, switch: str | None, what: str) -> object:
        """Record (and log) one thing a loop did."""
        ...

    def send_probes(self, seq: int) -> None:
        """Send round ``seq`` of probes out of every switch-switch port."""
        ...

    def listen_probes(self, handler: ProbeHandler | None) -> None:
        """Report every probe heard to ``handler`` from now on (None: stop)."""
        ...

    def set_detected_failed(self, links: frozenset[int], loop: str, why: str) -> int:
        """Route around exactly these links (indexes into ``spec.links``) besides any an
        operator failed; returns the entries changed."""
        ...

    def operator_failed(self) -> frozenset[int]:
        """The links (indexes into ``spec.links``) an operator took out of service: routed
        around and not probed until the operator restores them, so not the loops' to judge."""
        ...

    def wam_groups(self) -> list[LbGroup]:
        """The Whack-a-Mole groups of the switches the loops can reach now."""
        ...

    def group_weights(self, switch: str, group_id: int) -> dict[int, float]:
        """The member weights of a group as installed, by port (1.0 = an equal share)."""
        ...

    def read_qdepth_max(self, switches: Sequence[str]) -> dict[tuple[str, int], int]:
        """Each port's max egress queue depth (packets) since the last read, and clear it."""
        ...

    def set_group_weights(self, weights: Mapping[GroupKey, Mapping[int, float]], loop: str,
                          why: str) -> int:
        """Install new member weights of these groups (one write); returns entries changed."""
        ...


# ---- what the loops did, read back from events -----------------------------------------------
WEIGHTS_EVENT = "group {gid} weights"
"""How a Whack-a-Mole weight change starts its event text."""


@dataclass(frozen=True)
class LoopActions:
    """How many times the loops acted in a list of events."""

    weight_changes: int = 0
    """Groups whose Whack-a-Mole weights changed (one per group and period)."""
    links_down: int = 0
    links_up: int = 0


def loop_actions(events: Iterable[Mapping[str, Any]]) -> LoopActions:
    """Count the loops' actions in events as ``FabricController.events`` (or the runner's
    events.csv) holds them: dicts (or rows) with ``loop`` and ``what``."""
    wc = down = up = 0
    for e in events:
        loop, what = str(e.get("loop")), str(e.get("what"))
        if loop == ControlLoop.WAM and what.startswith("group ") and " weights " in what:
            wc += 1
        elif loop == ControlLoop.FAILURE and what.startswith("link "):
            down += " down " in what and what.endswith("periods)")
            up += what.endswith("(probes back)")
    return LoopActions(wc, down, up)


# ---- the loops -------------------------------------------------------------------------------
ROUND_HISTORY = 8
"""Rounds whose round trips (in periods) set the next rounds' timeout."""
MAX_ROUND_TIMEOUT = 64
"""Periods a round may wait at most before the next is sent (a dead fabric still gets rounds)."""


class ControlLoops:
    """The periodic loops over a :class:`FabricControl`. ``tick()`` runs one period; the
    emulated fabric's controller calls it from a thread (``start``), the simulator from its
    event loop. ``miss_periods``: probe rounds a link may lag before it is down."""

    def __init__(self, ctl: FabricControl, loops: Sequence[str],
                 policy: WamPolicy | None = None, *, miss_periods: int = 2,
                 min_round_trip: int = 1) -> None:
        bad = [n for n in loops if n not in LOOP_NAMES]
        if bad:
            raise ValueError(f"unknown loop(s) {bad} (choose from {', '.join(LOOP_NAMES)})")
        if miss_periods < 1:
            raise ValueError("miss_periods must be >= 1")
        if min_round_trip < 1:
            raise ValueError("min_round_trip must be >= 1")
        self.ctl = ctl
        self.names = [n for n in loops if n != ControlLoop.RECONCILE]  # event-driven, not here
        self.policy = policy or WamPolicy()
        self.miss = miss_periods
        self.seq = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._period = 0.0
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
        self.weight_changes = 0
        """Groups whose weights a period changed, summed over periods."""
        self._dirty = False  # link state changed but not yet written (a failed Write retries)
        self.min_round_trip = min_round_trip
        """Periods a round trip of the probes counts as at least (the emulated controller's
        own packet-in path on a loaded machine, FabricController ``probe_rtt_s``)."""
        self.sent_period: dict[int, int] = {}
        """Round -> the period it went out in (the last :data:`ROUND_HISTORY` rounds)."""
        self.trips: dict[int, int] = {}
        """Round -> its slowest probe so far, in periods (1: back before the next period)."""
        self.rounds_late = 0
        """Rounds sent before the previous one had come back (its timeout passed)."""
        self.held: frozenset[int] = frozenset()
        """Links the operator had out of service at the last check (not judged)."""
        spec = ctl.spec
        self.dev_name = {sw.device_id: n for n, sw in spec.switches.items()}
        self.switch_links = [(i, lk) for i, lk in enumerate(spec.links)
                             if lk.a in spec.switches and lk.b in spec.switches]
        for _, lk in self.switch_links:
            self.last_seen[(lk.a, lk.a_port)] = 0
            self.last_seen[(lk.b, lk.b_port)] = 0

    @property
    def active(self) -> bool:
        """Whether any periodic loop is on (reconcile alone needs no ticks)."""
        return bool(self.names)

    def attach(self) -> None:
        """Start hearing probes (before the first tick)."""
        if ControlLoop.FAILURE in self.names:
            self.ctl.listen_probes(self.record_probe)

    def detach(self) -> None:
        if ControlLoop.FAILURE in self.names:
            self.ctl.listen_probes(None)

    def start(self, period: float) -> None:
        """Tick every ``period`` wall-clock seconds in a thread of its own."""
        self.attach()
        self._period = period
        self._thread = threading.Thread(target=self._run, args=(period,), name="fabric-loops",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.detach()
        if self._thread is not None:
            self._thread.join(timeout=5 * self._period + 5)

    def _run(self, period: float) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception as e:  # a loop must survive a bad period (switch gone, ...)
                self.ctl.event("loops", None, f"period failed: {type(e).__name__}: {e}")
            next_t += period
            self._stop.wait(max(0.0, next_t - time.monotonic()))
            if time.monotonic() - next_t > period:
                next_t = time.monotonic()  # fell behind: do not burst

    def tick(self) -> None:
        self.periods += 1
        if ControlLoop.FAILURE in self.names:
            self.check_links()
            if self.round_due():
                self.send_probes()
        if ControlLoop.WAM in self.names:
            self.wam_step()

    # ---- failure -----------------------------------------------------------------------------
    def send_probes(self) -> None:
        with self._seen_lock:   # the probe handler updates the trips from other threads
            self.seq += 1
            self.sent_period[self.seq] = self.periods
            self.trips[self.seq] = 1
            for r in [r for r in self.trips if r <= self.seq - ROUND_HISTORY]:
                del self.trips[r]
                self.sent_period.pop(r, None)
        self.ctl.send_probes(self.seq)

    def inherit(self, old: ControlLoops) -> None:
        """Start from the round trips ``old`` (the loops this one replaces) measured."""
        with old._seen_lock:
            trips = {r - old.seq: t for r, t in old.trips.items()}
        with self._seen_lock:
            self.trips.update(trips)

    def round_timeout(self) -> int:
        """Periods the last round may take to come back before the next goes anyway: one
        while rounds come back within a period (the fabric keeps the loop's pace), else
        twice the slowest probe of the last :data:`ROUND_HISTORY` rounds (at least
        ``min_round_trip``), at most :data:`MAX_ROUND_TIMEOUT`. A link is down when it misses
        ``miss_periods`` rounds that its switch's other ports heard, so a probe is late, not
        lost, for a timeout and more."""
        with self._seen_lock:
            slow = max(self.trips.values(), default=1)
        slow = max(slow, self.min_round_trip)
        return 1 if slow <= 1 else min(MAX_ROUND_TIMEOUT, 2 * slow)

    def round_missing(self, seen: Mapping[tuple[str, int], int]) -> tuple[int, int]:
        """(ports the last round has not reached yet, ports it should reach): every port of
        a switch-switch link in service (a link declared down, or kept although silent, is
        not waited for)."""
        out = set(self.down) | self.kept | self.held
        ends = [end for i, lk in self.switch_links if i not in out
                for end in ((lk.a, lk.a_port), (lk.b, lk.b_port))]
        return sum(seen.get(p, 0) < self.seq for p in ends), len(ends)

    def round_due(self) -> bool:
        """Whether this period sends a round: the first; or the last one is back; or its
        :meth:`round_timeout` has passed — then, if more than a quarter of its ports still
        wait for it, the probes are slow (not a few links dead) and its round trip counts as
        longer than the wait: the next timeouts back off, as a TCP sender's RTO does."""
        if self.seq == 0:
            return True
        with self._seen_lock:
            seen = dict(self.last_seen)
        missing, expected = self.round_missing(seen)
        if not missing:
            return True
        waited = self.periods - self.sent_period.get(self.seq, self.periods)
        if waited < self.round_timeout():
            return False
        self.rounds_late += 1
        if missing * 4 > expected:
            with self._seen_lock:
                self.trips[self.seq] = max(self.trips.get(self.seq, 1), waited + 1)
        return True

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
        if seq > self.seq:
            # a round this loop has not sent: a late probe of the loop it replaced (the
            # controller restarts its loops when Whack-a-Mole joins). Counted, it would put
            # this switch's freshest round far ahead of its other ports and call them dead.
            return
        with self._seen_lock:
            key = (switch, port)
            self.last_seen[key] = max(self.last_seen.get(key, 0), seq)
            sent = self.sent_period.get(seq)
            if sent is not None:   # heard after j more periods: a round trip of j + 1
                self.trips[seq] = max(self.trips.get(seq, 1), self.periods - sent + 1)

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
        of its switches' freshest is back. A link the operator took out of service is not
        judged; when it comes back its ends count as heard at the last round sent."""
        held = self.ctl.operator_failed()
        with self._seen_lock:
            for i, lk in self.switch_links:
                if i in self.held and i not in held:   # restored: probes resume from now
                    for end in ((lk.a, lk.a_port), (lk.b, lk.b_port)):
                        self.last_seen[end] = max(self.last_seen.get(end, 0), self.seq)
            seen = dict(self.last_seen)
        self.held = held
        fresh = self._freshest(seen)
        newly_down, newly_up = [], []
        for i, lk in self.switch_links:
            if i in held:
                continue
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
            self.ctl.set_detected_failed(frozenset(self.down), "failure", "reroute")
            self._dirty = False

    # ---- Whack-a-Mole ------------------------------------------------------------------------
    def wam_step(self) -> None:
        """One period of Whack-a-Mole over every WaM group the fabric reaches: read (and
        clear) its members' max queue depths, decide, write the groups that changed at once."""
        ctl = self.ctl
        groups = ctl.wam_groups()
        if not groups:
            return
        depth = ctl.read_qdepth_max(sorted({g.switch for g in groups}))
        new_weights: dict[GroupKey, dict[int, float]] = {}
        for g in groups:
            s, gid = g.switch, g.group_id
            have = ctl.group_weights(s, gid)
            cur = {p: have.get(p, 1.0) for p in g.ports}
            st = self.wam_state.setdefault((s, gid), WamGroupState())
            new = wam_decide(cur, {p: depth.get((s, p), 0) for p in g.ports}, st, self.policy)
            if new != cur:
                new_weights[(s, gid)] = new
                ctl.event("wam", s, WEIGHTS_EVENT.format(gid=gid) +
                          f" {[round(new[p], 2) for p in g.ports]} (qdepth_max "
                          f"{[depth.get((s, p), 0) for p in g.ports]})")
        if new_weights:
            self.weight_changes += len(new_weights)
            ctl.set_group_weights(new_weights, "wam", "rebalance")
