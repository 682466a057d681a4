"""PTF test cases of p4fabric's own, written the way a BMv2 user's suite is: a P4Runtime client
pushes p4c's output (BMv2 JSON inside PI's ``p4.tmp.P4DeviceConfig``, with p4c's P4Info) and
programs entries by P4Info name, then scapy packets go in and are checked on the ports. Run by
``ptf`` against p4switch started as ``p4switch-ss`` (tests/ptf/test_ptf_p4switch_ss.py sets up
the namespace and passes the files as test params).

Port map (ptf and switch alike): 1, 2, 3 data ports. ``p4info`` params are text-format files.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import ptf
import ptf.testutils as tu
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime"))
from runtime_client import RawClient  # noqa: E402  (the project's minimal P4Runtime client)

from p4switch.pi_device_config import wrap  # noqa: E402  (PI's P4DeviceConfig, byte-identical)

U = p4runtime_pb2.Update
_ELECTION = itertools.count(1)
ROUTER = "00:00:00:00:0a:0b"


def _params() -> dict[str, str]:
    return tu.test_params_get()


class P4RuntimeTest(BaseTest):
    """Connects as primary to the switch under test and pushes ``<prefix>json`` +
    ``<prefix>p4info`` (wrapped unless ``wrapped`` is False)."""

    prefix = ""
    wrapped = True
    device = "json"

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        p = _params()
        # a fresh, higher election id per case: the previous case's stream may still be
        # closing on the server, and a second client may not claim the primary's id
        self.client = RawClient(p["grpc_addr"], election_id=(0, next(_ELECTION)),
                                device_id=int(p.get("device_id", "0")))
        arb = self.client.arbitrate()
        assert arb.arbitration.status.code == 0, arb
        self.info = text_format.Parse(Path(p[self.prefix + "p4info"]).read_text(),
                                      p4info_pb2.P4Info())
        data = Path(p[self.prefix + self.device]).read_bytes()
        self.client.set_pipeline(self.info, wrap(data) if self.wrapped else data)

    def tearDown(self) -> None:
        self.client.close()
        BaseTest.tearDown(self)

    # -- P4Info lookups by name, as P4Runtime clients do -----------------------------------
    def _obj(self, kind: str, name: str):
        for o in getattr(self.info, kind):
            if o.preamble.name == name:
                return o
        raise KeyError(f"{kind} {name}")

    def entry(self, table: str, match: dict, action: str, params: dict, utype=U.INSERT,
              priority: int = 0) -> U:
        t = self._obj("tables", table)
        a = self._obj("actions", action)
        upd = U(type=utype)
        te = upd.entity.table_entry
        te.table_id = t.preamble.id
        te.priority = priority
        fields = {f.name: f for f in t.match_fields}
        for name, value in match.items():
            f = fields[name]
            m = te.match.add(field_id=f.id)
            nbytes = (f.bitwidth + 7) // 8
            if f.match_type == p4info_pb2.MatchField.LPM:
                v, plen = value
                m.lpm.value, m.lpm.prefix_len = v.to_bytes(nbytes, "big"), plen
            elif f.match_type == p4info_pb2.MatchField.RANGE:
                lo, hi = value
                m.range.low, m.range.high = lo.to_bytes(nbytes, "big"), hi.to_bytes(nbytes, "big")
            else:
                m.exact.value = value.to_bytes(nbytes, "big")
        te.action.action.action_id = a.preamble.id
        for p in a.params:
            te.action.action.params.add(param_id=p.id, value=params[p.name].to_bytes(
                (p.bitwidth + 7) // 8, "big"))
        return upd

    def table_entries(self, table: str) -> list:
        e = p4runtime_pb2.Entity()
        e.table_entry.table_id = self._obj("tables", table).preamble.id
        return self.client.read(e)


def ip_int(s: str) -> int:
    a, b, c, d = (int(x) for x in s.split("."))
    return a << 24 | b << 16 | c << 8 | d


def udp(dst: str, ttl: int = 64, src: str = "10.1.0.1", sport: int = 1234,
        eth_dst: str = ROUTER) -> Ether:
    return Ether(dst=eth_dst, src="00:00:00:00:00:01") / IP(src=src, dst=dst, ttl=ttl) / \
        UDP(sport=sport, dport=4791) / (b"\x00" * 18)


def routed(pkt: Ether, dmac: str, smac: str) -> Ether:
    """What a router makes of ``pkt``: new MACs, TTL - 1, the header checksum redone."""
    out = pkt.copy()
    out[Ether].dst, out[Ether].src = dmac, smac
    out[IP].ttl -= 1
    del out[IP].chksum
    return Ether(bytes(out))


# ============================================================================================
# tests/stf/programs/ipv4_lpm.p4: MyIngress.ipv4_lpm (lpm) -> forward(dmac, smac, port) | drop
# ============================================================================================

class Ipv4Test(P4RuntimeTest):
    def add_route(self, prefix: str, plen: int, port: int, dmac: int = 0x020000000001,
                  smac: int = 0x020000000099) -> None:
        self.client.write(self.entry("MyIngress.ipv4_lpm",
                                     {"hdr.ipv4.dstAddr": (ip_int(prefix), plen)},
                                     "MyIngress.forward",
                                     {"dmac": dmac, "smac": smac, "port": port}))


class Ipv4Forward(Ipv4Test):
    """A routed packet leaves the route's port, MACs rewritten, TTL decremented."""

    def runTest(self) -> None:
        self.add_route("10.0.2.0", 24, 2)
        pkt = udp("10.0.2.7")
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, routed(pkt, "02:00:00:00:00:01", "02:00:00:00:00:99"), 2)
        tu.verify_no_other_packets(self)


class Ipv4LongestPrefixWins(Ipv4Test):
    def runTest(self) -> None:
        self.add_route("10.0.0.0", 8, 2)
        self.add_route("10.0.3.0", 24, 3, dmac=0x020000000003)
        pkt = udp("10.0.3.9")
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, routed(pkt, "02:00:00:00:00:03", "02:00:00:00:00:99"), 3)
        other = udp("10.9.9.9")
        tu.send_packet(self, 1, other)
        tu.verify_packet(self, routed(other, "02:00:00:00:00:01", "02:00:00:00:00:99"), 2)
        tu.verify_no_other_packets(self)


class Ipv4MissDrops(Ipv4Test):
    def runTest(self) -> None:
        self.add_route("10.0.2.0", 24, 2)
        tu.send_packet(self, 1, udp("192.168.1.1"))
        tu.verify_no_other_packets(self)


class Ipv4TtlOneDrops(Ipv4Test):
    def runTest(self) -> None:
        self.add_route("10.0.2.0", 24, 2)
        tu.send_packet(self, 1, udp("10.0.2.7", ttl=1))
        tu.verify_no_other_packets(self)


class Ipv4BadChecksumDrops(Ipv4Test):
    def runTest(self) -> None:
        self.add_route("10.0.2.0", 24, 2)
        pkt = udp("10.0.2.7")
        pkt[IP].chksum = 0x1234
        tu.send_packet(self, 1, pkt)
        tu.verify_no_other_packets(self)


class Ipv4ReadBackAndDelete(Ipv4Test):
    """Read returns the entry under p4c's ids; after DELETE the route is gone."""

    def runTest(self) -> None:
        self.add_route("10.0.2.0", 24, 2)
        got = self.table_entries("MyIngress.ipv4_lpm")
        assert len(got) == 1, got
        te = got[0].table_entry
        assert te.table_id == self._obj("tables", "MyIngress.ipv4_lpm").preamble.id
        assert te.action.action.action_id == self._obj("actions",
                                                       "MyIngress.forward").preamble.id
        upd = U(type=U.DELETE)
        upd.entity.table_entry.CopyFrom(te)
        upd.entity.table_entry.ClearField("action")
        self.client.write(upd)
        assert self.table_entries("MyIngress.ipv4_lpm") == []
        tu.send_packet(self, 1, udp("10.0.2.7"))
        tu.verify_no_other_packets(self)


class Ipv4RawJsonWithoutWrapper(Ipv4Forward):
    """simple_switch_grpc's other form: the JSON bytes themselves as the device config."""

    wrapped = False


class Ipv4FromBundle(Ipv4Forward):
    """p4switch's own device config (a source bundle from ``python -m p4switch.compile``)."""

    prefix = "bundle_"
    device = "bin"
    wrapped = False


class Ipv4BundleInWrapper(Ipv4Forward):
    """A p4switch bundle inside PI's wrapper works too (the wrapper is only an envelope)."""

    prefix = "bundle_"
    device = "bin"


# ============================================================================================
# p4src/fabric.p4 from p4c's JSON: routes, an ECMP group, counters and registers over P4Runtime
# ============================================================================================

class FabricTest(P4RuntimeTest):
    prefix = "fabric_"

    def setUp(self) -> None:
        super().setUp()
        for port in (1, 2, 3):
            self.client.write(self.entry("MyEgress.port_smac",
                                         {"standard_metadata.egress_port": port},
                                         "MyEgress.set_smac", {"smac": 0x0200000000A0 + port}))

    def read_counter(self, name: str, index: int) -> tuple[int, int]:
        e = p4runtime_pb2.Entity()
        e.counter_entry.counter_id = self._obj("counters", name).preamble.id
        e.counter_entry.index.index = index
        (got,) = self.client.read(e)
        return got.counter_entry.data.packet_count, got.counter_entry.data.byte_count

    def read_register(self, name: str, index: int) -> int:
        e = p4runtime_pb2.Entity()
        e.register_entry.register_id = self._obj("registers", name).preamble.id
        e.register_entry.index.index = index
        (got,) = self.client.read(e)
        return int.from_bytes(got.register_entry.data.bitstring, "big")


class FabricNextHop(FabricTest):
    """set_nhop: out of its port with the next hop's MAC and the port's router MAC; the
    ingress port's rx counter counts it (read over P4Runtime)."""

    def runTest(self) -> None:
        self.client.write(self.entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr":
                                                            (ip_int("10.5.0.1"), 32)},
                                     "MyIngress.set_nhop", {"port": 3, "dmac": 0x02000000BEEF}))
        before = self.read_counter("MyIngress.port_rx_ctr", 1)[0]
        pkt = udp("10.5.0.1")
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, routed(pkt, "02:00:00:00:be:ef", "02:00:00:00:00:a3"), 3)
        tu.verify_no_other_packets(self)
        assert self.read_counter("MyIngress.port_rx_ctr", 1)[0] == before + 1


class FabricEcmpSpreadsOverMembers(FabricTest):
    """An ECMP group of two members: every flow leaves on one of them, both are used."""

    def runTest(self) -> None:
        self.client.write(self.entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr":
                                                            (ip_int("10.2.0.0"), 16)},
                                     "MyIngress.set_lb_group", {"group_id": 1, "dst_id": 0}))
        self.client.write(self.entry("MyIngress.lb_group", {"meta.lb.group_id": 1},
                                     "MyIngress.lb_ecmp", {"n_members": 2, "seed": 7}))
        for k, port in enumerate((2, 3)):
            self.client.write(self.entry("MyIngress.lb_member",
                                         {"meta.lb.group_id": 1, "meta.lb.member_idx": k},
                                         "MyIngress.set_member",
                                         {"port": port, "dmac": 0x020000000010 + port}))
        used = set()
        for sport in range(1000, 1016):
            pkt = udp("10.2.0.9", sport=sport)
            tu.send_packet(self, 1, pkt)
            outs = [routed(pkt, f"02:00:00:00:00:{0x10 + p:02x}", f"02:00:00:00:00:a{p}")
                    for p in (2, 3)]
            # the member decides both the port and the rewritten MACs
            for p, out in zip((2, 3), outs, strict=True):
                res = tu.dp_poll(self, port_number=p, exp_pkt=out, timeout=0.5)
                if isinstance(res, self.dataplane.PollSuccess):
                    used.add(p)
                    break
            else:
                self.fail(f"flow {sport} left on neither member")
        tu.verify_no_other_packets(self)
        assert used == {2, 3}, used


class FabricDropIsCountedByReason(FabricTest):
    """TTL 1 is dropped with reason DROP_TTL and drop_ctr counts it (P4Runtime counter read)."""

    def runTest(self) -> None:
        before = [self.read_counter("MyIngress.drop_ctr", i)[0] for i in range(16)]
        tu.send_packet(self, 1, udp("10.5.0.1", ttl=1))
        tu.verify_no_other_packets(self)
        after = [self.read_counter("MyIngress.drop_ctr", i)[0] for i in range(16)]
        assert sum(after) - sum(before) == 1, (before, after)


class FabricRotateRegisterOverP4Runtime(FabricTest):
    """Destination rotation keeps its per-destination position in a register, which P4Runtime
    reads (BMv2 answers UNIMPLEMENTED for RegisterEntry; p4switch serves it) and writes."""

    def runTest(self) -> None:
        self.client.write(self.entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr":
                                                            (ip_int("10.3.0.0"), 16)},
                                     "MyIngress.set_lb_group", {"group_id": 2, "dst_id": 3}))
        self.client.write(self.entry("MyIngress.lb_group", {"meta.lb.group_id": 2},
                                     "MyIngress.lb_rotate", {"n_members": 2}))
        for k, port in enumerate((2, 3)):
            self.client.write(self.entry("MyIngress.lb_member",
                                         {"meta.lb.group_id": 2, "meta.lb.member_idx": k},
                                         "MyIngress.set_member",
                                         {"port": port, "dmac": 0x020000000020 + port}))
        def next_port() -> int:
            pkt = udp("10.3.0.9")
            tu.send_packet(self, 1, pkt)
            for p in (2, 3):
                out = routed(pkt, f"02:00:00:00:00:{0x20 + p:02x}", f"02:00:00:00:00:a{p}")
                res = tu.dp_poll(self, port_number=p, exp_pkt=out, timeout=0.5)
                if isinstance(res, self.dataplane.PollSuccess):
                    return p
            self.fail("the packet left on neither member")

        assert [next_port() for _ in range(3)] == [2, 3, 2]
        assert self.read_register("MyIngress.rot_next", 3) == 1  # dst_id 3: member 1 is next
        upd = U(type=U.MODIFY)
        r = upd.entity.register_entry
        r.register_id = self._obj("registers", "MyIngress.rot_next").preamble.id
        r.index.index = 3
        r.data.bitstring = (0).to_bytes(2, "big")
        self.client.write(upd)  # the controller moves the rotation back to member 0
        assert next_port() == 2
        tu.verify_no_other_packets(self)
