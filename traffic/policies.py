"""Host-side path policies: which entropy (UDP source port) each packet of a flow carries.

Switch-based load balancing decides per packet in the fabric; host-based designs decide at the
sender and let plain ECMP switches hash the choice onto a path. A policy here is pure code over
(``now``, ACK events, the flow's port set), like transport.py, so the host agent (agent.py) and
the simulator (sim/host.py) run the very same objects:

* ``single`` — today's behaviour: the flow's ``qps`` ports in turn (1: one path per flow);
* ``split(k)`` — Ethereal-style: the flow is striped over k subflows on k source ports; with
  ``pin`` the ports are chosen by ``model.paths`` so that the switches' own ECMP hashes
  put the subflows on distinct uplinks at every tier (paths assigned, not hoped for);
* ``entropy-spray(n)`` — UEC-style spraying through ECMP: per packet one of n entropies,
  round-robin (``rr``) or uniformly at random (``random``);
* ``reps(n)`` — REPS (recycled entropy packet spraying): an entropy whose packet was ACKed
  without ECN echo goes back into a recycle queue and is reused; when the queue is empty
  (start-up, or congestion threw entropies away) a fresh one is drawn from the n;
* ``ecn-adaptive(n)`` — STrack-like: an entropy whose packet came back CE-marked is avoided for
  ``hold`` seconds; the sender rotates over the entropies not currently avoided.

Feedback is per packet: the caller reports each newly acknowledged sequence number with its
CE echo (``Ack.ce``), and the policy credits the entropy that packet was sent on — one call
per ACK (``on_acks``), not per packet.

Cost: the sender calls ``choose`` for every packet, so it must stay a few list operations
(issue 13 allows a policy 10% of the sender's per-packet work; bench/agent_bench.py). Random
choices come from a per-flow table of draws made once (``draw_table``), not from a generator
call per packet; ECN-adaptive remembers when every entropy is avoided instead of rescanning.

Unpinned entropy sets are random 16-bit ports in the dynamic range, seeded per flow (what a
host that knows nothing of the fabric gets). ``entropy_set="qp"`` uses the agent's QP ports
(``entropy_port`` of QP 0..n-1) instead — but those are CRC-32 images of consecutive QP numbers
and fabric.p4's ECMP is a CRC too, so the member choice is an affine function of the QP bits:
on a power-of-two fabric they land on distinct paths by construction, i.e. pinned by accident
(tests/traffic/test_policies_fabric.py shows both).
"""

from __future__ import annotations

import random
import re
import struct
import zlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from model.dims import Dim, dim
from model.entropy import entropy_port

from .transport import SACK_BITS, Ack

POLICIES = ("single", "split", "entropy-spray", "reps", "ecn-adaptive")
SPRAY_MODES = ("rr", "random")
ENTROPY_SETS = ("random", "qp")
_DYNAMIC_PORTS = range(0xC000, 0x10000)
DEFAULT_N = {"single": 1, "split": 4, "entropy-spray": 8, "reps": 16, "ecn-adaptive": 8}
DRAW_TABLE_MIN, DRAW_TABLE_MAX = 256, 4096


def draw_table(rng: random.Random, n: int, npkts: int) -> tuple[list[int], int]:
    """(table, mask): uniform indexes in 0..n-1 for a flow's random choices, drawn once; the
    t-th choice is ``table[t & mask]``. The table has the power-of-two size covering
    ``npkts``, at least DRAW_TABLE_MIN (a short flow that keeps losing packets must keep
    exploring: a 4-entry table would cycle over at most 4 entropies, all possibly dead) and
    at most DRAW_TABLE_MAX (longer flows cycle through it). For n a power of two up to 256 the
    draws are random bytes masked in C (unbiased), else ``randrange``."""
    size = 1 << (min(max(npkts, DRAW_TABLE_MIN), DRAW_TABLE_MAX) - 1).bit_length()
    if n & (n - 1) == 0 and n <= 256:
        tab = list(rng.randbytes(size).translate(bytes(b & (n - 1) for b in range(256))))
    else:
        tab = [rng.randrange(n) for _ in range(size)]
    return tab, size - 1


class PathPolicy:
    """One flow's entropy choice. ``choose`` returns an index into ``ports``; policies with
    ``feedback`` get ``on_acked`` for every newly acknowledged packet."""

    feedback: ClassVar[bool] = False

    def __init__(self, ports: Sequence[int], npkts: int) -> None:
        if not ports:
            raise ValueError("a path policy needs at least one source port")
        self.ports = list(ports)
        self.n = len(self.ports)
        self.uses = [0] * self.n   # packets sent per entropy (for the records)

    def choose(self, seq: int, now: float) -> int:
        raise NotImplementedError

    def on_acked(self, seq: int, ce: bool, now: float) -> None:
        """Packet ``seq`` was acknowledged; ``ce``: it arrived CE-marked."""

    def on_acks(self, newly: list[int], base: int, ce_bits: int, now: float) -> None:
        """Packets ``newly`` were acknowledged by one ACK whose CE echo bitmap ``ce_bits``
        starts at ``base`` (a packet outside it: not marked). Subclasses inline this."""
        on_acked = self.on_acked
        for seq in newly:
            d = seq - base
            on_acked(seq, 0 <= d < SACK_BITS and (ce_bits >> d) & 1 == 1, now)


class RoundRobin(PathPolicy):
    """``single`` (n = qps), ``split`` and round-robin ``entropy-spray``: transmission t on
    entropy t mod n — without losses packet seq on seq mod n; a retransmission takes the next
    entropy in turn, not its original one (which may be the path that lost it)."""

    def __init__(self, ports: Sequence[int], npkts: int) -> None:
        super().__init__(ports, npkts)
        self.next = 0

    def choose(self, seq: int, now: float) -> int:
        i = self.next
        self.next = i + 1 if i + 1 < self.n else 0
        self.uses[i] += 1
        return i


class RandomSpray(PathPolicy):
    """``entropy-spray`` with ``random``: a uniform entropy per packet (seeded per flow)."""

    def __init__(self, ports: Sequence[int], npkts: int, rng: random.Random) -> None:
        super().__init__(ports, npkts)
        self.draws, self.mask = draw_table(rng, self.n, npkts)
        self.t = 0

    def choose(self, seq: int, now: float) -> int:
        t = self.t
        self.t = t + 1
        i = self.draws[t & self.mask]
        self.uses[i] += 1
        return i


class _Tracked(PathPolicy):
    """Remembers which entropy each packet was last sent on, to credit its ACK."""

    feedback: ClassVar[bool] = True

    def __init__(self, ports: Sequence[int], npkts: int) -> None:
        super().__init__(ports, npkts)
        self.sent_on = bytearray(npkts) if self.n <= 256 else [0] * npkts
        self.marked = 0     # ACKed packets that came back CE-marked
        self.unmarked = 0

    def _sent(self, seq: int, i: int) -> int:
        self.sent_on[seq] = i
        self.uses[i] += 1
        return i


class Reps(_Tracked):
    """REPS: recycle the entropies that came back clean, draw fresh ones otherwise.

    ``recycled`` is a FIFO of entropy indexes whose packets were ACKed without CE; a send takes
    the oldest, so a clean path carries the next packet. A CE-marked ACK discards its entropy
    (it is not recycled). With the queue empty the sender explores: a fresh entropy, drawn
    uniformly from the flow's n (seeded per flow; the k-th fresh draw is ``draws[k & mask]``).
    ``fresh`` counts those draws.
    """

    def __init__(self, ports: Sequence[int], npkts: int, rng: random.Random) -> None:
        super().__init__(ports, npkts)
        self.draws, self.mask = draw_table(rng, self.n, npkts)
        self.recycled: deque[int] = deque()
        self.fresh = 0

    def choose(self, seq: int, now: float) -> int:
        r = self.recycled
        if r:
            i = r.popleft()
        else:
            i = self.draws[self.fresh & self.mask]
            self.fresh += 1
        self.sent_on[seq] = i
        self.uses[i] += 1
        return i

    def on_acked(self, seq: int, ce: bool, now: float) -> None:
        if ce:
            self.marked += 1
            return
        self.unmarked += 1
        self.recycled.append(self.sent_on[seq])

    def on_acks(self, newly: list[int], base: int, ce_bits: int, now: float) -> None:
        sent_on = self.sent_on
        if not ce_bits:                    # nothing marked: recycle them all, in order
            self.unmarked += len(newly)
            self.recycled.extend(map(sent_on.__getitem__, newly))
            return
        append = self.recycled.append
        marked = 0
        for seq in newly:
            d = seq - base
            if 0 <= d < SACK_BITS and (ce_bits >> d) & 1:
                marked += 1
            else:
                append(sent_on[seq])
        self.marked += marked
        self.unmarked += len(newly) - marked


class EcnAdaptive(_Tracked):
    """STrack-like: after a CE echo on an entropy, avoid it for ``hold`` seconds.

    Sends rotate over the entropies whose avoidance has expired; when every one is avoided the
    one that becomes usable first is taken (the flow must keep sending; several equally soon:
    in turn). ``avoided`` counts the sends that skipped at least one avoided entropy. While all
    are avoided the answer is cached (``all_until``, ``soonest``): no rescan per packet.
    """

    def __init__(self, ports: Sequence[int], npkts: int, hold: float) -> None:
        super().__init__(ports, npkts)
        self.hold = hold
        self.until = [float("-inf")] * self.n
        self.clear_at = float("-inf")   # max(until): from then on nothing is avoided
        self.all_until = float("-inf")  # min(until) while every entropy is avoided ...
        self.soonest: tuple[int, ...] = ()  # ... and the entropies it belongs to, ascending
        self.next = 0
        self.avoided = 0

    def choose(self, seq: int, now: float) -> int:
        n = self.n
        i = self.next
        if now >= self.clear_at:          # the common case: plain round-robin
            self.next = i + 1 if i + 1 < n else 0
            self.sent_on[seq] = i
            self.uses[i] += 1
            return i
        if now < self.all_until:          # still all avoided: the soonest, no scan
            self.avoided += 1
            ties: tuple[int, ...] = self.soonest
            best = ties[0]
            if len(ties) > 1:             # the first at or after next, as the scan would
                for j in ties:
                    if j >= i:
                        best = j
                        break
            self.next = best + 1 if best + 1 < n else 0
            return self._sent(seq, best)
        until = self.until
        best_t = min(until)               # (in C: cheaper than a Python scan of n)
        if best_t <= now:                 # some entropy is free: the first from next
            for step in range(n):
                j = i + step
                if j >= n:
                    j -= n
                if until[j] <= now:
                    if step:
                        self.avoided += 1
                    self.next = j + 1 if j + 1 < n else 0
                    return self._sent(seq, j)
        self.avoided += 1                 # every entropy avoided: the one free soonest,
        if until.count(best_t) == 1:      # the first at or after next among equals
            ties = (until.index(best_t),)
        else:
            ties = tuple(j for j in range(n) if until[j] == best_t)
        best = next((j for j in ties if j >= i), ties[0]) if len(ties) > 1 else ties[0]
        # cached until best_t passes or one of the soonest is marked again
        self.all_until, self.soonest = best_t, ties
        self.next = best + 1 if best + 1 < n else 0
        return self._sent(seq, best)

    def _mark(self, i: int, t: float) -> None:
        if t > self.until[i]:
            self.until[i] = t
            if t > self.clear_at:
                self.clear_at = t
            if i in self.soonest:         # marks on others leave min(until) where it was
                self.all_until = float("-inf")

    def on_acked(self, seq: int, ce: bool, now: float) -> None:
        if ce:
            self.marked += 1
            self._mark(self.sent_on[seq], now + self.hold)
        else:
            self.unmarked += 1

    def on_acks(self, newly: list[int], base: int, ce_bits: int, now: float) -> None:
        if ce_bits:
            t = now + self.hold
            sent_on, marked = self.sent_on, 0
            for seq in newly:
                d = seq - base
                if 0 <= d < SACK_BITS and (ce_bits >> d) & 1:
                    marked += 1
                    self._mark(sent_on[seq], t)
            self.marked += marked
            self.unmarked += len(newly) - marked
        else:
            self.unmarked += len(newly)


def ce_of(ack: Ack, seq: int) -> bool:
    """The per-packet ECN echo of ``seq`` in ``ack`` (False outside its bitmap)."""
    d = seq - ack.base
    return 0 <= d < SACK_BITS and bool((ack.ce >> d) & 1)


def feed_ack(policy: PathPolicy, newly: list[int], ack: Ack, now: float) -> None:
    """Give a feedback policy the packets ``ack`` newly acknowledged (drains ``newly``)."""
    if newly:
        policy.on_acks(newly, ack.base, ack.ce, now)
        newly.clear()


@dataclass(frozen=True)
class PolicySpec:
    """A policy as chosen per run: name, number of entropies/subflows ``n``, split ``pin``,
    spray ``mode``, ECN-adaptive ``hold`` (seconds), ``seed`` of the per-flow generators,
    ``entropy_set`` of unpinned policies other than ``single`` (module docstring).
    ``n`` None = the policy's default (``single``: the run's --qps)."""

    name: str = "single"
    n: int | None = None
    pin: bool = False
    mode: str = "rr"
    hold: float = dim(Dim.TIME, 200e-6)   # a fabric time (dilated with the experiment)
    seed: int = 0
    entropy_set: str = "random"

    def __post_init__(self) -> None:
        if self.name not in POLICIES:
            raise ValueError(f"unknown path policy {self.name!r} (choose from "
                             f"{', '.join(POLICIES)})")
        if self.n is not None and not 1 <= self.n <= 4096:
            raise ValueError(f"path policy {self.name}: n must be in 1..4096, got {self.n}")
        if self.mode not in SPRAY_MODES:
            raise ValueError(f"spray mode must be one of {', '.join(SPRAY_MODES)}, "
                             f"got {self.mode!r}")
        if self.pin and self.name != "split":
            raise ValueError("--pin applies to the split policy only")
        if not self.hold > 0:
            raise ValueError(f"hold must be positive, got {self.hold}")
        if self.entropy_set not in ENTROPY_SETS:
            raise ValueError(f"entropy set must be one of {', '.join(ENTROPY_SETS)}, "
                             f"got {self.entropy_set!r}")

    @property
    def uses_ecn(self) -> bool:
        """Needs ECN-capable data packets and the per-packet CE echo."""
        return self.name in ("reps", "ecn-adaptive")

    def entropies(self, qps: int = 1) -> int:
        if self.n is not None:
            return self.n
        return qps if self.name == "single" else DEFAULT_N[self.name]

    @property
    def label(self) -> str:
        """What the results record, e.g. ``split(4,pin)``, ``entropy-spray(8,random)``."""
        if self.name == "single" and self.n is None:
            return "single"
        parts = [str(self.n if self.n is not None else DEFAULT_N[self.name])]
        if self.pin:
            parts.append("pin")
        if self.name == "entropy-spray" and self.mode != "rr":
            parts.append(self.mode)
        if self.name == "ecn-adaptive":
            parts.append(f"hold={self.hold * 1e6:g}us")
        if self.name != "single" and not self.pin and self.entropy_set != "random":
            parts.append(self.entropy_set)
        return f"{self.name}({','.join(parts)})"

    def flow_rng(self, job: int, rank: int, flow: int) -> random.Random:
        return random.Random(zlib.crc32(struct.pack("!IHHI", self.seed, job, rank, flow)))

    def ports(self, job: int, rank: int, flow: int, qps: int = 1) -> list[int]:
        """The flow's unpinned entropy set: ``single`` (and ``entropy_set="qp"``) the agent's
        QP ports entropy_port(QP 0..n-1); otherwise n distinct random dynamic ports."""
        n = self.entropies(qps)
        if self.name == "single" or self.entropy_set == "qp":
            return [entropy_port(job, rank, flow, q) for q in range(n)]
        rng = self.flow_rng(job, rank, flow ^ 0x5EED)
        return rng.sample(_DYNAMIC_PORTS, min(n, len(_DYNAMIC_PORTS)))

    def make(self, ports: Sequence[int], npkts: int, job: int = 0, rank: int = 0,
             flow: int = 0) -> PathPolicy:
        """The per-flow policy object over ``ports``."""
        if self.name == "reps":
            return Reps(ports, npkts, self.flow_rng(job, rank, flow))
        if self.name == "ecn-adaptive":
            return EcnAdaptive(ports, npkts, self.hold)
        if self.name == "entropy-spray" and self.mode == "random":
            return RandomSpray(ports, npkts, self.flow_rng(job, rank, flow))
        return RoundRobin(ports, npkts)


_TEXT = re.compile(r"^\s*([a-z-]+)\s*(?:\(\s*(\d+)\s*\)|:(\d+))?\s*$")


def parse_policy(text: str, *, pin: bool = False, mode: str = "rr", hold: float = 200e-6,
                 seed: int = 0, entropy_set: str = "random") -> PolicySpec:
    """``single``, ``split(4)`` / ``split:4``, ``entropy-spray(8)``, ``reps``,
    ``ecn-adaptive(8)``; ValueError with the accepted forms otherwise."""
    m = _TEXT.match(text.lower())
    if m is None or m.group(1) not in POLICIES:
        raise ValueError(f"bad path policy {text!r}: use one of {', '.join(POLICIES)}, "
                         f"optionally with a count, e.g. split(4), entropy-spray(8)")
    n = m.group(2) or m.group(3)
    return PolicySpec(m.group(1), int(n) if n else None, pin, mode, hold, seed, entropy_set)
