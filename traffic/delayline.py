"""Propagation delay at the receiving host: where the eBPF emulation can add it.

The kernel data plane (p4switch --target ebpf) forwards every frame inside the kernel, and this
kernel has no netem, fq or etf qdisc to hold a frame for a while on its way; the Python target
delays frames on its own ports instead (p4switch/propagation.py). So the hosts do it: the
receiving agent holds each datagram that arrives from a peer until ``links × (delay +
serialisation)`` after it read it, where ``links`` is the number of links on the fabric's
shortest path between the two hosts (:func:`path_links`) and the serialisation is the frame's
at the link rate. That term is store-and-forward: the kernel's switches hand a frame to the
next hop when their HTB releases it, at the start of its transmission, so without it every
hop would be cut-through (as the Python target's ports add it with their delay,
p4switch/propagation.py; the simulator's links serialise every hop) — the path every route the controller installs takes in a fat-tree
or a leaf-spine, whose ECMP paths are all equally long (a reroute around a failed link onto a
longer path would be under-delayed). Data, ACKs and the start barrier's beacons alike, so a
round trip carries the delay of both directions. What this leaves out: the frames meet every
queue on the path that much earlier than on a fabric with delay on each link, so two flows
that collide at a queue here might have missed each other there; the simulator models the
same placement with ``SimConfig.prop_at_hosts`` so the two sides compare.

Pure code: the agent passes its clock and hands over what is due.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .wire import HDR_AT

Held = tuple[float, bytes, str, int, bool]
"""A held datagram: (when it is due, its bytes, source IP, source port, CE-marked)."""


def path_links(spec: Any, ip: str) -> dict[str, int]:
    """Links on the shortest path from the host with address ``ip`` to every host of
    ``spec`` (a model.spec.FabricSpec), by the other host's address (its own: 0)."""
    import networkx as nx

    by_ip = {h.ip: name for name, h in spec.hosts.items()}
    if ip not in by_ip:
        raise ValueError(f"no host with address {ip} in {spec.name}")
    dist = nx.single_source_shortest_path_length(spec.graph(), by_ip[ip])
    return {h.ip: int(dist[name]) for name, h in spec.hosts.items() if name in dist}


def write_path_links(spec: Any, path: Path) -> Path:
    """Every host pair's path length, ``{ip: {peer ip: links}}``, as JSON at ``path`` (the
    agents' ``--path-links``)."""
    path.write_text(json.dumps({h.ip: path_links(spec, h.ip) for h in spec.hosts.values()},
                               sort_keys=True))
    return path


def read_path_links(path: str | Path, local: set[str]) -> dict[str, int]:
    """The path lengths from the peers to this host (one of ``local``, its addresses) out of
    :func:`write_path_links`'s file; ValueError if it says nothing about any of them."""
    try:
        table = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"--path-links {path}: {e}") from None
    mine = [table[ip] for ip in sorted(local) if isinstance(table, dict) and ip in table]
    if not mine:
        raise ValueError(f"--path-links {path}: none of this host's addresses is in it")
    return {peer: int(n) for peer, n in mine[0].items()}


@dataclass
class DelayLine:
    """Datagrams held until their propagation delay has passed. ``delay_s``: the delay of
    each source address (links × the per-link delay); a source not in it is not held.
    ``s_per_byte``: each source's store-and-forward time per frame byte (links × 8 / link
    rate; none: 0). One FIFO per source: its datagrams leave in the order they came (a small
    one behind a big one waits for it, as on a link)."""

    delay_s: dict[str, float]
    s_per_byte: dict[str, float] = field(default_factory=dict)
    _fifos: dict[str, deque[Held]] = field(default_factory=dict, repr=False)
    held: int = 0
    """Datagrams held so far."""
    max_held: int = 0
    """The most held at once (the hosts' share of the fabric's bandwidth-delay product)."""
    _n: int = field(default=0, repr=False)

    @classmethod
    def of(cls, per_link_s: float, links: dict[str, int],
           link_bps: float | None = None) -> DelayLine | None:
        """The line for a per-link delay, the path lengths from each peer and the links'
        rate (None: no serialisation term); None: no delay to add."""
        if not per_link_s > 0:
            return None
        near = {ip: n for ip, n in links.items() if n > 0}
        spb = {ip: n * 8.0 / link_bps for ip, n in near.items()} if link_bps else {}
        return cls({ip: n * per_link_s for ip, n in near.items()}, spb)

    def hold(self, now: float, data: bytes, ip: str, sport: int, ce: bool) -> bool:
        """Hold a datagram that arrived at ``now`` from ``ip``; False: it has no delay (the
        caller handles it at once)."""
        d = self.delay_s.get(ip)
        if not d:
            return False
        due = now + d + (len(data) + HDR_AT) * self.s_per_byte.get(ip, 0.0)
        fifo = self._fifos.get(ip)
        if fifo is None:
            fifo = self._fifos[ip] = deque()
        elif fifo and fifo[-1][0] > due:
            due = fifo[-1][0]
        fifo.append((due, data, ip, sport, ce))
        self.held += 1
        self._n += 1
        if self._n > self.max_held:
            self.max_held = self._n
        return True

    def next_due(self) -> float | None:
        """When the earliest held datagram is due (None: nothing held)."""
        return min((f[0][0] for f in self._fifos.values() if f), default=None)

    def pop_due(self, now: float) -> list[Held]:
        """The held datagrams due by ``now``, earliest first."""
        out: list[Held] = []
        for f in self._fifos.values():
            while f and f[0][0] <= now:
                out.append(f.popleft())
        if len(out) > 1:
            out.sort(key=lambda x: x[0])
        self._n -= len(out)
        return out

    def pop_all(self) -> list[Held]:
        """Everything still held, earliest first (the agent is leaving: they have arrived)."""
        return self.pop_due(float("inf"))
