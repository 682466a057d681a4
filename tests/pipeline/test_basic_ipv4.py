"""The vertical slice: parser, LPM table, actions, checksum verify/update, deparser."""

from __future__ import annotations

import pytest
from pipeline_programs import basic_ipv4
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import ARP, Ether

from p4switch.pipeline import Pipeline
from p4switch.pipeline.api import Drop, ExactMatch, LpmMatch, StateCode, StateError, TableEntry


@pytest.fixture
def pipe() -> Pipeline:
    p = Pipeline(basic_ipv4())
    p.table_add("ipv4_lpm", TableEntry(
        match={"hdr.ipv4.dstAddr": LpmMatch(0x0A000100, 24)}, action="ipv4_forward",
        params={"dstAddr": 0x000000000102, "port": 2}))
    p.table_add("MyIngress.ipv4_lpm", TableEntry(
        match={"hdr.ipv4.dstAddr": LpmMatch(0x0A000000, 8)}, action="MyIngress.ipv4_forward",
        params={"dstAddr": 0x000000000103, "port": 3}))
    p.table_add("ipv4_lpm", TableEntry(
        match={"hdr.ipv4.dstAddr": LpmMatch(0x0A000105, 32)}, action="ipv4_forward",
        params={"dstAddr": 0x000000000105, "port": 5}))
    return p


def pkt(dst: str, ttl: int = 64) -> Ether:
    return (Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:aa")
            / IP(src="10.0.0.1", dst=dst, ttl=ttl) / TCP(sport=1234, dport=80) / b"payload!")


def expected(dst: str, dmac: str, ttl: int = 64) -> bytes:
    # what basic.p4 does: src mac <- old dst mac, dst mac <- table param, ttl - 1, new checksum
    return bytes(Ether(src="00:00:00:00:00:aa", dst=dmac)
                 / IP(src="10.0.0.1", dst=dst, ttl=ttl - 1) / TCP(sport=1234, dport=80)
                 / b"payload!")


@pytest.mark.parametrize(("dst", "port", "dmac"), [
    ("10.0.1.7", 2, "00:00:00:00:01:02"),    # /24
    ("10.0.1.5", 5, "00:00:00:00:01:05"),    # /32 beats /24
    ("10.9.9.9", 3, "00:00:00:00:01:03"),    # /8
])
def test_lpm_forwarding_rewrites_and_checksum(pipe: Pipeline, dst: str, port: int,
                                              dmac: str) -> None:
    res = pipe.process(bytes(pkt(dst)), 1, 1000)
    assert res.drops == []
    assert len(res.outputs) == 1
    out = res.outputs[0]
    assert out.port == port
    assert out.data == expected(dst, dmac)
    # scapy agrees the IPv4 checksum is right
    parsed = Ether(out.data)
    chk = parsed[IP].chksum
    del parsed[IP].chksum
    assert IP(bytes(parsed[IP]))[IP].chksum == chk


def test_miss_runs_default_drop(pipe: Pipeline) -> None:
    res = pipe.process(bytes(pkt("192.168.0.1")), 1, 0)
    assert res.outputs == []
    assert res.drops == [Drop("mark_to_drop")]


def test_non_ipv4_goes_to_port_0_unchanged(pipe: Pipeline) -> None:
    # egress_spec is 0 when ingress never sets it: BMv2 sends such packets to port 0
    data = bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src="00:00:00:00:00:01") / ARP())
    res = pipe.process(data, 4, 0)
    assert [(o.port, o.data) for o in res.outputs] == [(0, data)]


def test_truncated_ipv4_is_parser_error_not_drop(pipe: Pipeline) -> None:
    data = bytes(pkt("10.0.1.7"))[:14 + 10]  # Ethernet + half an IPv4 header
    res = pipe.process(data, 1, 0)
    # ipv4 invalid -> table not applied -> egress_spec 0 -> out on port 0 with the bytes intact
    assert [(o.port, o.data) for o in res.outputs] == [(0, data)]


def test_bad_checksum_sets_checksum_error(pipe: Pipeline) -> None:
    p = pkt("10.0.1.7")
    p[IP].chksum = 0x1234
    hdr, meta, sm, ctx = _run_ingress_only(pipe, bytes(p))
    assert sm.f_checksum_error == 1
    good = _run_ingress_only(pipe, bytes(pkt("10.0.1.7")))[2]
    assert good.f_checksum_error == 0


def _run_ingress_only(pipe: Pipeline, data: bytes):
    res = pipe.ingress(data, 1, 0)
    st = res.jobs[0].state
    return st.hdr, st.meta, st.sm, None


def test_standard_metadata_in_ingress_and_egress(pipe: Pipeline) -> None:
    from p4switch.pipeline.api import QueueingMetadata

    data = bytes(pkt("10.0.1.7"))
    res = pipe.ingress(data, 7, 12345)
    (job,) = res.jobs
    sm = job.state.sm
    assert (sm.f_ingress_port, sm.f_packet_length, sm.f_ingress_global_timestamp) == (
        7, len(data), 12345)
    assert sm.f_instance_type == 0 and sm.f_parser_error == 0
    assert job.egress_port == 2 and job.packet_length == len(data)
    eres = pipe.egress(job, 12400, QueueingMetadata(enq_timestamp=12350, enq_qdepth=3,
                                                    deq_timedelta=50, deq_qdepth=2))
    assert (sm.f_egress_port, sm.f_egress_global_timestamp, sm.f_enq_timestamp,
            sm.f_enq_qdepth, sm.f_deq_timedelta, sm.f_deq_qdepth) == (2, 12400, 12350, 3, 50, 2)
    assert eres.outputs[0].port == 2


def test_state_errors_leave_state_unchanged(pipe: Pipeline) -> None:
    before = pipe.table_entries("ipv4_lpm")
    bad = [
        ("nope", TableEntry(match={}, action="ipv4_forward"), StateCode.NOT_FOUND),
        ("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0A000100, 24)},
                                action="ipv4_forward", params={"dstAddr": 1, "port": 1}),
         StateCode.ALREADY_EXISTS),
        ("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0A000101, 24)},
                                action="ipv4_forward", params={"dstAddr": 1, "port": 1}),
         StateCode.INVALID_ARGUMENT),  # bits past the prefix
        ("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0, 33)},
                                action="ipv4_forward", params={"dstAddr": 1, "port": 1}),
         StateCode.INVALID_ARGUMENT),
        ("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": ExactMatch(1)},
                                action="ipv4_forward", params={"dstAddr": 1, "port": 1}),
         StateCode.INVALID_ARGUMENT),  # wrong match kind
        ("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0B000000, 8)},
                                action="ipv4_forward", params={"dstAddr": 1, "port": 512}),
         StateCode.INVALID_ARGUMENT),  # port does not fit bit<9>
        ("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0B000000, 8)},
                                action="ipv4_forward", params={"dstAddr": 1}),
         StateCode.INVALID_ARGUMENT),  # missing param
        ("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0B000000, 8)},
                                action="ipv4_forward",
                                params={"dstAddr": 1, "port": 1, "x": 2}),
         StateCode.INVALID_ARGUMENT),  # extra param
        ("ipv4_lpm", TableEntry(match={"hdr.ipv4.dst": LpmMatch(0x0B000000, 8)},
                                action="ipv4_forward", params={"dstAddr": 1, "port": 1}),
         StateCode.INVALID_ARGUMENT),  # unknown key
        ("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0B000000, 8)},
                                action="ipv4_forward", params={"dstAddr": 1, "port": 1},
                                priority=3),
         StateCode.INVALID_ARGUMENT),  # priority in an lpm table
    ]
    for table, entry, code in bad:
        with pytest.raises(StateError) as ei:
            pipe.table_add(table, entry)
        assert ei.value.code == code, (entry, ei.value)
    with pytest.raises(StateError) as ei:
        pipe.table_add("ipv4_lpm", TableEntry(
            match={"hdr.ipv4.dstAddr": LpmMatch(0x0B000000, 8)}, action="nosuch"))
    assert ei.value.code == StateCode.NOT_FOUND
    assert pipe.table_entries("ipv4_lpm") == before


def test_modify_delete_default(pipe: Pipeline) -> None:
    m = {"hdr.ipv4.dstAddr": LpmMatch(0x0A000100, 24)}
    pipe.table_modify("ipv4_lpm", TableEntry(match=m, action="ipv4_forward",
                                             params={"dstAddr": 0xAB, "port": 9}))
    assert pipe.process(bytes(pkt("10.0.1.7")), 1, 0).outputs[0].port == 9
    pipe.table_delete("ipv4_lpm", m)
    assert pipe.process(bytes(pkt("10.0.1.7")), 1, 0).outputs[0].port == 3  # falls to /8
    with pytest.raises(StateError) as ei:
        pipe.table_delete("ipv4_lpm", m)
    assert ei.value.code == StateCode.NOT_FOUND
    pipe.table_set_default("ipv4_lpm", "ipv4_forward", {"dstAddr": 0xCC, "port": 11})
    assert pipe.process(bytes(pkt("172.16.0.1")), 1, 0).outputs[0].port == 11
    d = pipe.table_get_default("ipv4_lpm")
    assert d.action == "MyIngress.ipv4_forward" and d.params == {"dstAddr": 0xCC, "port": 11}
    pipe.table_clear("ipv4_lpm")
    assert pipe.table_entries("ipv4_lpm") == []


def test_table_full_is_resource_exhausted() -> None:
    prog = basic_ipv4()
    prog.controls["MyIngress"].tables["ipv4_lpm"].size = 2
    p = Pipeline(prog)
    for i in range(2):
        p.table_add("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(i << 24, 8)},
                                           action="NoAction"))
    with pytest.raises(StateError) as ei:
        p.table_add("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(9 << 24, 8)},
                                           action="NoAction"))
    assert ei.value.code == StateCode.RESOURCE_EXHAUSTED
