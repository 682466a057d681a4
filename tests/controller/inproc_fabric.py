"""A whole fabric of p4switch Switch objects in this process, no root: every switch-switch link
is a pair of MemoryPorts wired back to back (a cut link drops what it carries), hosts are
MemoryPorts the test feeds and reads, and every switch serves P4Runtime on its own loopback
port, so a FabricController drives it exactly as it drives a Mininet fabric."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from model.spec import PRIORITY_QUEUES, FabricSpec
from p4switch import MemoryPort, Switch
from tests.netutil import free_port, serve_free


@dataclasses.dataclass
class InprocFabric:
    spec: FabricSpec
    switches: dict[str, Switch]
    host_ports: dict[str, MemoryPort]
    cut: set[frozenset[str]]

    def cut_link(self, a: str, b: str) -> None:
        self.cut.add(frozenset({a, b}))

    def mend_link(self, a: str, b: str) -> None:
        self.cut.discard(frozenset({a, b}))


def _relocated(spec: FabricSpec) -> FabricSpec:
    """The same fabric at free loopback gRPC ports, for switches started as processes: never
    the fixed 50000+id ones a Mininet fabric of another test may be using, and one port per
    switch (a p4switch refuses a taken port; BMv2's gRPC server binds with SO_REUSEPORT, so
    two of them on one port would both start and answer for each other): ``free_port`` never
    hands out a port twice."""
    out = dataclasses.replace(spec, switches=dict(spec.switches))
    for n, sw in spec.switches.items():
        out.switches[n] = dataclasses.replace(sw, grpc_port=free_port())
    return out


@contextmanager
def inproc_fabric(spec: FabricSpec, priority_queues: int = PRIORITY_QUEUES
                  ) -> Iterator[InprocFabric]:
    """Switches get ``priority_queues`` strict-priority egress queues per port, as the Mininet
    launcher starts them."""
    spec = dataclasses.replace(spec, switches=dict(spec.switches))
    fab = InprocFabric(spec, {}, {}, set())
    ports: dict[tuple[str, int], MemoryPort] = {}

    def wire(src: str, dst: str, dst_port: int):
        def deliver(frame: bytes) -> None:
            if frozenset({src, dst}) not in fab.cut:
                ports[(dst, dst_port)].feed(frame)
        return deliver

    for name, sw in spec.switches.items():
        s = Switch(device_id=sw.device_id, cpu_port=255, priority_queues=priority_queues)
        for port, (peer, peer_port) in spec.ports(name).items():
            if peer in spec.switches:
                p = MemoryPort(port, f"{name}-p{port}", keep_sent=False,
                               on_send=wire(name, peer, peer_port))
            else:
                p = MemoryPort(port, f"{name}-p{port}")
                fab.host_ports[peer] = p
            ports[(name, port)] = p
            s.add_port(p)
        fab.switches[name] = s
    servers = []
    try:
        # free loopback gRPC ports, never the fixed 50000+id ones a Mininet fabric of another
        # test may be using; each switch's own, or one would answer for another
        for name, s in fab.switches.items():
            server, addr = serve_free(s)
            servers.append(server)
            spec.switches[name] = dataclasses.replace(spec.switches[name],
                                                      grpc_port=int(addr.rsplit(":", 1)[1]))
            s.start()
        yield fab
    finally:
        for srv in servers:
            srv.stop(0).wait()
        for s in fab.switches.values():
            s.stop(log_stats=False)
