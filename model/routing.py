"""Routing: a FabricSpec (minus failed links) -> every switch's table entries. Pure, no I/O.

Per destination (a host subnet of an edge/leaf switch with ``SwitchSpec.subnet``, else a /32 per
host) a switch forwards over every port whose peer switch is one hop closer to the destination's
switch (shortest paths over switch-switch links; parallel links are separate ports). In a
fat-tree that *is* up-down routing: an edge reaches other edges through all k/2 aggregations, an
aggregation reaches other pods through all its k/2 cores, and nothing ever goes down then up.
Each distinct next-hop port set of a switch becomes one LB group (a single port: a direct
``set_nhop``); the edge adds /32 routes to its own hosts; every switch punts the probe address
to its CPU (the controller's link-liveness probes) and rewrites source MACs per port.

Group ids are stable across failures: the groups of the intact fabric are numbered first (by
sorted port set) and a port set that only appears under failures gets the next free id, so a
failure rewrites only what it changes (see ``entries.diff_entries``).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import networkx as nx

from model.spec import FabricSpec, HostSpec, LinkSpec, mac_int
from p4switch import ExactMatch, LpmMatch

from .entries import ECN_CONFIG, IPV4_LPM, K_DST, K_EGRESS, PORT_SMAC, Entry
from .schemes import DEFAULT_SCHEME, GroupContext, Scheme, SwitchContext, scheme_from_name

PROBE_IP = "169.254.255.255"
"""The reserved /32 every switch sends to its CPU: the controller's link probes."""
DEFAULT_ECN_THRESHOLD = 20
"""Packets in the egress queue (of 64) from which ECT packets are CE-marked."""
MAX_GROUPS = 256
MAX_MEMBERS = 64
ROT_SLOTS = 16384

FailedLink = frozenset[str] | tuple[str, int, str, int] | int
"""A failed link: a node pair (every link between them), a LinkSpec.key (one parallel link) or
an index into ``spec.links``."""
GroupKey = tuple[str, int]
"""(switch, group id)."""


@dataclass(frozen=True)
class Destination:
    """A routed prefix and the switch its hosts hang off."""

    prefix: str
    switch: str

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.prefix)


@dataclass(frozen=True)
class Group:
    """One LB group of one switch: member ``k`` is ``ports[k]`` towards ``peers[k]``."""

    switch: str
    group_id: int
    ports: tuple[int, ...]
    peers: tuple[str, ...]
    dmacs: tuple[int, ...]
    destinations: tuple[str, ...]


@dataclass
class SwitchEntries:
    switch: str
    entries: list[Entry] = field(default_factory=list)
    groups: dict[int, Group] = field(default_factory=dict)
    scheme: dict[int, Scheme] = field(default_factory=dict)


@dataclass
class FabricEntries:
    """Per-switch entries plus the groups they form (for counters, set_weights, the WaM loop)."""

    switches: dict[str, SwitchEntries]
    failed_links: frozenset[int] = frozenset()
    """Indexes into ``spec.links`` of the links routed around."""

    def __getitem__(self, switch: str) -> SwitchEntries:
        return self.switches[switch]

    def __iter__(self) -> Iterator[str]:
        return iter(self.switches)

    def total(self) -> int:
        return sum(len(s.entries) for s in self.switches.values())


def _ip_int(ip: str) -> int:
    return int(ipaddress.IPv4Address(ip))


def failed_link_indexes(spec: FabricSpec, failed: Iterable[FailedLink]) -> frozenset[int]:
    """Normalise node pairs / link keys to indexes into ``spec.links`` (unknown ones: KeyError)."""
    out: set[int] = set()
    for f in failed:
        if isinstance(f, int):
            if not 0 <= f < len(spec.links):
                raise KeyError(f"no link index {f} in fabric {spec.name}")
            out.add(f)
            continue
        if isinstance(f, tuple):
            hits = [i for i, lk in enumerate(spec.links)
                    if lk.key == f or (lk.b, lk.b_port, lk.a, lk.a_port) == f]
        else:
            hits = [i for i, lk in enumerate(spec.links) if {lk.a, lk.b} == set(f)]
        if not hits:
            raise KeyError(f"no link {f!r} in fabric {spec.name}")
        out.update(hits)
    return frozenset(out)


def switch_graph(spec: FabricSpec, failed: frozenset[int] = frozenset()) -> nx.MultiGraph:
    """Switches and the switch-switch links that are up."""
    g = nx.MultiGraph()
    g.add_nodes_from(spec.switches)
    for i, lk in enumerate(spec.links):
        if i not in failed and lk.a in spec.switches and lk.b in spec.switches:
            g.add_edge(lk.a, lk.b, key=i, link=lk)
    return g


def tiers(spec: FabricSpec) -> dict[str, int]:
    """Hops from the nearest switch with hosts (edge/leaf 0, agg/spine 1, core 2)."""
    g = switch_graph(spec)
    hosted = {h.switch for h in spec.hosts.values()} or set(spec.switches)
    dist = nx.multi_source_dijkstra_path_length(g, hosted, weight=None)
    return {s: int(dist.get(s, 0)) for s in spec.switches}


def switch_context(spec: FabricSpec, name: str, tier_of: Mapping[str, int] | None = None
                   ) -> SwitchContext:
    tier_of = tier_of if tier_of is not None else tiers(spec)
    return SwitchContext(name, spec.switches[name].device_id, tier_of[name])


def destinations(spec: FabricSpec) -> list[Destination]:
    """Host subnets of edge/leaf switches that declare one; /32 host routes otherwise."""
    out: list[Destination] = []
    seen: set[str] = set()
    for h in spec.hosts.values():
        sw = spec.switches[h.switch]
        if sw.subnet and sw.role in ("edge", "leaf") and \
                ipaddress.IPv4Address(h.ip) in ipaddress.IPv4Network(sw.subnet):
            if sw.subnet not in seen:
                seen.add(sw.subnet)
                out.append(Destination(str(ipaddress.IPv4Network(sw.subnet)), sw.name))
        else:
            out.append(Destination(f"{h.ip}/32", sw.name))
    return out


@functools.lru_cache(maxsize=1 << 16)
def _lpm(prefix: str) -> LpmMatch:
    net = ipaddress.IPv4Network(prefix)
    return LpmMatch(int(net.network_address), net.prefixlen)


def route_nhop(prefix: str, port: int, dmac: int) -> Entry:
    return Entry.make(IPV4_LPM, {K_DST: _lpm(prefix)}, "MyIngress.set_nhop",
                      {"port": port, "dmac": dmac})


def route_group(prefix: str, group_id: int, dst_id: int) -> Entry:
    return Entry.make(IPV4_LPM, {K_DST: _lpm(prefix)}, "MyIngress.set_lb_group",
                      {"group_id": group_id, "dst_id": dst_id})


def route_cpu(prefix: str) -> Entry:
    return Entry.make(IPV4_LPM, {K_DST: _lpm(prefix)}, "MyIngress.send_to_cpu")


def next_hops(spec: FabricSpec, failed: frozenset[int] = frozenset()
              ) -> dict[str, dict[Destination, tuple[tuple[int, str], ...]]]:
    """switch -> destination -> sorted ((port, peer switch), ...) on shortest paths.

    A destination unreachable from a switch (partitioned by failures) is left out for it: its
    packets then miss the route (counted, drop reason 5) rather than loop. Equal hop sets are
    one tuple object (a k=32 fat tree has 650k (switch, destination) pairs and a few thousand
    distinct sets)."""
    g = switch_graph(spec, failed)
    dests = destinations(spec)
    out: dict[str, dict[Destination, tuple[tuple[int, str], ...]]] = {s: {} for s in spec.switches}
    # each switch's (port, peer) over its links that are up, once, as plain tuples
    adj = {s: sorted((e["link"].port_of(s), peer) for peer, edges in g[s].items()
                     for e in edges.values())
           for s in spec.switches}
    same: dict[tuple[tuple[int, str], ...], tuple[tuple[int, str], ...]] = {}
    dist_cache: dict[str, dict[str, int]] = {}
    for d in dests:
        if d.switch not in dist_cache:
            dist_cache[d.switch] = nx.single_source_shortest_path_length(g, d.switch)
        dist = dist_cache[d.switch]
        for s, ds in dist.items():
            if s == d.switch:
                continue
            hops = tuple(h for h in adj[s] if dist.get(h[1], -1) == ds - 1)
            out[s][d] = same.setdefault(hops, hops)
    return out


def _group_ids(spec: FabricSpec, port_sets: Mapping[str, Iterable[tuple[int, ...]]],
               intact: Mapping[str, Mapping[Destination, tuple[tuple[int, str], ...]]]
               | None = None) -> dict[str, dict[tuple[int, ...], int]]:
    """Stable ids: the intact fabric's sets first (sorted), then new sets get the next ids.
    ``intact``: ``next_hops(spec)`` when the caller has it."""
    base = {s: sorted({ps for ps in (tuple(p for p, _ in h) for h in set(per.values()))
                       if len(ps) > 1})
            for s, per in (intact if intact is not None else next_hops(spec)).items()}
    ids: dict[str, dict[tuple[int, ...], int]] = {}
    for s, sets in port_sets.items():
        table = {ps: i + 1 for i, ps in enumerate(base.get(s, []))}
        nxt = len(table) + 1
        for ps in sorted(set(sets)):
            if ps not in table:
                table[ps] = nxt
                nxt += 1
        if nxt - 1 >= MAX_GROUPS:
            raise ValueError(f"switch {s}: {nxt - 1} LB groups (max {MAX_GROUPS - 1})")
        ids[s] = table
    return ids


def _peer_mac(spec: FabricSpec, node: str, port: int) -> int:
    if node in spec.switches:
        return mac_int(spec.switches[node].port_mac(port))
    return mac_int(spec.hosts[node].mac)


EcnMark = int | tuple[int, int]
"""One port's CE marking: a step threshold K, or a ramp (K_min, K_max), in packets."""
EcnThreshold = EcnMark | Callable[[float | None], EcnMark | None] | None


@dataclass(frozen=True)
class EcnRamp:
    """A marking ramp under a threshold: CE with probability (qdepth - kmin) / (K - kmin)
    between ``kmin`` and K, always from K up (fabric.p4's ``set_ecn_ramp``; htsim's
    ``-ecn LOW HIGH``). ``kmax`` is K: packets or a function of a port's rate, as
    ``EcnThreshold``; a port whose K is at most ``kmin`` gets the step at K. A class, not a
    closure, so that configs holding it pickle (split runs, Ray)."""

    kmin: int
    kmax: EcnMark | Callable[[float | None], EcnMark | None]

    def __call__(self, rate_bps: float | None) -> EcnMark | None:
        k = self.kmax(rate_bps) if callable(self.kmax) else self.kmax
        if k is None:
            return None
        high = k[1] if isinstance(k, tuple) else k
        return (min(self.kmin, high), high)


def ecn_entry(port: int, mark: EcnMark) -> Entry:
    """``ecn_config``'s entry for ``port``: the step action when K_min = K_max (the entry a
    step threshold always had), the ramp action otherwise."""
    kmin, kmax = mark if isinstance(mark, tuple) else (mark, mark)
    if not 0 <= kmin <= kmax < 1 << 19:
        raise ValueError(f"ECN marking ({kmin}, {kmax}): need 0 <= K_min <= K_max < 2**19")
    if kmin == kmax:
        return Entry.make(ECN_CONFIG, {K_EGRESS: ExactMatch(port)},
                          "MyEgress.set_ecn_threshold", {"qdepth": kmax})
    return Entry.make(ECN_CONFIG, {K_EGRESS: ExactMatch(port)},
                      "MyEgress.set_ecn_ramp", {"kmin": kmin, "kmax": kmax})


def _port_rate(spec: FabricSpec, switch: str, port: int,
               port_map: Mapping[str, Mapping[int, tuple[str, int]]]) -> float | None:
    """The bits/s of the link on ``switch``'s ``port`` (None: unrated)."""
    peer, peer_port = port_map[switch][port]
    for lk in spec.links_between(switch, peer):
        if (lk.a, lk.a_port) in ((switch, port), (peer, peer_port)):
            return lk.bw_mbps * 1e6 if lk.bw_mbps else None
    return None


def compute_fabric_entries(
    spec: FabricSpec,
    scheme: Scheme | str = DEFAULT_SCHEME,
    failed_links: Iterable[FailedLink] = frozenset(),
    *,
    group_schemes: Mapping[str | GroupKey, Scheme] | None = None,
    weights: Mapping[GroupKey, Mapping[int, float]] | None = None,
    ecn_threshold: EcnThreshold = DEFAULT_ECN_THRESHOLD,
) -> FabricEntries:
    """Every switch's entries for ``scheme``.

    ``group_schemes`` overrides the scheme of a switch (by name) or one group ((switch, id));
    ``weights`` gives per-port member weights of a group ({(switch, id): {port: w}}, default 1;
    ports not in the group are ignored); ``ecn_threshold`` is the CE-marking threshold in
    packets of every port (or a (K_min, K_max) ramp, see ``EcnRamp``), or a function of a port's link rate (bits/s, None: unrated) to it,
    as a congestion control sizes it (traffic.congestion.marking); None, or a function
    returning None for a port, installs no ECN marking there.
    """
    default = scheme_from_name(scheme)
    overrides = group_schemes or {}
    weights = weights or {}
    failed = failed_link_indexes(spec, failed_links)
    hops = next_hops(spec, failed)
    tier_of = tiers(spec)
    ids = _group_ids(spec, {s: {tuple(p for p, _ in h) for h in set(per.values()) if len(h) > 1}
                            for s, per in hops.items()}, None if failed else hops)
    dst_index = {d: i for i, d in enumerate(destinations(spec))}
    if len(dst_index) > ROT_SLOTS:
        raise ValueError(f"{len(dst_index)} destinations exceed the {ROT_SLOTS} rotation slots")
    port_map = {s: spec.ports(s) for s in spec.switches}

    def dmac(switch: str, port: int) -> int:
        peer, peer_port = port_map[switch][port]
        return _peer_mac(spec, peer, peer_port)

    hosts_of: dict[str, list[HostSpec]] = {}
    for host in spec.hosts.values():
        hosts_of.setdefault(host.switch, []).append(host)
    # equal entries of different switches are one object (a route to a pod over the same
    # uplink group is the same on every edge switch): a k=32 fabric has 770k entries
    same: dict[Entry, Entry] = {}
    out: dict[str, SwitchEntries] = {}
    for name, sw in spec.switches.items():
        se = SwitchEntries(name)
        ctx = switch_context(spec, name, tier_of)
        members: dict[int, list[str]] = {}
        for d, h in hops[name].items():
            if len(h) == 1:
                port, peer = h[0]
                se.entries.append(route_nhop(d.prefix, port, dmac(name, port)))
                continue
            gid = ids[name][tuple(p for p, _ in h)]
            members.setdefault(gid, []).append(d.prefix)
            if gid not in se.groups:
                ports = tuple(p for p, _ in h)
                se.groups[gid] = Group(name, gid, ports, tuple(peer for _, peer in h),
                                       tuple(dmac(name, p) for p, _ in h), ())
            se.entries.append(route_group(d.prefix, gid, dst_index[d]))
        for gid, g in sorted(se.groups.items()):
            se.groups[gid] = g = Group(g.switch, gid, g.ports, g.peers, g.dmacs,
                                       tuple(members[gid]))
            sch = overrides.get((name, gid)) or overrides.get(name) or default
            sch = scheme_from_name(sch)
            se.scheme[gid] = sch
            w = weights.get((name, gid), {})
            gctx = GroupContext(gid, g.ports, g.dmacs, tuple(float(w.get(p, 1.0))
                                                             for p in g.ports), ctx)
            se.entries.extend(sch.entries(gctx))
        for host in hosts_of.get(name, ()):
            se.entries.append(route_nhop(f"{host.ip}/32", host.switch_port,
                                         mac_int(host.mac)))
        se.entries.append(route_cpu(f"{PROBE_IP}/32"))
        for port in sorted(port_map[name]):
            se.entries.append(Entry.make(PORT_SMAC, {K_EGRESS: ExactMatch(port)},
                                         "MyEgress.set_smac", {"smac": mac_int(sw.port_mac(port))}))
            k = ecn_threshold(_port_rate(spec, name, port, port_map)) \
                if callable(ecn_threshold) else ecn_threshold
            if k is not None:
                se.entries.append(ecn_entry(port, k))
        se.entries = [same.setdefault(e, e) for e in se.entries]
        out[name] = se
    return FabricEntries(out, failed)


def link_of_port(spec: FabricSpec, switch: str, port: int) -> LinkSpec | None:
    for lk in spec.node_links(switch):
        if lk.port_of(switch) == port:
            return lk
    return None
