"""Test harness for p4src/fabric.p4 on the p4switch pipeline.

The program is compiled once per process (``program()`` is cached); every test builds a fresh
``Fabric`` (a new Pipeline: cheap) and installs state exactly as p4src/README.md's controller
contract says, through the pipeline API only; groups are built by the controller's scheme
registry (model.schemes), so these tests check the entries the controller installs.
Member ``k`` of every group is installed on port ``MEMBER_PORT0 + k`` with next-hop MAC
``member_mac(k)``, so the egress port of a forwarded packet names the chosen member.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from pathlib import Path

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from common.checksum import csum16
from model.entries import Entry
from model.pipeline_target import install_on_pipeline
from model.routing import ecn_entry
from model.schemes import (
    DstRotation,
    Ecmp,
    Flowlet,
    RandomSpray,
    Scheme,
    SwitchContext,
    WhackAMole,
    member_entry,
    wam_range_entries,
)
from p4switch import (
    EgressJob,
    ExactMatch,
    LpmMatch,
    Pipeline,
    ProcessResult,
    Program,
    QueueingMetadata,
    TableEntry,
    compile_file,
)

FABRIC_P4 = Path(__file__).resolve().parents[2] / "p4src" / "fabric.p4"

CPU_PORT = 255
DROP_PORT = 511
IN_PORT = 1
MEMBER_PORT0 = 10
HOST_SMAC = "00:00:00:00:00:aa"
ROUTER_SMAC = 0x02AA00000000  # + port, installed in port_smac when asked

# drop_ctr indexes (p4src/README.md "Drop reasons"), written out here rather than imported
DROP_PARSER_ERROR = 1
DROP_BAD_CHECKSUM = 2
DROP_NOT_IPV4 = 3
DROP_TTL_EXPIRED = 4
DROP_ROUTE_MISS = 5
DROP_ROUTE_BLACKHOLE = 6
DROP_LB_GROUP_MISS = 7
DROP_LB_EMPTY = 8
DROP_LB_MEMBER_MISS = 9
DROP_REASONS = 16
LB_MAX_MEMBERS = 64
FLOWLET_SLOTS = 4096


@functools.cache
def program() -> Program:
    """fabric.p4 compiled by p4switch's front end, once per test session."""
    return compile_file(str(FABRIC_P4))


def member_mac(k: int) -> int:
    return 0x020000000000 + k


def ip_int(s: str) -> int:
    a, b, c, d = (int(x) for x in s.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def udp_pkt(src: str = "10.1.0.1", dst: str = "10.2.0.1", sport: int = 1000,
            dport: int = 4791, ttl: int = 64, payload: bytes = b"p" * 16, **ip_kw: object) -> bytes:
    """An Ethernet/IPv4/UDP frame (RoCEv2-like default port) with correct checksums."""
    return bytes(Ether(src=HOST_SMAC, dst="00:00:00:00:00:01")
                 / IP(src=src, dst=dst, ttl=ttl, **ip_kw) / UDP(sport=sport, dport=dport)
                 / payload)


def tcp_pkt(src: str = "10.1.0.1", dst: str = "10.2.0.1", sport: int = 1000, dport: int = 80,
            ttl: int = 64, payload: bytes = b"t" * 16, **ip_kw: object) -> bytes:
    return bytes(Ether(src=HOST_SMAC, dst="00:00:00:00:00:01")
                 / IP(src=src, dst=dst, ttl=ttl, **ip_kw) / TCP(sport=sport, dport=dport)
                 / payload)


_ETH = bytes.fromhex("000000000001" "0000000000aa" "0800")


def fast_pkt(src: int, dst: int, sport: int = 1000, dport: int = 4791, proto: int = 17,
             ttl: int = 64, payload: bytes = b"p" * 16) -> bytes:
    """The frame udp_pkt()/tcp_pkt() would build (UDP with checksum 0, i.e. none; TCP with a
    20-byte header, flags S and checksum 0), without scapy's ~2 ms per packet: for tests and the
    benchmark that send thousands. test_fabric_forwarding checks it against scapy."""
    if proto == 6:
        l4 = struct.pack(">HHIIBBHHH", sport, dport, 0, 0, 0x50, 0x02, 8192, 0, 0)
    else:
        l4 = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0)
    total = 20 + len(l4) + len(payload)
    hdr = struct.pack(">BBHHHBBHII", 0x45, 0, total, 1, 0, ttl, proto, 0, src, dst)
    hdr = hdr[:10] + struct.pack(">H", csum16(hdr)) + hdr[12:]
    return _ETH + hdr + l4 + payload


class Fabric:
    """One fabric.p4 switch plus controller-contract helpers."""

    def __init__(self, seed: int | None = 1) -> None:
        self.p = Pipeline(program(), drop_port=DROP_PORT, cpu_port=CPU_PORT, seed=seed)
        self.now = 1_000_000  # us; the switch has been up 1 s (see README's flowlet note)
        self._wam_ranges: dict[int, list[Entry]] = {}

    # ---- ipv4_lpm --------------------------------------------------------------------------
    def _route(self, prefix: str, plen: int, action: str, params: dict[str, int]) -> None:
        self.p.table_add("MyIngress.ipv4_lpm", TableEntry(
            match={"hdr.ipv4.dstAddr": LpmMatch(ip_int(prefix), plen)},
            action=action, params=params))

    def route_nhop(self, prefix: str, plen: int, port: int, dmac: int) -> None:
        self._route(prefix, plen, "MyIngress.set_nhop", {"port": port, "dmac": dmac})

    def route_group(self, prefix: str, plen: int, group_id: int, dst_id: int = 0) -> None:
        self._route(prefix, plen, "MyIngress.set_lb_group",
                    {"group_id": group_id, "dst_id": dst_id})

    def route_cpu(self, prefix: str, plen: int) -> None:
        self._route(prefix, plen, "MyIngress.send_to_cpu", {})

    def route_blackhole(self, prefix: str, plen: int) -> None:
        self._route(prefix, plen, "MyIngress.drop_route", {})

    # ---- lb_group / lb_member: through the controller's scheme registry ----------------------
    def group(self, gid: int, scheme: Scheme, n: int, modify: bool = False) -> None:
        """The group's lb_group entry as ``scheme`` installs it for ``n`` member indexes."""
        entry = scheme.group_entry(gid, n, SwitchContext()).to_table_entry()
        (self.p.table_modify if modify else self.p.table_add)("MyIngress.lb_group", entry)

    def group_ecmp(self, gid: int, n: int, seed: int = 0, modify: bool = False) -> None:
        self.group(gid, Ecmp(seed=seed), n, modify)

    def group_flowlet(self, gid: int, n: int, seed: int, timeout_us: int,
                      modify: bool = False) -> None:
        self.group(gid, Flowlet(timeout_us=timeout_us, seed=seed), n, modify)

    def group_random(self, gid: int, n: int, modify: bool = False) -> None:
        self.group(gid, RandomSpray(), n, modify)

    def group_rotate(self, gid: int, n: int, modify: bool = False) -> None:
        self.group(gid, DstRotation(), n, modify)

    def set_member(self, gid: int, idx: int, port: int, dmac: int, modify: bool = False) -> None:
        entry = member_entry(gid, idx, port, dmac).to_table_entry()
        (self.p.table_modify if modify else self.p.table_add)("MyIngress.lb_member", entry)

    def del_member(self, gid: int, idx: int) -> None:
        self.p.table_delete("MyIngress.lb_member", member_entry(gid, idx, 0, 0).match_dict)

    def members(self, gid: int, n: int, port0: int = MEMBER_PORT0) -> None:
        """lb_member entries 0..n-1 -> ports port0+k, MACs member_mac(k)."""
        for k in range(n):
            self.set_member(gid, k, port0 + k, member_mac(k))

    # ---- Whack-a-Mole ------------------------------------------------------------------------
    def group_wam(self, gid: int, log2_m: int, a: int, b: int, balls: Sequence[int],
                  port0: int = MEMBER_PORT0) -> None:
        """lb_wam entry, one range per member with balls, and the members' lb_member entries."""
        assert sum(balls) == 1 << log2_m
        self.group(gid, WhackAMole(log2_m=log2_m, a=a, b=b), len(balls))
        self.wam_ranges(gid, balls)
        for k in range(len(balls)):
            self.set_member(gid, k, port0 + k, member_mac(k))

    def wam_ranges(self, gid: int, balls: Sequence[int]) -> None:
        """(Re)write the group's ball ranges [B_k, B_k + c_k - 1] -> wam_set_member(k)."""
        for e in self._wam_ranges.pop(gid, []):
            self.p.table_delete(e.table, e.match_dict, priority=e.priority)
        self._wam_ranges[gid] = wam_range_entries(gid, balls)
        install_on_pipeline(self.p, self._wam_ranges[gid])

    # ---- egress tables -----------------------------------------------------------------------
    def port_smac(self, port: int, smac: int) -> None:
        self.p.table_add("MyEgress.port_smac", TableEntry(
            match={"standard_metadata.egress_port": ExactMatch(port)},
            action="MyEgress.set_smac", params={"smac": smac}))

    def ecn_threshold(self, port: int, qdepth: int) -> None:
        self.p.table_add("MyEgress.ecn_config", TableEntry(
            match={"standard_metadata.egress_port": ExactMatch(port)},
            action="MyEgress.set_ecn_threshold", params={"qdepth": qdepth}))

    def ecn_ramp(self, port: int, kmin: int, kmax: int) -> None:
        """The controller's ``ecn_config`` entry for a (K_min, K_max) marking."""
        install_on_pipeline(self.p, [ecn_entry(port, (kmin, kmax))])

    # ---- packets -----------------------------------------------------------------------------
    def send(self, data: bytes, port: int = IN_PORT, now: int | None = None) -> ProcessResult:
        """One packet through ingress + egress (empty queues). ``now`` defaults to the last
        time used plus 1 us."""
        if now is None:
            self.now += 1
        else:
            self.now = now
        return self.p.process(data, port, self.now)

    def out_port(self, data: bytes, port: int = IN_PORT, now: int | None = None) -> int | None:
        """Egress port of the single output, None if dropped (fails on multiple outputs)."""
        res = self.send(data, port, now)
        assert len(res.outputs) <= 1, res
        return res.outputs[0].port if res.outputs else None

    def member(self, data: bytes, port: int = IN_PORT, now: int | None = None) -> int:
        """The member index a group chose for this packet (asserts it was forwarded)."""
        out = self.out_port(data, port, now)
        assert out is not None, "packet was dropped"
        return out - MEMBER_PORT0

    def through_queue(self, data: bytes, deq_qdepth: int, port: int = IN_PORT,
                      now: int | None = None) -> list[bytes]:
        """Ingress, then egress as if the queue reported ``deq_qdepth``; returns the outputs."""
        if now is not None:
            self.now = now
        else:
            self.now += 1
        ing = self.p.ingress(data, port, self.now)
        outs: list[bytes] = []
        for job in ing.jobs:
            assert isinstance(job, EgressJob)
            eg = self.p.egress(job, self.now,
                               QueueingMetadata(enq_timestamp=self.now, deq_qdepth=deq_qdepth,
                                                enq_qdepth=deq_qdepth))
            outs.extend(o.data for o in eg.outputs)
        return outs

    # ---- counters / registers ----------------------------------------------------------------
    def drops(self) -> list[int]:
        """Packets counted per drop reason (index 0..15)."""
        return [self.p.counter_read("MyIngress.drop_ctr", i)[0] for i in range(DROP_REASONS)]

    def member_ctr(self, gid: int, idx: int) -> tuple[int, int]:
        return self.p.counter_read("MyIngress.lb_member_ctr", gid * LB_MAX_MEMBERS + idx)

    def reg(self, name: str, index: int) -> int:
        return self.p.register_read(name, index)
