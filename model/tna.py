"""The ``tofino`` target: fabric.p4's controller entries as p4src/tna/fabric.p4 takes them.

The TNA program keeps fabric.p4's table, action, register and counter names; what it cannot do
on a Tofino pipeline it does differently (p4src/README.md, "Tofino port"), and
:data:`DIFFERENCES` lists every resulting difference of the controller contract. This module
turns the neutral :class:`~model.entries.Entry` values that routing and the schemes compute for
one switch into what the TNA program needs, so one computation drives both programs:

* ECMP and flowlet groups become a P4Runtime action-profile group of ``set_member`` members (a
  member's weight = how many ``lb_member`` indexes it had) and one ``lb_select`` entry;
* Whack-a-Mole's ball ranges become ``m`` exact ``(group, j mod m)`` entries with the shuffle
  ``(a + b·j) mod m`` and the bit reversal folded in (Tofino cannot multiply by a run-time b);
* random spraying becomes a uniform draw over ``2**RANDOM_LOG2_M`` slots through the same table;
* flowlet timeouts go from µs to ns, and the egress tables' key is TNA's egress port.

``tests/p4src/test_tna_contract.py`` holds DIFFERENCES against both programs, and
``tests/p4src/test_tna_entries.py`` checks every entity this module emits against the TNA
program's P4Info for every scheme on a k=4 fat-tree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from p4switch import ExactMatch, RangeMatch

from . import lb as lb_model
from .entries import (
    ECN_CONFIG,
    IPV4_LPM,
    K_EGRESS,
    K_GROUP,
    K_MEMBER,
    LB_GROUP,
    LB_MEMBER,
    PORT_SMAC,
    WAM_SLOT,
    Entry,
    EntryDiff,
    Match,
    diff_entries,
)
from .routing import FabricEntries

# ---- the TNA program's own names and sizes ---------------------------------------------------
LB_SELECT = "MyIngress.lb_select"
LB_PROFILE = "MyIngress.lb_profile"
LB_SELECTOR = "MyIngress.lb_selector"
K_WAM_J = "meta.lb.wam_j"
K_EGRESS_TNA = "eg_intr_md.egress_port"
WAM_SLOT_SIZE = 65536
"""Exact (group, j mod m) entries of the TNA ``wam_slot_to_member``, summed over groups."""
RANDOM_LOG2_M = 8
"""Random spraying draws one of 2**8 slots: a member's share is within 1/256 of 1/n."""
NS_PER_US = 1000
TIMEOUT_NS_MAX = (1 << 32) - 1

CELL_BYTES = {"tofino": 80, "tofino2": 176}
"""Bytes of one queue-depth unit: a Tofino's ``deq_qdepth`` counts buffer cells, not packets."""
MTU_FRAME_BYTES = 1518
ECN_STEP = "MyEgress.set_ecn_threshold"

SET_MEMBER = "MyIngress.set_member"
WAM_SET_MEMBER = "MyIngress.wam_set_member"
ECN_RAMP = "MyEgress.set_ecn_ramp"


@dataclass(frozen=True)
class ContractDifference:
    """One way the TNA program's contract differs from fabric.p4's, and what the controller
    does about it. ``v1model``/``tna`` are rendered as tests/p4src/p4contract.py renders them."""

    kind: str
    name: str
    v1model: str
    tna: str
    handling: str


DIFFERENCES: tuple[ContractDifference, ...] = (
    ContractDifference(
        "action", "MyIngress.lb_ecmp", "n_members:16, seed:16", "seed:16",
        "members go into an action-profile group; the selector hashes seed and the 5-tuple"),
    ContractDifference(
        "action", "MyIngress.lb_flowlet", "n_members:16, seed:16, timeout_us:32",
        "seed:16, timeout_ns:32",
        "as lb_ecmp; timeout_ns = 1000 * timeout_us (Tofino timestamps are ns)"),
    ContractDifference(
        "action", "MyIngress.lb_random", "n_members:16", "mask:16",
        "mask = 2**RANDOM_LOG2_M - 1; the slot table maps the draw to members by equal balls"),
    ContractDifference(
        "action", "MyIngress.lb_wam", "log2_m:8, a:16, b:16", "mask:16",
        "mask = m - 1; a, b and the bit reversal are folded into the m slot-table entries"),
    ContractDifference(
        "table-keys", "MyIngress.wam_slot_to_member",
        "meta.lb.group_id:exact:16, meta.lb.wam_slot:range:16",
        "meta.lb.group_id:exact:16, meta.lb.wam_j:exact:16",
        "one exact entry per counter value j mod m instead of one range per member"),
    ContractDifference(
        "table-size", "MyIngress.wam_slot_to_member", "16384", "65536",
        "m entries per group (256 at the default log2_m = 8) instead of one per member"),
    ContractDifference(
        "table", "MyIngress.lb_select", "absent", "present",
        "one entry per ECMP/flowlet group, pointing at its action-profile group"),
    ContractDifference(
        "action-profile", "MyIngress.lb_profile", "absent", "16384",
        "the selector's member store; P4Runtime names the table's implementation instead"),
    ContractDifference(
        "action-profile", "MyIngress.lb_selector", "absent", "16384",
        "members (id = group * 64 + member) and one group per ECMP/flowlet LB group (same id)"),
    ContractDifference(
        "register", "MyIngress.flowlet_last_ts", "bit<48> x 4096", "bit<32> x 4096",
        "ns, wraps every 4.29 s: a gap of k * 4.29 s + d looks like d (harmless for LB)"),
    ContractDifference(
        "table-keys", "MyEgress.port_smac", "standard_metadata.egress_port:exact:9",
        "eg_intr_md.egress_port:exact:9", "key renamed"),
    ContractDifference(
        "action", "MyEgress.set_ecn_ramp", "kmin:19, kmax:19", "kmin:19, kmax:19, mask:19",
        "Tofino draws from a power-of-two range: mask = 2**ceil(log2(kmax - kmin)) - 1 and "
        "kmax is raised to kmin + mask + 1 (the ramp is as steep or less)"),
    ContractDifference(
        "table-keys", "MyEgress.ecn_config", "standard_metadata.egress_port:exact:9",
        "eg_intr_md.egress_port:exact:9", "key renamed"),
)


# ---- what the tofino target writes -----------------------------------------------------------
@dataclass(frozen=True)
class ProfileMember:
    """A P4Runtime ActionProfileMember of ``profile``: the action profile the selector table
    names as its implementation, which holds members and groups alike (P4Runtime spec)."""

    member_id: int
    action: str
    params: tuple[tuple[str, int], ...]
    profile: str = LB_SELECTOR


@dataclass(frozen=True)
class ProfileGroup:
    """A P4Runtime ActionProfileGroup: ``members`` are (member id, weight)."""

    group_id: int
    members: tuple[tuple[int, int], ...]
    max_size: int = lb_model.LB_MAX_MEMBERS
    profile: str = LB_SELECTOR


@dataclass(frozen=True)
class SelectorEntry:
    """A table entry of an action-selector table: its action is a group."""

    table: str
    match: tuple[tuple[str, Match], ...]
    group_id: int


@dataclass
class TnaSwitchEntries:
    switch: str
    entries: list[Entry] = field(default_factory=list)
    members: list[ProfileMember] = field(default_factory=list)
    groups: list[ProfileGroup] = field(default_factory=list)
    selector_entries: list[SelectorEntry] = field(default_factory=list)

    def __len__(self) -> int:
        return (len(self.entries) + len(self.members) + len(self.groups)
                + len(self.selector_entries))


def member_id(group_id: int, member: int) -> int:
    return group_id * lb_model.LB_MAX_MEMBERS + member


def _member_weights(indexes: dict[int, tuple[int, int]], n: int
                    ) -> list[tuple[tuple[int, int], int]]:
    """(port, dmac) -> how many of the lb_member indexes 0..n-1 name it, in first-index order."""
    weights: dict[tuple[int, int], int] = {}
    for idx in range(n):
        if idx not in indexes:
            raise ValueError(f"lb_member index {idx} missing below n_members = {n}")
        weights[indexes[idx]] = weights.get(indexes[idx], 0) + 1
    return list(weights.items())


def _slot_entries(group_id: int, members: list[int]) -> list[Entry]:
    """Exact ``(group, j)`` -> ``wam_set_member(members[j])`` for j = 0..m-1 (-1: no entry)."""
    return [Entry.make(WAM_SLOT, {K_GROUP: ExactMatch(group_id), K_WAM_J: ExactMatch(j)},
                       WAM_SET_MEMBER, {"member_idx": k})
            for j, k in enumerate(members) if k >= 0]


def wam_slot_members(log2_m: int, a: int, b: int,
                     ranges: Iterable[tuple[int, int, int]]) -> list[int]:
    """Member of each counter value j mod m as fabric.p4 picks it: slot = bitreverse_l((a + b·j)
    mod m), then the ball range holding the slot (-1 where none does: the P4 drops)."""
    rs = list(ranges)
    out = []
    for j in range(1 << log2_m):
        slot = lb_model.wam_slot(j, log2_m, a, b)
        out.append(next((k for lo, hi, k in rs if lo <= slot <= hi), -1))
    return out


def random_slot_members(n: int, log2_m: int = RANDOM_LOG2_M) -> list[int]:
    """Equal balls of 2**log2_m slots over lb_member indexes 0..n-1, in contiguous runs."""
    if n == 0:
        return []
    balls = lb_model.balls_from_weights([1.0] * n, 1 << log2_m)
    return [k for k, c in enumerate(balls) for _ in range(c)]


PORT_ACTIONS = ("MyIngress.set_nhop", SET_MEMBER)
"""The actions whose ``port`` parameter is a switch port (mapped by ``port_map``)."""


def map_ports(entries: Iterable[Entry], port_map: Mapping[int, int]) -> list[Entry]:
    """The entries with the fabric spec's port numbers replaced by the switch's device ports
    (``dev_port`` on a Tofino: front-panel 1/0 is not port 1). ValueError for an unmapped port."""
    def dev(port: int) -> int:
        try:
            return port_map[port]
        except KeyError:
            raise ValueError(f"port {port} has no device port in the port map") from None

    out = []
    for e in entries:
        match = {k: ExactMatch(dev(v.value)) if k == K_EGRESS and isinstance(v, ExactMatch)
                 else v for k, v in e.match}
        params = e.params_dict
        if e.action in PORT_ACTIONS:
            params["port"] = dev(params["port"])
        out.append(Entry.make(e.table, match, e.action, params, e.priority))
    return out


def ecn_ramp_params(kmin: int, kmax: int) -> dict[str, int]:
    """The TNA ``set_ecn_ramp`` parameters for fabric.p4's (K_min, K_max): the span rounded up
    to a power of two (Tofino's Random is uniform over one)."""
    mask = (1 << max(kmax - kmin - 1, 0).bit_length()) - 1
    if kmin + mask + 1 >= 1 << 19:
        raise ValueError(f"ECN ramp ({kmin}, {kmax}): K_max rounds past the TNA's 19 bits")
    return {"kmin": kmin, "kmax": kmin + mask + 1, "mask": mask}


def cells_per_packet(chip: str = "tofino", frame_bytes: int = MTU_FRAME_BYTES) -> int:
    """Queue-depth cells one ``frame_bytes`` frame fills on ``chip`` (19 for a 1518-byte frame
    on Tofino 1, 9 on Tofino 2): the factor between fabric.p4's packets and a Tofino's cells."""
    try:
        cell = CELL_BYTES[chip]
    except KeyError:
        raise ValueError(f"unknown chip {chip!r} (choose from {', '.join(CELL_BYTES)})") from None
    return -(-frame_bytes // cell)


def _scaled_ecn(action: str, params: dict[str, int], scale: int) -> dict[str, int]:
    """ECN thresholds from packets into queue-depth cells (``scale`` cells a packet)."""
    if action not in (ECN_STEP, ECN_RAMP) or scale == 1:
        return params
    out = {k: v * scale for k, v in params.items()}
    if max(out.values()) >= 1 << 19:
        raise ValueError(f"ECN threshold {params} x {scale} cells a packet does not fit the "
                         f"TNA's 19 bits")
    return out


def tna_entries(entries: Iterable[Entry], switch: str = "sw",
                port_map: Mapping[int, int] | None = None, qdepth_scale: int = 1
                ) -> TnaSwitchEntries:
    """One switch's fabric.p4 entries, as the TNA program takes them; ``port_map`` (spec port ->
    device port) renumbers ports for a real switch; ``qdepth_scale`` multiplies the ECN
    thresholds (packets in fabric.p4) into what the switch's queue depth counts
    (:func:`cells_per_packet` on a Tofino). ValueError (one line) for an entry the TNA contract
    has no place for."""
    entries = map_ports(entries, port_map) if port_map is not None else list(entries)
    members_of: dict[int, dict[int, tuple[int, int]]] = {}
    ranges_of: dict[int, list[tuple[int, int, int]]] = {}
    for e in entries:
        if e.table == LB_MEMBER:
            m = e.match_dict
            gid, idx = m[K_GROUP], m[K_MEMBER]
            assert isinstance(gid, ExactMatch) and isinstance(idx, ExactMatch)
            p = e.params_dict
            members_of.setdefault(gid.value, {})[idx.value] = (p["port"], p["dmac"])
        elif e.table == WAM_SLOT:
            m = e.match_dict
            gid, rng = m[K_GROUP], next(v for v in m.values() if isinstance(v, RangeMatch))
            assert isinstance(gid, ExactMatch) and isinstance(rng, RangeMatch)
            ranges_of.setdefault(gid.value, []).append(
                (rng.low, rng.high, e.params_dict["member_idx"]))

    out = TnaSwitchEntries(switch)
    selected: set[int] = set()  # groups whose members went into the action profile
    for e in entries:
        if e.table == IPV4_LPM:
            out.entries.append(e)
        elif e.table in (PORT_SMAC, ECN_CONFIG):
            match = {K_EGRESS_TNA if k == K_EGRESS else k: v for k, v in e.match}
            params = _scaled_ecn(e.action, e.params_dict, qdepth_scale)
            if e.action == ECN_RAMP:
                params = ecn_ramp_params(params["kmin"], params["kmax"])
            out.entries.append(Entry.make(e.table, match, e.action, params, e.priority))
        elif e.table == LB_GROUP:
            gid_m = e.match_dict[K_GROUP]
            assert isinstance(gid_m, ExactMatch)
            _group(out, gid_m.value, e, members_of.get(gid_m.value, {}),
                   ranges_of.get(gid_m.value, []), selected)
        elif e.table in (LB_MEMBER, WAM_SLOT):
            continue  # placed per group below / folded into the slot table
        else:
            raise ValueError(f"switch {switch}: table {e.table} has no place in the TNA program")
    for group, indexes in sorted(members_of.items()):
        if group in selected:
            continue
        for i, (port, dmac) in sorted(indexes.items()):
            out.entries.append(Entry.make(LB_MEMBER, {K_GROUP: ExactMatch(group),
                                                      K_MEMBER: ExactMatch(i)},
                                          SET_MEMBER, {"port": port, "dmac": dmac}))
    n_slots = sum(1 for e in out.entries if e.table == WAM_SLOT)
    if n_slots > WAM_SLOT_SIZE:
        raise ValueError(f"switch {switch}: {n_slots} slot-table entries exceed the TNA "
                         f"wam_slot_to_member size {WAM_SLOT_SIZE} (lower log2_m)")
    return out


def _group(out: TnaSwitchEntries, gid: int, e: Entry, indexes: dict[int, tuple[int, int]],
           ranges: list[tuple[int, int, int]], selected: set[int]) -> None:
    p = e.params_dict
    key = {K_GROUP: ExactMatch(gid)}
    if e.action in ("MyIngress.lb_ecmp", "MyIngress.lb_flowlet"):
        if e.action == "MyIngress.lb_ecmp":
            out.entries.append(Entry.make(LB_GROUP, key, e.action, {"seed": p["seed"]}))
        else:
            ns = p["timeout_us"] * NS_PER_US
            if ns > TIMEOUT_NS_MAX:
                raise ValueError(f"group {gid}: flowlet timeout {p['timeout_us']} us exceeds "
                                 f"the TNA program's 32-bit ns ({TIMEOUT_NS_MAX // NS_PER_US} us)")
            out.entries.append(Entry.make(LB_GROUP, key, e.action,
                                          {"seed": p["seed"], "timeout_ns": ns}))
        selected.add(gid)
        weights = _member_weights(indexes, p["n_members"])
        ids = []
        for k, ((port, dmac), w) in enumerate(weights):
            mid = member_id(gid, k)
            out.members.append(ProfileMember(mid, SET_MEMBER, (("dmac", dmac), ("port", port))))
            ids.append((mid, w))
        if ids:  # an empty group has no lb_select entry: lb_member_miss drops (reason 9)
            out.groups.append(ProfileGroup(gid, tuple(ids)))
            out.selector_entries.append(SelectorEntry(LB_SELECT, tuple(key.items()), gid))
    elif e.action == "MyIngress.lb_random":
        slots = random_slot_members(p["n_members"])
        mask = (1 << RANDOM_LOG2_M) - 1 if slots else 0
        out.entries.append(Entry.make(LB_GROUP, key, e.action, {"mask": mask}))
        out.entries.extend(_slot_entries(gid, slots))
    elif e.action == "MyIngress.lb_rotate":
        out.entries.append(e)
    elif e.action == "MyIngress.lb_wam":
        log2_m = p["log2_m"]
        out.entries.append(Entry.make(LB_GROUP, key, e.action, {"mask": (1 << log2_m) - 1}))
        out.entries.extend(_slot_entries(gid, wam_slot_members(log2_m, p["a"], p["b"], ranges)))
    else:
        raise ValueError(f"group {gid}: action {e.action} has no TNA counterpart")


def tna_fabric_entries(fabric: FabricEntries,
                       port_maps: Mapping[str, Mapping[int, int]] | None = None,
                       qdepth_scale: int = 1) -> dict[str, TnaSwitchEntries]:
    """Every switch of a fabric (``routing.compute_fabric_entries``' result) for the TNA program;
    ``port_maps`` gives a switch's spec port -> device port map (switches without one keep the
    spec's numbers); ``qdepth_scale`` as in :func:`tna_entries`."""
    maps = port_maps or {}
    return {name: tna_entries(se.entries, name, maps.get(name), qdepth_scale)
            for name, se in fabric.switches.items()}


# ---- changes at run time (failover, re-weighting, a scheme change) ----------------------------
T = TypeVar("T")


@dataclass(frozen=True)
class TnaDiff:
    """What turns one switch's TNA state into another, per entity kind: (inserts, modifies,
    deletes). :meth:`ordered` is an order a target accepts, so nothing ever points at what is
    not (or no longer) there."""

    entries: EntryDiff
    members: tuple[tuple[ProfileMember, ...], tuple[ProfileMember, ...], tuple[ProfileMember, ...]]
    groups: tuple[tuple[ProfileGroup, ...], tuple[ProfileGroup, ...], tuple[ProfileGroup, ...]]
    selector_entries: tuple[tuple[SelectorEntry, ...], tuple[SelectorEntry, ...],
                            tuple[SelectorEntry, ...]]

    def __len__(self) -> int:
        return (len(self.entries) + sum(len(x) for x in self.members)
                + sum(len(x) for x in self.groups) + sum(len(x) for x in self.selector_entries))

    def ordered(self) -> list[tuple[str, Entry | ProfileMember | ProfileGroup | SelectorEntry]]:
        """Members in, groups in/changed, entries and selector entries in/changed/out, groups
        out, members out."""
        m_ins, m_mod, m_del = self.members
        g_ins, g_mod, g_del = self.groups
        s_ins, s_mod, s_del = self.selector_entries
        out: list[tuple[str, Entry | ProfileMember | ProfileGroup | SelectorEntry]] = []
        out += [("insert", m) for m in m_ins] + [("modify", m) for m in m_mod]
        out += [("insert", g) for g in g_ins] + [("modify", g) for g in g_mod]
        out += [("insert", s) for s in s_ins] + [("modify", s) for s in s_mod]
        out += list(self.entries.ordered())
        out += [("delete", s) for s in s_del]
        out += [("delete", g) for g in g_del] + [("delete", m) for m in m_del]
        return out


def _diff_by(old: Iterable[T], new: Iterable[T], key: Callable[[T], object]
                ) -> tuple[tuple[T, ...], tuple[T, ...], tuple[T, ...]]:
    before = {key(x): x for x in old}
    after = {key(x): x for x in new}
    return (tuple(x for k, x in after.items() if k not in before),
            tuple(x for k, x in after.items() if k in before and before[k] != x),
            tuple(x for k, x in before.items() if k not in after))


def diff_tna(old: TnaSwitchEntries, new: TnaSwitchEntries) -> TnaDiff:
    """The updates from ``old`` to ``new`` (e.g. both from ``tna_entries`` before and after a
    link failure: the group loses a member, the member is deleted after the group changed)."""
    return TnaDiff(diff_entries(old.entries, new.entries),
                   _diff_by(old.members, new.members, lambda m: (m.profile, m.member_id)),
                   _diff_by(old.groups, new.groups, lambda g: (g.profile, g.group_id)),
                   _diff_by(old.selector_entries, new.selector_entries,
                            lambda s: (s.table, s.match)))
