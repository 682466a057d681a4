"""Mininet ``Topo`` classes built from a :class:`~model.spec.FabricSpec`.

``SpecTopo(spec)`` adds every switch, host and link of the spec in ``build()`` with the spec's
port numbers, so Mininet interface ``edge1-eth3`` is port 3 of ``edge1`` as the controller sees
it. Node params carry the spec (role, pod, addresses) for the node classes in ``topo.nodes``.
``FatTreeTopo`` and ``LeafSpineTopo`` only choose the generator.
"""

from __future__ import annotations

from mininet.topo import Topo

from model.spec import FabricSpec, SpecError, fat_tree, leaf_spine

MININET_MAX_K = 16
"""The largest fat tree Mininet is given: k=16 is already 320 switch processes and 1,024 host
namespaces; model.spec builds up to k=32 for the simulator (``python -m sim``), whose fabric
lives in one or a few processes."""


def check_mininet_size(spec: FabricSpec) -> None:
    """SpecError (one line) for a fabric too big to emulate with Mininet."""
    k = spec.params.get("k")
    if spec.kind == "fattree" and isinstance(k, int) and k > MININET_MAX_K:
        raise SpecError(f"a k={k} fat tree ({len(spec.switches)} switches, {len(spec.hosts)} "
                        f"hosts) is too big for Mininet: k <= {MININET_MAX_K} here (the "
                        "simulator, python -m sim, runs it)")


class SpecTopo(Topo):
    """Every node and link of ``spec``; links carry ``bw`` (Mbps) for the host-side shaper.
    ``prop_delay_us`` > 0: every link's propagation delay, emulated by the switches
    (``port_delays``). A fabric Mininet cannot run is refused (``check_mininet_size``)."""

    def __init__(self, spec: FabricSpec, prop_delay_us: float = 0.0, **opts) -> None:
        check_mininet_size(spec)
        self.spec = spec
        self.prop_delay_us = prop_delay_us
        super().__init__(**opts)

    def build(self, **_opts) -> None:
        spec = self.spec
        host_ips = tuple(h.ip for h in spec.hosts.values())
        for sw in spec.switches.values():
            self.addSwitch(sw.name, spec=sw, role=sw.role, pod=sw.pod,
                           ports=spec.ports(sw.name), port_rates=self.port_rates(sw.name),
                           dpid=f"{sw.device_id:016x}",
                           **({"port_delays": self.port_delays(sw.name),
                               "host_ports": self.host_ports(sw.name)}
                              if self.prop_delay_us else {}))
        for h in spec.hosts.values():
            self.addHost(h.name, spec=h, ip=f"{h.ip}/{h.prefixlen}", mac=h.mac, pod=h.pod,
                         peers=host_ips)
        for lk in spec.links:
            self.addLink(lk.a, lk.b, port1=lk.a_port, port2=lk.b_port, bw=lk.bw_mbps)

    def port_rates(self, switch: str) -> dict[int, float]:
        """Link rate (Mbps) of each port of ``switch`` that has one."""
        return {lk.port_of(switch): lk.bw_mbps for lk in self.spec.node_links(switch)
                if lk.bw_mbps}


    def host_ports(self, switch: str) -> set[int]:
        """The ports of ``switch`` whose link leads to a host."""
        return {lk.port_of(switch) for lk in self.spec.node_links(switch)
                if lk.other(switch)[0] in self.spec.hosts}

    def port_delays(self, switch: str) -> dict[int, float]:
        """Propagation delay (µs) each port of ``switch`` adds to the frames it sends. A link
        between two switches is delayed by its sender in each direction; a host's link by the
        switch alone, twice over on the way to the host (hosts send through HTB, which cannot
        delay): every host-to-host path then has its exact one-way delay, links x delay."""
        d = self.prop_delay_us
        return {lk.port_of(switch): 2 * d if lk.other(switch)[0] in self.spec.hosts else d
                for lk in self.spec.node_links(switch)}


class FatTreeTopo(SpecTopo):
    """k-ary fat-tree (Al-Fares et al.): 5k²/4 switches, k³/4 hosts."""

    def __init__(self, k: int = 4, bw_mbps: float | None = None, **opts) -> None:
        super().__init__(fat_tree(k, bw_mbps), **opts)


class LeafSpineTopo(SpecTopo):
    """Two-tier Clos, ``uplinks`` parallel links between every leaf and spine."""

    def __init__(self, leaves: int = 4, spines: int = 2, hosts_per_leaf: int = 2,
                 uplinks: int = 1, bw_mbps: float | None = None, **opts) -> None:
        super().__init__(leaf_spine(leaves, spines, hosts_per_leaf, uplinks, bw_mbps), **opts)
