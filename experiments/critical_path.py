"""The unloaded bound: a collective's CCT on an idle fabric with perfect load balancing.

The bandwidth bound (``metrics.ideal_bounds``' ``ideal_s``: the busiest NIC or the bisection)
counts wire time only, as if every step's data could overlap every other's. A schedule's steps
wait for each other — a ring step for the chunk before it, a lock-step ring for its own send's
last ACK — and each wait costs at least the path's latency, which no load balancing or
transport removes. The datacentre literature normalises flow completion times the same way:
pFabric, Homa and HPCC divide an FCT by the flow's FCT in an unloaded network (line rate from
the first packet plus the base latency), not by its size over the link rate.

``critical_path`` computes, per collective, the longest chain of waits through the schedule's
step dependencies under the most favourable assumptions — every flow alone on a shortest path
at line rate from its first packet, each switch store-and-forward (as both backends are) with
no queueing, ACKs never queued, no compute — so it is a lower bound on the collective's CCT
under any scheme and any transport. Per step of rank r, started at S:

* a send of B wire bytes to d: its last packet leaves r's NIC at S + B/C_r (C_r the NIC's
  rate), then crosses the path's other links: arrival = S + B/C_r + H·prop + p·Σ(1/C_l),
  p the last packet's bits, H the hops, the sum over the path's links after the NIC; its
  ACK is back one ACK-sized trip later (H·prop + a·Σ(1/C_l) over the whole path);
* all of a step's sends leave one NIC: the last of them is in no sooner than S + ΣB/C_r plus
  the shortest of their tails (the same for their ACKs);
* all of a step's receives enter one NIC: no sooner than the earliest of their senders' step
  starts plus their wire bytes over the receiver's link rate;
* the step finishes at the latest of: its receives' arrivals, its sends' ACKs (``wait_sends``),
  the ACKs of ``wait_acked`` flows; the rank's next step starts then.

Each collective is computed on its own steps, every rank entering it at time 0 (its flows from
other collectives count as arrived), so the span is a lower bound on the measured one whatever
came before. The fabric's propagation delay is one number for every link (``fabric:
prop_delay_us``); hops and Σ(1/C) are minimised independently over the paths, which keeps
the bound a bound on fabrics whose links differ.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx

from model.spec import FabricSpec
from traffic.schedules import Schedule
from traffic.schedules.format import Step


@dataclass(frozen=True)
class PathLatency:
    """The least latency terms from one host to another: ``hops`` links, ``inv_rate`` the
    least Σ 1/C over the links of a path (s per bit; 0 for unrated links), ``nic_inv`` the
    sender's own link's 1/C (the first term of that sum)."""

    hops: int
    inv_rate: float
    nic_inv: float

    def tail_s(self, prop_s: float, last_bits: float) -> float:
        """From the last bit leaving the sender's NIC to its arrival at the receiver."""
        return self.hops * prop_s + last_bits * (self.inv_rate - self.nic_inv)

    def trip_s(self, prop_s: float, bits: float) -> float:
        """A frame of ``bits`` sent into an idle path, first bit out to last bit in."""
        return self.hops * prop_s + bits * self.inv_rate


class Paths:
    """Shortest-path latency terms between hosts of ``spec``, one search per source host."""

    def __init__(self, spec: FabricSpec) -> None:
        self.g = spec.graph()
        self._hops: dict[str, dict[str, int]] = {}
        self._inv: dict[str, dict[str, float]] = {}
        self._nic: dict[str, float] = {}

    @staticmethod
    def _link_inv(_u: str, _v: str, parallel: dict) -> float:
        """1/C of the fastest of the parallel links between two nodes (0: unrated)."""
        return min(1.0 / (d["bw_mbps"] * 1e6) if d["bw_mbps"] else 0.0
                   for d in parallel.values())

    def nic_inv(self, host: str) -> float:
        """1/C of ``host``'s one link (s per bit)."""
        inv = self._nic.get(host)
        if inv is None:
            inv = self._nic[host] = min(
                (self._link_inv(host, v, d) for v, d in self.g.adj[host].items()), default=0.0)
        return inv

    def between(self, src: str, dst: str) -> PathLatency:
        if src not in self._hops:
            self._hops[src] = nx.single_source_shortest_path_length(self.g, src)
            self._inv[src] = nx.single_source_dijkstra_path_length(self.g, src,
                                                                   weight=self._link_inv)
        if dst not in self._hops[src]:
            raise ValueError(f"no path from {src} to {dst}")
        return PathLatency(self._hops[src][dst], self._inv[src][dst], self.nic_inv(src))


@dataclass(frozen=True)
class Framing:
    """How a message of B payload bytes becomes frames: ``mss`` payload bytes per packet,
    ``header`` bytes in front of each, ACK frames of ``ack`` bytes."""

    mss: int
    header: int
    ack: int

    def wire_bytes(self, payload: int) -> int:
        return payload + max(1, -(-payload // self.mss)) * self.header

    def last_frame_bits(self, payload: int) -> int:
        rest = payload % self.mss or min(payload, self.mss)
        return (rest + self.header) * 8


def critical_path(spec: FabricSpec, schedule: Schedule, hosts: Sequence[str],
                  framing: Framing, prop_s: float = 0.0) -> dict[int, float]:
    """Per collective id: the unloaded lower bound on its CCT in seconds (module docstring).
    ``hosts[r]`` is rank r's host; sends between ranks on one host are instantaneous."""
    paths = Paths(spec)
    by_coll: dict[int, list[list[Step]]] = defaultdict(lambda: [[] for _ in hosts])
    for r, prog in enumerate(schedule.programs):
        for st in prog:
            by_coll[st.collective][r].append(st)
    return {cid: _span(progs, hosts, paths, framing, prop_s)
            for cid, progs in sorted(by_coll.items())}


@dataclass
class _Flow:
    start: float      # the sending step's start
    arrive: float     # the last packet at the receiver
    acked: float      # its ACK back at the sender
    wire: int         # wire bytes


def _span(progs: list[list[Step]], hosts: Sequence[str], paths: Paths, fr: Framing,
          prop_s: float) -> float:
    """The longest chain of one collective's steps, every rank entering at 0."""
    sent_here = {s.flow for prog in progs for st in prog for s in st.sends}
    flows: dict[int, _Flow] = {}
    ptr = [0] * len(progs)
    start: list[float | None] = [None] * len(progs)
    sends_acked = [0.0] * len(progs)   # the current step's sends, all acknowledged (bound)
    free = [0.0] * len(progs)          # when rank r's previous step finished
    end = 0.0
    pending = sum(map(len, progs))

    def post(r: int, st: Step, s0: float) -> float:
        """Register the step's flows; return when all of them are acknowledged, at best."""
        src = hosts[r]
        nic = paths.nic_inv(src)
        total, acks = 0, []
        for snd in st.sends:
            wb = fr.wire_bytes(snd.bytes)
            dst = hosts[snd.dst]
            if dst == src:
                flows[snd.flow] = _Flow(s0, s0, s0, 0)
                continue
            total += wb
            p = paths.between(src, dst)
            tail = p.tail_s(prop_s, fr.last_frame_bits(snd.bytes))
            back = paths.between(dst, src).trip_s(prop_s, fr.ack * 8)
            arrive = s0 + wb * 8 * nic + tail
            flows[snd.flow] = _Flow(s0, arrive, arrive + back, wb)
            acks.append(tail + back)
        # the step's sends share one NIC: the last of them is acknowledged no sooner than
        # all their bytes plus the shortest tail and ACK trip
        union = s0 + total * 8 * nic + min(acks) if acks else s0
        return max([union, *(flows[s.flow].acked for s in st.sends)])

    while pending:
        moved = False
        for r, prog in enumerate(progs):
            while ptr[r] < len(prog):
                st = prog[ptr[r]]
                if start[r] is None:
                    start[r] = free[r]
                    sends_acked[r] = post(r, st, free[r])
                    moved = True
                if any(rv.flow in sent_here and rv.flow not in flows for rv in st.recvs):
                    break                   # its sender has not reached that step yet
                s0 = start[r]
                assert s0 is not None
                fin = s0
                ins = [flows[rv.flow] for rv in st.recvs if rv.flow in flows]
                if ins:
                    # the receives share one NIC as well
                    fin = max(fin, *(f.arrive for f in ins),
                              min(f.start for f in ins)
                              + sum(f.wire for f in ins) * 8 * paths.nic_inv(hosts[r]))
                if st.wait_sends:
                    fin = max(fin, sends_acked[r])
                fin = max([fin, *(flows[fl].acked for fl in st.wait_acked if fl in flows)])
                free[r] = fin
                end = max(end, fin)
                start[r] = None
                ptr[r] += 1
                pending -= 1
                moved = True
        if not moved:
            return math.nan   # a wait no step of this collective can satisfy
    return end
