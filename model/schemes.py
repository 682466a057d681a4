"""The one registry of load-balancing schemes of p4src/fabric.p4.

A scheme owns everything the controller contract (p4src/README.md) says about it: its
``lb_group`` action and parameters, how members map to ``lb_member`` indexes (weighted ECMP
replicates a port), its extra entries (Whack-a-Mole's ball ranges), its per-switch seeds, and its
reference selection from ``model/lb.py``, and its properties the rest of the lab asks about
(``sprays``, ``comparable``, ``baseline``, ``control_loop``, ``time_params``, ``gap_param``,
``first_hop_only``): experiments, reports, the session and dilation read them here instead of
keeping lists of names. Tests, the benchmark, the demo, the routing and the controller all
install groups through here, so adding a scheme is one P4 action, one class below and one
parametrised test case (docs/adding-a-scheme.md walks through it; tests/architecture/
test_scheme_places.py fails on a place missed).
"""

from __future__ import annotations

import random as _random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from p4switch import ExactMatch, RangeMatch

from . import lb as lb_model
from .entries import K_GROUP, K_MEMBER, K_SLOT, LB_GROUP, LB_MEMBER, WAM_SLOT, Entry

MAX_U16 = 0xFFFF


@dataclass(frozen=True)
class SwitchContext:
    """What a scheme may derive per-switch parameters from. ``tier`` is the switch's hop
    distance from the nearest host-facing switch (edge/leaf 0, agg/spine 1, core 2)."""

    name: str = "sw"
    device_id: int = 1
    tier: int = 0


@dataclass(frozen=True)
class GroupContext:
    """One LB group of one switch: member ``k`` leaves on ``ports[k]`` towards ``dmacs[k]``."""

    group_id: int
    ports: tuple[int, ...]
    dmacs: tuple[int, ...]
    weights: tuple[float, ...] = ()
    switch: SwitchContext = field(default_factory=SwitchContext)

    def __post_init__(self) -> None:
        if len(self.ports) != len(self.dmacs):
            raise ValueError("a group needs one next-hop MAC per member port")
        if not self.weights:
            object.__setattr__(self, "weights", (1.0,) * len(self.ports))
        if len(self.weights) != len(self.ports):
            raise ValueError(f"group {self.group_id}: {len(self.weights)} weights for "
                             f"{len(self.ports)} members")
        if not 0 <= self.group_id < lb_model.LB_MAX_GROUPS:
            raise ValueError(f"group id {self.group_id} not in 0..{lb_model.LB_MAX_GROUPS - 1}")


def _check_u16(what: str, v: int | None) -> None:
    if v is not None and not 0 <= v <= MAX_U16:
        raise ValueError(f"{what} must be a 16-bit value, got {v}")


def _mix(device_id: int, salt: int) -> int:
    """A 16-bit value that differs between switches (Knuth's multiplicative hash)."""
    return ((device_id * 2654435761 + salt) >> 8) & MAX_U16


class Reference:
    """The Python model of one installed group: ``predict`` returns the ``lb_member`` index the
    P4 picks for a packet, or None when the choice is random (then only the range is known)."""

    def __init__(self, n_slots: int) -> None:
        self.n_slots = n_slots

    def predict(self, flow: lb_model.FlowKey, now_us: int, dst_id: int) -> int | None:
        raise NotImplementedError


class Scheme(ABC):
    """One load-balancing scheme; instances are immutable parameter sets."""

    name: ClassVar[str]
    action: ClassVar[str]
    """Fully-qualified ``lb_group`` action."""
    sprays: ClassVar[bool] = False
    """Chooses a member per packet (a flow's packets take many paths), not per flow."""
    comparable: ClassVar[bool] = True
    """Its member counters are a function of the multiset of frames the hosts sent, so the
    emulated and the simulated fabric must count the same (not so where the choice depends on
    time or on the switch's random stream)."""
    first_hop_only: ClassVar[bool] = False
    """Comparable at the first hop only: the choice depends on the interleaving of packets of
    different destinations, which decides what the groups behind the first hop receive."""
    baseline: ClassVar[bool] = False
    """The scheme the others are measured against in reports (exactly one)."""
    control_loop: ClassVar[str | None] = None
    """The controller loop (``controller.loops.ControlLoop`` value) the scheme needs running
    wherever a group uses it."""
    time_params: ClassVar[tuple[str, ...]] = ()
    """Parameters that are durations in fabric time: dilation multiplies them by the TDF (their
    names end in ``_us``, which is what ``model.dilation`` scales)."""
    gap_param: ClassVar[str | None] = None
    """The parameter that takes the fabric's flowlet gap when an experiment states none."""

    @abstractmethod
    def params(self, n_slots: int, sw: SwitchContext) -> dict[str, int]:
        """The ``lb_group`` action parameters for a group of ``n_slots`` lb_member indexes."""

    @abstractmethod
    def reference(self, group: GroupContext) -> Reference:
        """The model of the member choice, fresh (registers at reset)."""

    def member_slots(self, weights: Sequence[float]) -> list[int]:
        """lb_member index -> member: weighted ECMP installs a member under several indexes
        (equal weights: one each; else integer weights as given, fractional ones split 4n
        indexes, at most 64)."""
        n = len(weights)
        if n == 0 or len(set(weights)) == 1:
            return list(range(n))
        if all(float(w).is_integer() for w in weights) and sum(weights) <= lb_model.LB_MAX_MEMBERS:
            counts = [int(w) for w in weights]
        else:
            counts = lb_model.balls_from_weights(weights, min(4 * n, lb_model.LB_MAX_MEMBERS))
        return [k for k, c in enumerate(counts) for _ in range(c)]

    def group_entry(self, group_id: int, n_slots: int, sw: SwitchContext) -> Entry:
        return Entry.make(LB_GROUP, {K_GROUP: ExactMatch(group_id)}, self.action,
                          self.params(n_slots, sw))

    def extra_entries(self, group: GroupContext) -> list[Entry]:
        return []

    def entries(self, group: GroupContext) -> list[Entry]:
        """Everything one group needs: lb_group, lb_member per index, extra entries."""
        slots = self.member_slots(group.weights)
        if len(slots) > lb_model.LB_MAX_MEMBERS:
            raise ValueError(f"group {group.group_id}: {len(slots)} member indexes "
                             f"(max {lb_model.LB_MAX_MEMBERS})")
        out = [self.group_entry(group.group_id, len(slots), group.switch)]
        out += [member_entry(group.group_id, idx, group.ports[k], group.dmacs[k])
                for idx, k in enumerate(slots)]
        return out + self.extra_entries(group)

    def __str__(self) -> str:
        return self.name


def member_entry(group_id: int, idx: int, port: int, dmac: int) -> Entry:
    return Entry.make(LB_MEMBER, {K_GROUP: ExactMatch(group_id), K_MEMBER: ExactMatch(idx)},
                      "MyIngress.set_member", {"port": port, "dmac": dmac})


# ---- hashing schemes -------------------------------------------------------------------------
def tier_seed(sw: SwitchContext) -> int:
    """Adjacent tiers get different seed[1:0] (variants 0/1, the CRC-32 ones): CRC is linear,
    so two switches of one variant relabel the same split and polarise (p4src/README.md)."""
    return (_mix(sw.device_id, 0x51ED) & 0xFFFC) | (sw.tier & 1)


class _HashRef(Reference):
    def __init__(self, n_slots: int, seed: int) -> None:
        super().__init__(n_slots)
        self.seed = seed

    def predict(self, flow: lb_model.FlowKey, now_us: int, dst_id: int) -> int | None:
        return lb_model.ecmp_member(flow, self.n_slots, self.seed)


@dataclass(frozen=True)
class Ecmp(Scheme):
    """Hash of the 5-tuple; ``seed`` None = per switch by tier (:func:`tier_seed`)."""

    seed: int | None = None
    name: ClassVar[str] = "ecmp"
    action: ClassVar[str] = "MyIngress.lb_ecmp"
    baseline: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _check_u16("seed", self.seed)

    def seed_for(self, sw: SwitchContext) -> int:
        return tier_seed(sw) if self.seed is None else self.seed

    def params(self, n_slots: int, sw: SwitchContext) -> dict[str, int]:
        return {"n_members": n_slots, "seed": self.seed_for(sw)}

    def reference(self, group: GroupContext) -> Reference:
        return _HashRef(len(self.member_slots(group.weights)), self.seed_for(group.switch))


class _FlowletRef(_HashRef):
    def __init__(self, n_slots: int, seed: int, timeout_us: int) -> None:
        super().__init__(n_slots, seed)
        self.timeout_us = timeout_us
        self.state = lb_model.FlowletState()

    def predict(self, flow: lb_model.FlowKey, now_us: int, dst_id: int) -> int | None:
        return lb_model.flowlet_member(flow, now_us, self.n_slots, self.seed, self.timeout_us,
                                       self.state)


@dataclass(frozen=True)
class Flowlet(Scheme):
    """ECMP over (5-tuple, flowlet id); a gap > ``timeout_us`` starts a new flowlet."""

    timeout_us: int = 100
    seed: int | None = None
    name: ClassVar[str] = "flowlet"
    action: ClassVar[str] = "MyIngress.lb_flowlet"
    comparable: ClassVar[bool] = False   # a flowlet's end is a time gap
    time_params: ClassVar[tuple[str, ...]] = ("timeout_us",)
    gap_param: ClassVar[str | None] = "timeout_us"

    def __post_init__(self) -> None:
        _check_u16("seed", self.seed)
        if not 0 <= self.timeout_us < 1 << 32:
            raise ValueError(f"timeout_us must fit 32 bits, got {self.timeout_us}")

    def seed_for(self, sw: SwitchContext) -> int:
        return tier_seed(sw) if self.seed is None else self.seed

    def params(self, n_slots: int, sw: SwitchContext) -> dict[str, int]:
        return {"n_members": n_slots, "seed": self.seed_for(sw), "timeout_us": self.timeout_us}

    def reference(self, group: GroupContext) -> Reference:
        return _FlowletRef(len(self.member_slots(group.weights)), self.seed_for(group.switch),
                           self.timeout_us)


# ---- spraying schemes ------------------------------------------------------------------------
class _RandomRef(Reference):
    def predict(self, flow: lb_model.FlowKey, now_us: int, dst_id: int) -> int | None:
        return None


@dataclass(frozen=True)
class RandomSpray(Scheme):
    """Uniform random member per packet (the switch's generator: unpredictable)."""

    name: ClassVar[str] = "random"
    action: ClassVar[str] = "MyIngress.lb_random"
    sprays: ClassVar[bool] = True
    comparable: ClassVar[bool] = False   # the switch's random stream

    def params(self, n_slots: int, sw: SwitchContext) -> dict[str, int]:
        return {"n_members": n_slots}

    def reference(self, group: GroupContext) -> Reference:
        return _RandomRef(len(self.member_slots(group.weights)))

    @staticmethod
    def sample(n_slots: int, rng: _random.Random) -> int:
        """What a model run may use in place of the switch's generator."""
        return lb_model.random_member(n_slots, rng)


class _RotateRef(Reference):
    def __init__(self, n_slots: int) -> None:
        super().__init__(n_slots)
        self.state = lb_model.RotationState()

    def predict(self, flow: lb_model.FlowKey, now_us: int, dst_id: int) -> int | None:
        return lb_model.rotation_member(dst_id, self.n_slots, self.state)


@dataclass(frozen=True)
class DstRotation(Scheme):
    """Per-(group, destination) counter rotating over the members (Ofan-like)."""

    name: ClassVar[str] = "rotate"
    action: ClassVar[str] = "MyIngress.lb_rotate"
    sprays: ClassVar[bool] = True

    def params(self, n_slots: int, sw: SwitchContext) -> dict[str, int]:
        return {"n_members": n_slots}

    def reference(self, group: GroupContext) -> Reference:
        return _RotateRef(len(self.member_slots(group.weights)))


class _WamRef(Reference):
    def __init__(self, wam: lb_model.WamGroup) -> None:
        super().__init__(len(wam.balls))
        self.wam = wam

    def predict(self, flow: lb_model.FlowKey, now_us: int, dst_id: int) -> int | None:
        return self.wam.next_member(dst_id)


@dataclass(frozen=True)
class WhackAMole(Scheme):
    """Deterministic spraying over m = 2^log2_m balls split by weight (Luby & Byers 2025);
    ``a``/``b`` None = per switch (b odd) so switches do not move in lock-step."""

    log2_m: int = 8
    a: int | None = None
    b: int | None = None
    name: ClassVar[str] = "wam"
    action: ClassVar[str] = "MyIngress.lb_wam"
    sprays: ClassVar[bool] = True
    first_hop_only: ClassVar[bool] = True   # one counter per group, shared by destinations
    control_loop: ClassVar[str | None] = "wam"

    def __post_init__(self) -> None:
        if not 0 <= self.log2_m <= lb_model.WAM_L_MAX:
            raise ValueError(f"log2_m must be in 0..{lb_model.WAM_L_MAX}, got {self.log2_m}")
        _check_u16("a", self.a)
        _check_u16("b", self.b)
        if self.b is not None and self.b % 2 == 0:
            raise ValueError(f"b must be odd (it permutes the residue classes), got {self.b}")

    @property
    def m(self) -> int:
        return 1 << self.log2_m

    def shuffle(self, sw: SwitchContext) -> tuple[int, int]:
        a = _mix(sw.device_id, 0xA11) if self.a is None else self.a
        b = (_mix(sw.device_id, 0xB0B) | 1) if self.b is None else self.b
        return a, b

    def member_slots(self, weights: Sequence[float]) -> list[int]:
        return list(range(len(weights)))  # the balls carry the weights

    def balls(self, weights: Sequence[float]) -> list[int]:
        return lb_model.balls_from_weights(weights, self.m)

    def params(self, n_slots: int, sw: SwitchContext) -> dict[str, int]:
        a, b = self.shuffle(sw)
        return {"log2_m": self.log2_m, "a": a, "b": b}

    def extra_entries(self, group: GroupContext) -> list[Entry]:
        return wam_range_entries(group.group_id, self.balls(group.weights))

    def reference(self, group: GroupContext) -> Reference:
        a, b = self.shuffle(group.switch)
        return _WamRef(lb_model.WamGroup(self.log2_m, a, b, self.balls(group.weights)))


def wam_range_entries(group_id: int, balls: Sequence[int]) -> list[Entry]:
    """One ``wam_slot_to_member`` range [B_k, B_k + c_k - 1] -> member k per member with balls."""
    return [Entry.make(WAM_SLOT, {K_GROUP: ExactMatch(group_id), K_SLOT: RangeMatch(lo, hi)},
                       "MyIngress.wam_set_member", {"member_idx": k}, priority=1)
            for lo, hi, k in lb_model.ball_ranges(balls)]


SCHEMES: dict[str, type[Scheme]] = {
    cls.name: cls for cls in (Ecmp, Flowlet, RandomSpray, DstRotation, WhackAMole)
}

DEFAULT_SCHEME: str = Ecmp.name
"""The scheme a fabric, a controller, a CLI or a simulation runs when none is named."""
BASELINE_SCHEME: str = next(c.name for c in SCHEMES.values() if c.baseline)
"""The scheme reports measure the others against."""


def scheme_class(name: str | Scheme) -> type[Scheme]:
    """The registered class of a scheme name (or of a Scheme); ValueError for an unknown name."""
    if isinstance(name, Scheme):
        return type(name)
    cls = SCHEMES.get(str(name).strip().lower())
    if cls is None:
        raise ValueError(f"unknown scheme {name!r} (choose from {', '.join(SCHEMES)})")
    return cls


def scheme_from_name(name: str | Scheme, **params: object) -> Scheme:
    """``scheme_from_name("flowlet", timeout_us=200)``; a Scheme passes through unchanged."""
    if isinstance(name, Scheme):
        return name
    cls = scheme_class(name)
    try:
        return cls(**params)
    except TypeError as e:
        raise ValueError(f"scheme {cls.name}: {e}") from None
