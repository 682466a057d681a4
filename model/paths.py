"""Which path a packet takes through an ECMP fabric, from the controller's own entries, and the
source ports that pin a split flow's subflows to distinct paths (Ethereal-style).

A host can only assign paths if it predicts the switches' choice exactly. Here that prediction is
the controller's: ``model.routing.compute_fabric_entries`` gives every switch's groups and
scheme (with the per-switch seeds fabric.p4 is programmed with), and each group's
``Scheme.reference`` (model/lb.py) computes the member the P4 program picks. So a host
that knows the FabricSpec computes the same path as the pipeline (tests/traffic check this
against the pipeline packet by packet). Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .entropy import ROCEV2_PORT, entropy_port
from .lb import FlowKey
from .routing import (
    FailedLink,
    compute_fabric_entries,
    destinations,
    next_hops,
    switch_context,
    tiers,
)
from .schemes import DEFAULT_SCHEME, GroupContext, Reference, Scheme
from .spec import FabricSpec, fat_tree, leaf_spine

Hop = tuple[str, int]
"""(switch, egress port) of one packet at one switch."""


class PathError(ValueError):
    """The path cannot be predicted (a non-deterministic scheme, or no route)."""


@dataclass(frozen=True)
class _Choice:
    ports: tuple[int, ...]
    peers: tuple[str, ...]
    ref: Reference | None    # None: a single next hop
    dst_id: int


class PathModel:
    """Paths of UDP packets (proto 17, dport ``dport``) in ``spec`` programmed with ``scheme``
    (a name or controller Scheme; deterministic ones only: ecmp, flowlet with no gaps)."""

    def __init__(self, spec: FabricSpec, scheme: Scheme | str = DEFAULT_SCHEME,
                 failed_links: Iterable[FailedLink] = (), dport: int = ROCEV2_PORT) -> None:
        self.spec = spec
        self.dport = dport
        fe = compute_fabric_entries(spec, scheme, failed_links)
        hops = next_hops(spec, fe.failed_links)
        dst_index = {d: i for i, d in enumerate(destinations(spec))}
        tier_of = tiers(spec)
        self._choice: dict[str, list[tuple[ipaddress.IPv4Network, _Choice]]] = {}
        for name, per in hops.items():
            se = fe[name]
            ctx = switch_context(spec, name, tier_of)
            by_ports = {g.ports: (gid, g) for gid, g in se.groups.items()}
            rows = []
            for d, h in per.items():
                ports = tuple(p for p, _ in h)
                peers = tuple(peer for _, peer in h)
                ref = None
                if len(h) > 1:
                    gid, g = by_ports[ports]
                    ref = se.scheme[gid].reference(
                        GroupContext(gid, g.ports, g.dmacs, (1.0,) * len(g.ports), ctx))
                rows.append((d.network, _Choice(ports, peers, ref, dst_index[d])))
            rows.sort(key=lambda r: -r[0].prefixlen)
            self._choice[name] = rows
        self._host_sw = {h.ip: (h.switch, h.switch_port) for h in spec.hosts.values()}

    def path(self, src_ip: str, dst_ip: str, sport: int) -> list[Hop]:
        """Every (switch, egress port) from the source's edge switch to the destination's
        host port. PathError when a switch's choice cannot be predicted."""
        if src_ip not in self._host_sw or dst_ip not in self._host_sw:
            raise PathError(f"{src_ip} or {dst_ip} is not a host of {self.spec.name}")
        key = FlowKey(int(ipaddress.IPv4Address(src_ip)), int(ipaddress.IPv4Address(dst_ip)),
                      17, sport, self.dport)
        dst = ipaddress.IPv4Address(dst_ip)
        dst_sw, dst_port = self._host_sw[dst_ip]
        sw = self._host_sw[src_ip][0]
        out: list[Hop] = []
        for _ in range(len(self.spec.switches) + 1):
            if sw == dst_sw:
                out.append((sw, dst_port))
                return out
            c = next((c for net, c in self._choice[sw] if dst in net), None)
            if c is None:
                raise PathError(f"{sw} has no route to {dst_ip}")
            k = 0
            if c.ref is not None:
                m = c.ref.predict(key, 0, c.dst_id)
                if m is None:
                    raise PathError(f"{sw}: the scheme's choice is not predictable")
                k = m
            out.append((sw, c.ports[k]))
            sw = c.peers[k]
        raise PathError(f"no loop-free path {src_ip} -> {dst_ip}")

    def choices(self, path: Sequence[Hop]) -> list[int]:
        """How many next hops each switch of ``path`` chose among (1: no choice)."""
        out = []
        for sw, port in path:
            c = next((c for _, c in self._choice[sw] if port in c.ports), None)
            out.append(len(c.ports) if c is not None else 1)
        return out


def pin_ports(model: PathModel, src_ip: str, dst_ip: str, k: int,
              candidates: Iterable[int]) -> list[int]:
    """k source ports whose paths share each multi-way hop as evenly as the fabric allows.

    Greedy over ``candidates`` (in order): accept a port if its path is new and no (switch,
    egress port) where the switch had a choice of c next hops would carry more than
    ceil(k / c) subflows — in a k=4 fat-tree, 4 inter-pod subflows then use both uplinks of
    the edge twice each and all four cores. If the candidates run out, the rest are the ones
    whose paths add least to the busiest hop.
    """
    chosen: list[int] = []
    load: dict[Hop, int] = {}
    paths: set[tuple[Hop, ...]] = set()
    spare: list[tuple[int, list[Hop], list[int]]] = []
    for sport in candidates:
        if len(chosen) == k:
            break
        p = model.path(src_ip, dst_ip, sport)
        ch = model.choices(p)
        ok = tuple(p) not in paths and all(
            c == 1 or load.get(h, 0) < math.ceil(k / c) for h, c in zip(p, ch, strict=True))
        if ok:
            chosen.append(sport)
            paths.add(tuple(p))
            for h in p:
                load[h] = load.get(h, 0) + 1
        else:
            spare.append((sport, p, ch))
    while len(chosen) < k and spare:
        best = min(spare, key=lambda s: max((load.get(h, 0) for h, c in zip(s[1], s[2],
                                                                           strict=True)
                                             if c > 1), default=0))
        spare.remove(best)
        chosen.append(best[0])
        for h in best[1]:
            load[h] = load.get(h, 0) + 1
    return chosen


def pinned_flow_ports(model: PathModel, job: int, rank: int, flow: int, src_ip: str,
                      dst_ip: str, k: int, search: int = 256) -> list[int]:
    """The pinned ports of one flow, searched among its entropy_port(job, rank, flow, q) for
    q < ``search`` (so a host derives them alone, deterministically)."""
    return pin_ports(model, src_ip, dst_ip, k,
                     (entropy_port(job, rank, flow, q) for q in range(search)))


def spec_from_text(text: str) -> FabricSpec:
    """``fattree:K[:BW]`` or ``leafspine:LEAVES:SPINES:HOSTS_PER_LEAF[:UPLINKS[:BW]]``: the
    fabric a host pins paths in (traffic.run --fabric). ValueError on anything else."""
    kind, _, rest = text.partition(":")
    try:
        nums = [float(x) for x in rest.split(":")] if rest else []
        if kind == "fattree" and 1 <= len(nums) <= 2:
            return fat_tree(int(nums[0]), nums[1] if len(nums) > 1 else None)
        if kind == "leafspine" and 3 <= len(nums) <= 5:
            return leaf_spine(int(nums[0]), int(nums[1]), int(nums[2]),
                              int(nums[3]) if len(nums) > 3 else 1,
                              nums[4] if len(nums) > 4 else None)
    except ValueError:
        pass
    raise ValueError(f"bad fabric {text!r}: use fattree:K[:BW] or "
                     "leafspine:LEAVES:SPINES:HOSTS_PER_LEAF[:UPLINKS[:BW]]")
