"""The fabric as data: switches, hosts and links with their ports and addresses, no Mininet.

Everything that needs a topology — the Mininet builder (``topo.fattree`` and friends), the
controller's routing, the virtual-time simulator — reads one :class:`FabricSpec`. It is pure data
(frozen dataclasses) plus a networkx view, so routing can be computed and tested without root,
Mininet or a running switch, and the emulated and simulated fabrics are programmed identically.

Addressing derives from position (docs/fabric.md has the full plan):

* fat-tree (Al-Fares et al. 2008), pods ``p = 0..k-1``, ``k/2`` edge and ``k/2`` aggregation
  switches per pod, ``(k/2)²`` cores, ``k/2`` hosts per edge switch:
  host ``n`` of edge ``e`` in pod ``p`` is ``10.p.e.(n+2)/24``, its gateway the edge switch at
  ``10.p.e.1``; aggregation switch ``a`` of pod ``p`` is ``10.p.(k/2+a).1``; core ``(j, i)`` is
  ``10.k.(j+1).(i+1)``.
* leaf-spine: host ``n`` of leaf ``l`` is ``10.1.l.(n+2)/24``, leaf ``l`` is ``10.1.l.1``,
  spine ``s`` is ``10.2.s.1``.

MACs: a host's is ``02:00`` followed by its four IPv4 bytes; a switch port's is
``02:fe:<device id, 16 bits>:00:<port>`` (the source MAC ``port_smac`` writes, and the next-hop
MAC a neighbour puts in ``set_nhop``/``set_member``). Ports: hosts first (``1..``), then uplinks;
see the generators for the exact order. Device ids are ``1..N`` in the order switches are listed;
each switch gets its own P4Runtime port ``grpc_base + device_id`` (and Thrift port for BMv2).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import networkx as nx

GRPC_BASE_PORT = 50000
"""A switch's P4Runtime server listens on 127.0.0.1:(GRPC_BASE_PORT + device_id)."""
THRIFT_BASE_PORT = 9090
"""BMv2's Thrift port (simple_switch_CLI) is THRIFT_BASE_PORT + device_id."""
CPU_PORT = 255
MAX_PORT = 510
"""9-bit ports; 511 is v1model's drop port and 255 the CPU port."""
PRIORITY_QUEUES = 2
"""Strict-priority egress queues per switch port (``--priority-queues``, p4switch and BMv2):
fabric.p4 puts controller packet-outs (liveness probes) in queue 1, ahead of data in 0."""

ROLES = ("edge", "agg", "core", "leaf", "spine", "switch")


class SpecError(ValueError):
    """A fabric description that cannot be built (bad parameter, duplicate port, ...)."""


def mac_str(value: int) -> str:
    """48-bit int -> ``aa:bb:cc:dd:ee:ff``."""
    return ":".join(f"{(value >> s) & 0xFF:02x}" for s in range(40, -8, -8))


def mac_int(text: str) -> int:
    """``aa:bb:cc:dd:ee:ff`` (or ``-`` separated) -> 48-bit int."""
    parts = text.replace("-", ":").split(":")
    if len(parts) != 6:
        raise SpecError(f"bad MAC address {text!r}")
    try:
        return int("".join(f"{int(p, 16):02x}" for p in parts), 16)
    except ValueError:
        raise SpecError(f"bad MAC address {text!r}") from None


def host_mac(ip: str) -> str:
    """The MAC of a generated host: 02:00 + its IPv4 address bytes."""
    return mac_str((0x0200 << 32) | int(ipaddress.IPv4Address(ip)))


def switch_port_mac(device_id: int, port: int) -> str:
    """The router MAC of one switch port: 02:fe:<device id>:00:<port>."""
    return mac_str((0x02FE << 32) | ((device_id & 0xFFFF) << 16) | (port & 0xFFFF))


@dataclass(frozen=True)
class SwitchSpec:
    """One P4 switch. ``pod``/``index`` place it (``pod`` None outside pods)."""

    name: str
    role: str
    device_id: int
    index: int
    pod: int | None = None
    ip: str | None = None
    """The switch's own router address (gateway of its hosts); informational elsewhere."""
    subnet: str | None = None
    """The prefix its attached hosts share (edge/leaf), so routes can aggregate."""
    grpc_port: int = 0
    thrift_port: int = 0

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise SpecError(f"switch {self.name}: unknown role {self.role!r}")
        if self.grpc_port == 0:
            object.__setattr__(self, "grpc_port", GRPC_BASE_PORT + self.device_id)
        if self.thrift_port == 0:
            object.__setattr__(self, "thrift_port", THRIFT_BASE_PORT + self.device_id)

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def port_mac(self, port: int) -> str:
        return switch_port_mac(self.device_id, port)


@dataclass(frozen=True)
class HostSpec:
    """One host: a single interface ``eth0`` attached to ``switch`` on ``switch_port``."""

    name: str
    ip: str
    prefixlen: int
    mac: str
    switch: str
    switch_port: int
    gateway_ip: str | None = None
    """Default route; None means on-link (every destination ARPed statically)."""
    gateway_mac: str | None = None
    pod: int | None = None
    index: int = 0
    commands: tuple[str, ...] = ()
    """Extra shell commands run in the host after set-up (topology.json ``commands``)."""


@dataclass(frozen=True)
class LinkSpec:
    """A full-duplex link between node ``a`` port ``a_port`` and ``b`` port ``b_port``.

    A host's end is port 0 (its ``eth0``). ``bw_mbps`` is the link capacity in both directions
    (None: unlimited); the switch serves the egress queue of the port at this rate and the host
    side is shaped to it.
    """

    a: str
    a_port: int
    b: str
    b_port: int
    bw_mbps: float | None = None

    def other(self, node: str) -> tuple[str, int]:
        """(peer node, peer port) seen from ``node``."""
        if node == self.a:
            return self.b, self.b_port
        if node == self.b:
            return self.a, self.a_port
        raise KeyError(f"{node} is not an end of link {self.a}-{self.b}")

    def port_of(self, node: str) -> int:
        if node == self.a:
            return self.a_port
        if node == self.b:
            return self.b_port
        raise KeyError(f"{node} is not an end of link {self.a}-{self.b}")

    @property
    def key(self) -> tuple[str, int, str, int]:
        return (self.a, self.a_port, self.b, self.b_port)


class _LinkIndex:
    """Where each node's links are in a ``links`` list: positions, so that a link replaced in
    place by one with the same ends (another rate) is read fresh. Built when a query finds the
    list replaced or grown behind ``add_link``'s back; a position whose link no longer has the
    node it is filed under rebuilds it (``FabricSpec._at``)."""

    __slots__ = ("of", "n", "by_node")

    def __init__(self, links: list[LinkSpec]) -> None:
        self.of = links
        self.n = 0
        self.by_node: dict[str, list[int]] = {}
        for lk in links:
            self.add(lk)

    def add(self, lk: LinkSpec) -> None:
        i = self.n
        self.n += 1
        self.by_node.setdefault(lk.a, []).append(i)
        if lk.b != lk.a:
            self.by_node.setdefault(lk.b, []).append(i)


@dataclass
class FabricSpec:
    """A whole fabric. ``kind`` is ``fattree``, ``leafspine`` or ``custom``; ``params`` holds the
    generator's arguments (e.g. ``{"k": 4}``) for reports.

    Lookups by node, port and address go through indexes built on first use, so building and
    querying a k=32 fat tree (24,576 links) is linear, not quadratic. They follow the public
    fields: a list or dict assigned anew, or grown, is indexed again; a link replaced in place
    must keep its ends (``dataclasses.replace(lk, bw_mbps=...)``)."""

    name: str
    kind: str = "custom"
    switches: dict[str, SwitchSpec] = field(default_factory=dict)
    hosts: dict[str, HostSpec] = field(default_factory=dict)
    links: list[LinkSpec] = field(default_factory=list)
    params: dict[str, object] = field(default_factory=dict)
    _lix: _LinkIndex | None = field(default=None, init=False, repr=False, compare=False)
    _ips: tuple[dict[str, HostSpec], int, dict[str, str]] | None = field(
        default=None, init=False, repr=False, compare=False)

    # ---- indexes ------------------------------------------------------------------------------
    def _links_index(self, fresh: bool = False) -> _LinkIndex:
        ix = self._lix
        if fresh or ix is None or ix.of is not self.links or ix.n != len(self.links):
            ix = self._lix = _LinkIndex(self.links)
        return ix

    def _at(self, node: str) -> list[LinkSpec]:
        """``node``'s links, in list order."""
        for fresh in (False, True):
            links = self.links
            out = [links[i] for i in self._links_index(fresh).by_node.get(node, ())]
            if all(node == lk.a or node == lk.b for lk in out):
                return out
        raise AssertionError("unreachable: a fresh index files every link under its ends")

    def _ip_index(self) -> dict[str, str]:
        """IPv4 address -> host name."""
        got = self._ips
        if got is None or got[0] is not self.hosts or got[1] != len(self.hosts):
            ips: dict[str, str] = {}
            for h in self.hosts.values():
                ips.setdefault(h.ip, h.name)
            got = self._ips = (self.hosts, len(self.hosts), ips)
        return got[2]

    # ---- building -----------------------------------------------------------------------------
    def add_switch(self, sw: SwitchSpec) -> SwitchSpec:
        if sw.name in self.switches or sw.name in self.hosts:
            raise SpecError(f"duplicate node name {sw.name!r}")
        if any(o.device_id == sw.device_id for o in self.switches.values()):
            raise SpecError(f"switch {sw.name}: duplicate device id {sw.device_id}")
        self.switches[sw.name] = sw
        return sw

    def add_host(self, h: HostSpec) -> HostSpec:
        if h.name in self.switches or h.name in self.hosts:
            raise SpecError(f"duplicate node name {h.name!r}")
        ips = self._ip_index()
        other = self.hosts.get(ips.get(h.ip, ""))
        if other is not None and other.ip == h.ip:
            raise SpecError(f"host {h.name}: duplicate IPv4 address {h.ip}")
        self.hosts[h.name] = h
        ips[h.ip] = h.name
        self._ips = (self.hosts, len(self.hosts), ips)
        return h

    def add_link(self, link: LinkSpec) -> LinkSpec:
        for node, port in ((link.a, link.a_port), (link.b, link.b_port)):
            if node not in self.switches and node not in self.hosts:
                raise SpecError(f"link {link.a}-{link.b}: unknown node {node!r}")
            if node in self.switches and not (0 <= port <= MAX_PORT and port != CPU_PORT):
                raise SpecError(f"link {link.a}-{link.b}: bad port {port} on {node}")
            if self._port_used(node, port):
                raise SpecError(f"link {link.a}-{link.b}: port {port} of {node} already used")
        if link.bw_mbps is not None and link.bw_mbps <= 0:
            raise SpecError(f"link {link.a}-{link.b}: bandwidth must be > 0 Mbps")
        ix = self._links_index()
        self.links.append(link)
        ix.add(link)
        return link

    def _port_used(self, node: str, port: int) -> bool:
        return any((lk.a == node and lk.a_port == port) or (lk.b == node and lk.b_port == port)
                   for lk in self._at(node))

    # ---- queries ------------------------------------------------------------------------------
    def node_links(self, node: str) -> Iterator[LinkSpec]:
        return iter(self._at(node))

    def ports(self, switch: str) -> dict[int, tuple[str, int]]:
        """port -> (peer node, peer port) of one switch."""
        return {lk.port_of(switch): lk.other(switch) for lk in self._at(switch)}

    def links_between(self, a: str, b: str) -> list[LinkSpec]:
        return [lk for lk in self._at(a) if {lk.a, lk.b} == {a, b}]

    def host_of_ip(self, ip: str) -> HostSpec:
        name = self._ip_index().get(ip)
        h = self.hosts.get(name) if name is not None else None
        if h is not None and h.ip == ip:
            return h
        for h in self.hosts.values():  # a host replaced in place under another address
            if h.ip == ip:
                return h
        raise KeyError(ip)

    def switch_links(self) -> list[LinkSpec]:
        """Links whose both ends are switches (the ones load balancing spreads over)."""
        return [lk for lk in self.links if lk.a in self.switches and lk.b in self.switches]

    def graph(self) -> nx.MultiGraph:
        """The fabric as a networkx MultiGraph (parallel links allowed).

        Node attributes: ``kind`` ("switch"/"host") and every field of the node's spec; edge
        key: the link's index in ``links``; edge attributes: ``link`` (the LinkSpec),
        ``ports`` ({node: port}) and ``bw_mbps``.
        """
        g = nx.MultiGraph(name=self.name, kind=self.kind)
        for sw in self.switches.values():
            g.add_node(sw.name, kind="switch", **_fields(sw))
        for h in self.hosts.values():
            g.add_node(h.name, kind="host", **_fields(h))
        for i, lk in enumerate(self.links):
            g.add_edge(lk.a, lk.b, key=i, link=lk, ports={lk.a: lk.a_port, lk.b: lk.b_port},
                       bw_mbps=lk.bw_mbps)
        return g

    def validate(self) -> None:
        """Every host attached exactly once to the switch port it claims; graph connected."""
        for h in self.hosts.values():
            hl = list(self.node_links(h.name))
            if len(hl) != 1:
                raise SpecError(f"host {h.name} has {len(hl)} links (needs exactly 1)")
            peer, port = hl[0].other(h.name)
            if (peer, port) != (h.switch, h.switch_port):
                raise SpecError(f"host {h.name} claims {h.switch}:{h.switch_port} but is "
                                f"linked to {peer}:{port}")
        g = self.graph()
        if g.number_of_nodes() and not nx.is_connected(g):
            raise SpecError(f"fabric {self.name} is not connected")


def _fields(obj: object) -> dict[str, object]:
    # obj is one of this module's dataclasses; object has no __dataclass_fields__ for mypy
    return {k: getattr(obj, k) for k in obj.__dataclass_fields__}  # type: ignore[attr-defined]


# ---- generators ---------------------------------------------------------------------------------
MAX_FAT_TREE_K = 32
"""The largest fat tree built: k=32, 1,280 switches and 8,192 hosts (the simulator runs it,
bench/sim_scale.py; Mininet stops at topo.topos.MININET_MAX_K). The address plan and
fabric.p4's table sizes would fit more (a switch's ipv4_lpm holds k²/2 + k/2 + 1 routes of
IPV4_LPM_SIZE 4,096; an address byte holds a pod, an edge, k/2 + 2 host numbers)."""


def fat_tree(k: int = 4, bw_mbps: float | None = None, oversub: float = 1.0) -> FabricSpec:
    """A k-ary fat-tree (k even, 2..MAX_FAT_TREE_K): 5k²/4 switches, k³/4 hosts.
    ``oversub`` R: the edge switches' uplinks run at ``bw_mbps``/R, so an edge takes R times
    more from its hosts than it can send up (2:1, 4:1, 8:1 as data centres build them; htsim
    oversubscribes its ToR tier the same way).

    Ports: edge ``1..k/2`` hosts, ``k/2+1..k`` aggregation switches of its pod (agg ``a`` on
    ``k/2+1+a``); aggregation ``1..k/2`` edge switches (edge ``e`` on ``e+1``), ``k/2+1..k`` cores
    (core ``a·k/2+i`` on ``k/2+1+i``); core ``1..k`` pods (pod ``p`` on ``p+1``).
    Names: ``h1..`` hosts, ``edge1..``, ``agg1..``, ``core1..`` (1-based, pod-major).
    """
    if k < 2 or k % 2 or k > MAX_FAT_TREE_K:
        raise SpecError(f"fat-tree k must be even and in 2..{MAX_FAT_TREE_K}, got {k}")
    up = _uplink_rate(bw_mbps, oversub)
    half = k // 2
    spec = FabricSpec(name=f"fattree-k{k}{_os_suffix(oversub)}", kind="fattree",
                      params={"k": k, "bw_mbps": bw_mbps, **_os_param(oversub)})
    dev = iter(range(1, 5 * k * k // 4 + 1))
    edges: dict[tuple[int, int], SwitchSpec] = {}
    aggs: dict[tuple[int, int], SwitchSpec] = {}
    cores: dict[tuple[int, int], SwitchSpec] = {}
    for p in range(k):
        for e in range(half):
            edges[p, e] = spec.add_switch(SwitchSpec(
                name=f"edge{p * half + e + 1}", role="edge", device_id=next(dev),
                index=e, pod=p, ip=f"10.{p}.{e}.1", subnet=f"10.{p}.{e}.0/24"))
    for p in range(k):
        for a in range(half):
            aggs[p, a] = spec.add_switch(SwitchSpec(
                name=f"agg{p * half + a + 1}", role="agg", device_id=next(dev),
                index=a, pod=p, ip=f"10.{p}.{half + a}.1", subnet=f"10.{p}.0.0/16"))
    for j in range(half):
        for i in range(half):
            cores[j, i] = spec.add_switch(SwitchSpec(
                name=f"core{j * half + i + 1}", role="core", device_id=next(dev),
                index=j * half + i, ip=f"10.{k}.{j + 1}.{i + 1}"))
    hn = 0
    for p in range(k):
        for e in range(half):
            sw = edges[p, e]
            for n in range(half):
                hn += 1
                ip = f"10.{p}.{e}.{n + 2}"
                h = spec.add_host(HostSpec(
                    name=f"h{hn}", ip=ip, prefixlen=24, mac=host_mac(ip), switch=sw.name,
                    switch_port=n + 1, gateway_ip=sw.ip, gateway_mac=sw.port_mac(n + 1), pod=p,
                    index=hn - 1))
                spec.add_link(LinkSpec(h.name, 0, sw.name, n + 1, bw_mbps))
    for p in range(k):
        for e in range(half):
            for a in range(half):
                spec.add_link(LinkSpec(edges[p, e].name, half + 1 + a, aggs[p, a].name, e + 1,
                                       up))
    for p in range(k):
        for a in range(half):
            for i in range(half):
                spec.add_link(LinkSpec(aggs[p, a].name, half + 1 + i, cores[a, i].name, p + 1,
                                       bw_mbps))
    spec.validate()
    return spec


def _uplink_rate(bw_mbps: float | None, oversub: float) -> float | None:
    if not (isinstance(oversub, int | float) and 1 <= oversub <= 64):
        raise SpecError(f"oversubscription must be in 1..64, got {oversub!r}")
    if oversub == 1:
        return bw_mbps
    if bw_mbps is None:
        raise SpecError("oversubscription needs a link rate (bw_mbps)")
    return bw_mbps / oversub


def _os_suffix(oversub: float) -> str:
    return "" if oversub == 1 else f"-os{oversub:g}"


def _os_param(oversub: float) -> dict[str, object]:
    return {} if oversub == 1 else {"oversub": oversub}


def degrade_links(spec: FabricSpec, pairs: Iterable[tuple[str, str]],
                  fraction: float) -> FabricSpec:
    """A copy of ``spec`` whose links between each pair run at ``fraction`` of their rate (a
    degraded link: a lane down, a bad optic; htsim's ``-failed N`` at 0.25). The links keep
    their ports, so routing still uses them: only their capacity drops. ``params["degraded"]``
    maps each degraded link (``a-b``) to the fraction of its rate it keeps."""
    if not 0 < fraction <= 1:
        raise SpecError(f"a degraded link runs at a fraction in (0, 1] of its rate, "
                        f"got {fraction!r}")
    want = {frozenset(p) for p in pairs}
    found: set[frozenset[str]] = set()
    links = []
    for lk in spec.links:
        key = frozenset((lk.a, lk.b))
        if key in want:
            if lk.bw_mbps is None:
                raise SpecError(f"link {lk.a}-{lk.b} has no rate to degrade")
            found.add(key)
            lk = dataclasses.replace(lk, bw_mbps=lk.bw_mbps * fraction)
        links.append(lk)
    missing = want - found
    if missing:
        raise SpecError(f"no link {'-'.join(sorted(next(iter(missing))))} in {spec.name}")
    prev = spec.params.get("degraded")
    degraded = dict(prev) if isinstance(prev, dict) else {}
    for p in sorted("-".join(sorted(p)) for p in want):
        degraded[p] = degraded.get(p, 1.0) * fraction
    return dataclasses.replace(spec, links=links, params={**spec.params, "degraded": degraded},
                               switches=dict(spec.switches), hosts=dict(spec.hosts))


def random_switch_links(spec: FabricSpec, n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` distinct switch-to-switch links (node pairs) drawn with ``seed``: "N random links
    degraded or failed", the same draw for the same fabric and seed."""
    pairs = sorted({tuple(sorted((lk.a, lk.b))) for lk in spec.switch_links()})
    if not 0 <= n <= len(pairs):
        raise SpecError(f"{spec.name} has {len(pairs)} switch links, cannot pick {n}")
    return [(a, b) for a, b in random.Random(seed).sample(pairs, n)]


def leaf_spine(leaves: int = 4, spines: int = 2, hosts_per_leaf: int = 2, uplinks: int = 1,
               bw_mbps: float | None = None, oversub: float = 1.0) -> FabricSpec:
    """A two-tier Clos: every leaf has ``uplinks`` parallel links to every spine, at
    ``bw_mbps``/``oversub`` (the host links at ``bw_mbps``).

    Ports: leaf ``1..hosts_per_leaf`` hosts, then ``hosts_per_leaf + 1 + s·uplinks + u`` for link
    ``u`` to spine ``s``; spine ``1 + l·uplinks + u`` for link ``u`` to leaf ``l``.
    Names: ``h1..``, ``leaf1..``, ``spine1..``.
    """
    for what, v, lo, hi in (("leaves", leaves, 1, 250), ("spines", spines, 1, 250),
                            ("hosts_per_leaf", hosts_per_leaf, 1, 250),
                            ("uplinks", uplinks, 1, 16)):
        if not lo <= v <= hi:
            raise SpecError(f"leaf-spine {what} must be in {lo}..{hi}, got {v}")
    if hosts_per_leaf + spines * uplinks > MAX_PORT - 1 or leaves * uplinks > MAX_PORT - 1:
        raise SpecError("leaf-spine needs more ports than a switch has")
    up = _uplink_rate(bw_mbps, oversub)
    spec = FabricSpec(name=f"leafspine-{leaves}x{spines}{_os_suffix(oversub)}",
                      kind="leafspine",
                      params={"leaves": leaves, "spines": spines,
                              "hosts_per_leaf": hosts_per_leaf, "uplinks": uplinks,
                              "bw_mbps": bw_mbps, **_os_param(oversub)})
    leaf_sw = [spec.add_switch(SwitchSpec(name=f"leaf{li + 1}", role="leaf", device_id=li + 1,
                                          index=li, ip=f"10.1.{li}.1",
                                          subnet=f"10.1.{li}.0/24"))
               for li in range(leaves)]
    spine_sw = [spec.add_switch(SwitchSpec(name=f"spine{s + 1}", role="spine",
                                           device_id=leaves + s + 1, index=s, ip=f"10.2.{s}.1"))
                for s in range(spines)]
    hn = 0
    for li, sw in enumerate(leaf_sw):
        for n in range(hosts_per_leaf):
            hn += 1
            ip = f"10.1.{li}.{n + 2}"
            h = spec.add_host(HostSpec(
                name=f"h{hn}", ip=ip, prefixlen=24, mac=host_mac(ip), switch=sw.name,
                switch_port=n + 1, gateway_ip=sw.ip, gateway_mac=sw.port_mac(n + 1),
                index=hn - 1))
            spec.add_link(LinkSpec(h.name, 0, sw.name, n + 1, bw_mbps))
    for li, lsw in enumerate(leaf_sw):
        for s, ssw in enumerate(spine_sw):
            for u in range(uplinks):
                spec.add_link(LinkSpec(lsw.name, hosts_per_leaf + 1 + s * uplinks + u,
                                       ssw.name, 1 + li * uplinks + u, up))
    spec.validate()
    return spec
