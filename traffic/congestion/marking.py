"""Where switches should CE-mark for each algorithm: a step threshold on the egress queue.

fabric.p4 marks an ECN-capable packet CE when the queue it leaves holds at least
``ecn_config``'s threshold (packets). The threshold follows the algorithm and the port's rate:

* DCTCP: K > C·RTT/7 (Alizadeh et al. 2010, §3.4: the smallest K that keeps the link busy
  after a cut), C the port's rate, RTT the fabric's base RTT;
* DCQCN: the paper's RED-style marking between K_min and K_max with probability up to P_max
  becomes a step at K_min = K_max — the case the paper shows behaves like DCTCP — so the same
  rule (p4src/README.md: fabric.p4 has no probabilistic marking);
* NSCC: at its queueing-delay target (``target_qdelay_pkts``), so marks and delay agree;
* none: the algorithm ignores marks; ECN path policies still see DCTCP's K.

Never below ``K_FLOOR`` packets (a slow emulated link's C·RTT is under one packet) and never
above half the queue, so a burst that crosses K still has room before tail drops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .base import CcName, cc_params

K_FLOOR = 4
DCTCP_K_FRACTION = 1 / 7


def base_rtt(hops: int, prop_delay_s: float, rate_bps: float, packet_bytes: int = 1500,
             ack_bytes: int = 94) -> float:
    """The unloaded RTT over ``hops`` links each way: propagation both ways plus one data
    packet's and one ACK's serialisation per hop (store and forward)."""
    return hops * (2 * prop_delay_s + (packet_bytes + ack_bytes) * 8 / rate_bps)


def ecn_threshold(cc: str, rate_bps: float | None, rtt_s: float, packet_bytes: int = 1500,
                  queue_depth: int = 64, params: dict | None = None) -> int:
    """The marking threshold in packets for a port of ``rate_bps`` under algorithm ``cc``
    (``params``: its parameters, as for cc_params)."""
    if cc == CcName.NSCC:
        k = math.ceil(cc_params(cc, params).target_qdelay_pkts)
    elif rate_bps is None or rate_bps <= 0:
        k = 20      # an unrated port: no C·RTT to size K by
    else:
        k = math.ceil(DCTCP_K_FRACTION * rate_bps * rtt_s / (packet_bytes * 8))
    return max(1, min(max(K_FLOOR, k), queue_depth // 2))


def host_hops(spec: object) -> int:
    """Links on the longest shortest path between two hosts of a model.spec.FabricSpec (6 in a
    fat-tree, 4 in a leaf-spine): the hops a base RTT for K should count. Measured from one
    host, which is exact for the symmetric fabrics the generators build."""
    import networkx as nx

    hosts = list(spec.hosts)  # type: ignore[attr-defined]  # spec is a model.spec FabricSpec (typed object: no import upward)
    if len(hosts) < 2:
        return 1
    dist = nx.single_source_shortest_path_length(spec.graph(), hosts[0])  # type: ignore[attr-defined]  # as above
    return max(dist.get(h, 1) for h in hosts[1:])


def fabric_ecn_threshold(spec: object, cc: str, rate_bps: float | None, prop_delay_s: float,
                         packet_bytes: int, queue_depth: int = 64,
                         params: dict | None = None) -> int:
    """``ecn_threshold`` for a port of ``rate_bps`` in fabric ``spec``, its RTT the base RTT
    over the fabric's longest host-to-host path."""
    return fabric_marking(spec, cc, prop_delay_s, packet_bytes, queue_depth, params)(rate_bps)


def fabric_marking(spec: object, cc: str, prop_delay_s: float, packet_bytes: int,
                   queue_depth: int = 64, params: dict | None = None) -> PortMarking:
    """The per-port threshold function for fabric ``spec`` (PortMarking)."""
    return PortMarking(cc, host_hops(spec), prop_delay_s, packet_bytes, queue_depth,
                       dict(params or {}))


@dataclass(frozen=True)
class PortMarking:
    """The threshold as a function of a port's rate (what model.routing's
    ``ecn_threshold`` takes, so each port gets its own K): the fabric's ``hops`` and
    propagation delay fix the base RTT's shape, the port's rate its C and serialisation.
    A dataclass, not a closure, so a simulator run split over processes can pickle it."""

    cc: str
    hops: int
    prop_delay_s: float
    packet_bytes: int = 1500
    queue_depth: int = 64
    params: dict = field(default_factory=dict)

    def __call__(self, rate_bps: float | None) -> int:
        rtt = base_rtt(self.hops, self.prop_delay_s, rate_bps or 1e12, self.packet_bytes)
        return ecn_threshold(self.cc, rate_bps, rtt, self.packet_bytes, self.queue_depth,
                             self.params)
