"""Externs, replication and v1model packet-path behaviour on small hand-built programs."""

from __future__ import annotations

import pytest
from pipeline_irb import (
    CLONE_TYPE,
    COUNTER_TYPE,
    HASH_ALGO,
    METER_TYPE,
    SM,
    action,
    assign,
    b,
    bin_,
    c,
    call,
    enum,
    if_,
    inst,
    lst,
    path,
    struct,
    v,
    valid,
)
from pipeline_programs import ETH_HDRS, eth_program

from p4switch import ir
from p4switch.pipeline import BuildError, Pipeline
from p4switch.pipeline.api import Digest, Drop, MeterConfig, Replica, StateCode, StateError
from p4switch.pipeline.hashes import crc16_arc, crc32, pack_fields

hdr = v("hdr", ETH_HDRS)
sm = v("standard_metadata", SM)
FRAME = bytes.fromhex("0000000000aa" "000000000001" "0800") + b"payload-bytes"


def meta_t(*fields: tuple[str, int], fl: dict[str, str] | None = None) -> ir.StructType:
    ann = {n: (("field_list", body),) for n, body in (fl or {}).items()}
    return struct("metadata", *[(n, b(w)) for n, w in fields], annotations=ann)


def job_meta(p: Pipeline, data: bytes = FRAME, port: int = 1, now: int = 0):
    res = p.ingress(data, port, now)
    assert len(res.jobs) == 1, res
    return res.jobs[0].state


def out_port(port: int) -> ir.Stmt:
    return assign(path(sm, "egress_spec"), c(port, b(9)))


# -- registers and counters ----------------------------------------------------------------
def test_register_read_write_and_out_of_range() -> None:
    M = meta_t(("a", 32), ("b", 32), ("oob", 32))
    md = v("meta", M)
    regs = [inst("r", "register", [c(8, b(32))], (b(32),))]
    body = [
        call("write", c(3, b(32)), c(0xDEAD, b(32)), instance="r"),
        call("write", c(8, b(32)), c(0xBEEF, b(32)), instance="r"),  # out of range: ignored
        call("read", path(md, "a"), c(3, b(32)), instance="r"),
        assign(path(md, "oob"), c(77, b(32))),
        call("read", path(md, "oob"), c(100, b(32)), instance="r"),  # out of range: 0
        out_port(1),
    ]
    p = Pipeline(eth_program(M, body, instances=regs))
    st = job_meta(p)
    assert st.meta.f_a == 0xDEAD and st.meta.f_oob == 0
    assert p.register_read("r", 3) == 0xDEAD
    assert [p.register_read("MyIngress.r", i) for i in range(8)].count(0) == 7
    p.register_write("r", 1, 5)
    assert p.register_read("r", 1) == 5
    with pytest.raises(StateError) as ei:
        p.register_read("r", 8)
    assert ei.value.code == StateCode.OUT_OF_RANGE
    with pytest.raises(StateError) as ei:
        p.register_write("r", 1, 1 << 32)
    assert ei.value.code == StateCode.INVALID_ARGUMENT
    assert p.register_read("r", 1) == 5
    with pytest.raises(StateError) as ei:
        p.register_read("nope", 0)
    assert ei.value.code == StateCode.NOT_FOUND
    assert p.register_size("r") == 8


def test_counter_counts_packets_and_packet_length_bytes() -> None:
    M = meta_t()
    cnt = [inst("c", "counter", [c(4, b(32)), enum(COUNTER_TYPE, "packets_and_bytes")])]
    body = [call("count", ir.Cast(path(sm, "ingress_port"), type=b(32)), instance="c"),
            out_port(1)]
    p = Pipeline(eth_program(M, body, instances=cnt))
    for _ in range(3):
        p.process(FRAME, 2, 0)
    p.process(FRAME + b"xx", 2, 0)
    p.process(FRAME, 9, 0)  # index 9 >= size 4: not counted
    assert p.counter_read("c", 2) == (4, 4 * len(FRAME) + 2)
    assert p.counter_read("c", 0) == (0, 0)
    p.counter_write("c", 2, 1, 2)
    assert p.counter_read("c", 2) == (1, 2)
    with pytest.raises(StateError) as ei:
        p.counter_read("c", 4)
    assert ei.value.code == StateCode.OUT_OF_RANGE
    assert p.counter_size("c") == 4


def test_meter_trtcm_colours_with_time() -> None:
    M = meta_t(("colour", 2))
    md = v("meta", M)
    mtr = [inst("m", "meter", [c(2, b(32)), enum(METER_TYPE, "packets")])]
    body = [call("execute_meter", c(0, b(32)), path(md, "colour"), instance="m"), out_port(1)]
    p = Pipeline(eth_program(M, body, instances=mtr))
    # unconfigured: GREEN
    assert job_meta(p).meta.f_colour == 0
    # CIR 1 pkt/s burst 1, PIR 2 pkt/s burst 2 -> green, yellow, red at the same instant
    p.meter_set("m", 0, MeterConfig(cir=1, cburst=1, pir=2, pburst=2))
    assert p.meter_get("m", 0) == MeterConfig(1, 1, 2, 2)
    colours = [job_meta(p, now=1_000_000).meta.f_colour for _ in range(3)]
    assert colours == [0, 1, 2]
    # one second later both buckets refilled by 1 and 2 tokens: green again
    assert job_meta(p, now=2_000_000).meta.f_colour == 0
    p.meter_set("m", 0, None)
    assert job_meta(p, now=2_000_000).meta.f_colour == 0
    with pytest.raises(StateError) as ei:
        p.meter_set("m", 0, MeterConfig(cir=5, cburst=1, pir=1, pburst=1))
    assert ei.value.code == StateCode.INVALID_ARGUMENT


# -- hash, random ----------------------------------------------------------------------------
def test_hash_base_plus_mod_and_invalid_header_skipped() -> None:
    H2 = struct("headers", ("ethernet", ETH_HDRS.field_type("ethernet")),
                ("other", ETH_HDRS.field_type("ethernet")))
    h = v("hdr", H2)
    M = meta_t(("h16", 16), ("h32", 32), ("hid", 16), ("x", 12))
    md = v("meta", M)
    data = lst(path(h, "ethernet.etherType"), path(md, "x"), path(h, "other.etherType"))
    body = [
        assign(path(md, "x"), c(0xABC, b(12))),
        call("hash", path(md, "h16"), enum(HASH_ALGO, "crc16"), c(10, b(16)), data,
             c(1000, b(32))),
        call("hash", path(md, "h32"), enum(HASH_ALGO, "crc32"), c(0, b(32)), data,
             c(0, b(64))),
        call("hash", path(md, "hid"), enum(HASH_ALGO, "identity"), c(0, b(16)), data,
             c(65536, b(32))),
        out_port(1),
    ]
    p = Pipeline(eth_program(M, body, headers=H2))
    st = job_meta(p)
    # hdr.other is invalid, so its field is skipped: input = etherType(16) ++ x(12) -> 28 bits
    raw = pack_fields([(0x0800, 16), (0xABC, 12)])
    assert raw == bytes.fromhex("0800abc0")
    assert st.meta.f_h16 == 10 + crc16_arc(raw) % 1000
    assert st.meta.f_h32 == crc32(raw)  # max 0: p4switch documents base + H
    assert st.meta.f_hid == int.from_bytes(raw, "big") % 65536


def test_unsupported_hash_algorithm_is_build_error() -> None:
    M = meta_t(("h", 16))
    md = v("meta", M)
    body = [call("hash", path(md, "h"), enum(HASH_ALGO, "crc16_custom"), c(0, b(16)),
                 lst(path(hdr, "ethernet.etherType")), c(16, b(32)))]
    with pytest.raises(BuildError, match="crc16_custom"):
        Pipeline(eth_program(M, body))


def test_random_is_seeded_and_in_range() -> None:
    M = meta_t(("r", 8))
    md = v("meta", M)
    body = [call("random", path(md, "r"), c(3, b(8)), c(9, b(8))), out_port(1)]
    prog = eth_program(M, body)
    a = [job_meta(p).meta.f_r for p in [Pipeline(prog, seed=7)] for _ in range(50)]
    p2 = Pipeline(prog, seed=7)
    assert a == [job_meta(p2).meta.f_r for _ in range(50)]
    assert set(a) <= set(range(3, 10)) and len(set(a)) > 3


# -- replication -----------------------------------------------------------------------------
def _stamp_egress() -> list[ir.Stmt]:
    # egress writes instance_type and egress_rid into the frame so tests can see them
    return [
        assign(path(hdr, "ethernet.srcAddr"),
               ir.Cast(path(sm, "instance_type"), type=b(48))),
        assign(path(hdr, "ethernet.etherType"), path(sm, "egress_rid")),
    ]


def _stamp(data: bytes) -> tuple[int, int]:
    return int.from_bytes(data[6:12], "big"), int.from_bytes(data[12:14], "big")


def test_multicast_replicas_with_rid_and_instance_type() -> None:
    M = meta_t()
    body = [assign(path(sm, "mcast_grp"), c(5, b(16)))]
    p = Pipeline(eth_program(M, body, egress=_stamp_egress()))
    p.mcast_group_set(5, [Replica(1, 10), Replica(2, 20), Replica(3, 30)])
    res = p.process(FRAME, 0, 0)
    got = sorted((o.port, _stamp(o.data)) for o in res.outputs)
    assert got == [(1, (5, 10)), (2, (5, 20)), (3, (5, 30))]  # REPLICATION = 5
    p.mcast_group_delete(5)
    assert p.process(FRAME, 0, 0).drops[0].reason == "no_egress"


def test_mark_to_drop_clears_mcast_grp() -> None:
    M = meta_t()
    body = [assign(path(sm, "mcast_grp"), c(5, b(16))), call("mark_to_drop", sm)]
    p = Pipeline(eth_program(M, body))
    p.mcast_group_set(5, [Replica(1, 0)])
    res = p.process(FRAME, 0, 0)
    assert res.outputs == [] and res.drops == [Drop("mark_to_drop")]


def test_i2e_clone_sends_original_packet_with_field_list() -> None:
    M = meta_t(("keep", 8), ("lose", 8), fl={"keep": "1"})
    md = v("meta", M)
    body = [
        assign(path(md, "keep"), c(7, b(8))), assign(path(md, "lose"), c(9, b(8))),
        assign(path(hdr, "ethernet.dstAddr"), c(0xFFFF, b(48))),  # the clone must not see this
        call("clone_preserving_field_list", enum(CLONE_TYPE, "I2E"), c(4, b(32)), c(1, b(8))),
        out_port(2),
    ]
    p = Pipeline(eth_program(M, body))
    p.clone_session_set(4, [Replica(9, 0)])
    res = p.ingress(FRAME, 1, 0)
    clone = next(j for j in res.jobs if j.egress_port == 9)
    orig = next(j for j in res.jobs if j.egress_port == 2)
    assert clone.instance_type == 1 and orig.instance_type == 0
    assert clone.state.meta.f_keep == 7 and clone.state.meta.f_lose == 0
    assert clone.state.sm.f_instance_type == 1 and clone.state.sm.f_ingress_port == 1
    outs = {o.port: o.data for o in p.process(FRAME, 1, 0).outputs}
    assert outs[9] == FRAME  # the original bytes
    assert outs[2][:6] == bytes.fromhex("00000000ffff")
    p.clone_session_delete(4)
    assert [o.port for o in p.process(FRAME, 1, 0).outputs] == [2]


def test_e2e_clone_copies_egress_headers() -> None:
    M = meta_t()
    eg = [assign(path(hdr, "ethernet.etherType"), c(0x1234, b(16))),
          if_(bin_("==", path(sm, "instance_type"), c(0, b(32))),
              [call("clone", enum(CLONE_TYPE, "E2E"), c(3, b(32)))])]
    p = Pipeline(eth_program(M, [out_port(2)], egress=eg))
    p.clone_session_set(3, [Replica(8, 0)])
    res = p.process(FRAME, 1, 0)
    outs = {o.port: o.data for o in res.outputs}
    assert set(outs) == {2, 8}
    assert outs[8][12:14] == b"\x12\x34" and outs[2][12:14] == b"\x12\x34"


def test_resubmit_preserves_field_list_and_reparses_original() -> None:
    M = meta_t(("pass_", 8), fl={"pass_": "1"})
    md = v("meta", M)
    body = [if_(bin_("==", path(md, "pass_"), c(0, b(8))), [
        assign(path(md, "pass_"), c(3, b(8))),
        assign(path(hdr, "ethernet.dstAddr"), c(1, b(48))),
        call("resubmit_preserving_field_list", c(1, b(8))),
    ], [assign(path(sm, "egress_spec"), ir.Cast(path(md, "pass_"), type=b(9)))])]
    p = Pipeline(eth_program(M, body))
    res = p.process(FRAME, 1, 0)
    assert [(o.port, o.data) for o in res.outputs] == [(3, FRAME)]


def test_recirculate_reenters_ingress_with_deparsed_packet() -> None:
    M = meta_t(("n", 8), fl={"n": "1"})
    md = v("meta", M)
    ing = [if_(bin_("==", path(sm, "instance_type"), c(4, b(32))),
               [assign(path(sm, "egress_spec"), ir.Cast(path(md, "n"), type=b(9)))],
               [out_port(1)])]
    # BMv2 sets instance_type back to NORMAL when it enqueues, so egress tells the passes
    # apart with the preserved metadata field
    eg = [if_(bin_("==", path(md, "n"), c(0, b(8))), [
        assign(path(md, "n"), c(6, b(8))),
        assign(path(hdr, "ethernet.etherType"), c(0x0999, b(16))),
        call("recirculate_preserving_field_list", c(1, b(8))),
    ])]
    p = Pipeline(eth_program(M, ing, egress=eg))
    res = p.process(FRAME, 1, 0)
    assert [o.port for o in res.outputs] == [6]
    assert res.outputs[0].data[12:14] == b"\x09\x99"


def test_truncate_and_clone_session_truncation() -> None:
    M = meta_t()
    p = Pipeline(eth_program(M, [call("truncate", c(10, b(32))), out_port(1)]))
    assert p.process(FRAME, 0, 0).outputs[0].data == FRAME[:10]


# -- digests, logs, assert, exit --------------------------------------------------------------
def test_digest_log_assert_exit() -> None:
    M = meta_t(("x", 8))
    md = v("meta", M)
    D = struct("learn_t", ("src", b(48)), ("port", b(9)))
    body = [
        call("digest", c(1, b(32)), ir.ListExpr([path(hdr, "ethernet.srcAddr"),
                                                 path(sm, "ingress_port")], type=D),
             type_args=(D,)),
        call("log_msg", c("port {} type {}", ir.StringType()),
             lst(path(sm, "ingress_port"), path(hdr, "ethernet.etherType"))),
        out_port(4),
        ir.Exit(),
        out_port(5),
    ]
    p = Pipeline(eth_program(M, body))
    res = p.process(FRAME, 3, 0)
    assert res.digests == [Digest("learn_t", 1, {"src": 1, "port": 3})]
    assert res.logs == ["port 3 type 2048"]
    assert [o.port for o in res.outputs] == [4]  # exit skipped the second assignment
    p2 = Pipeline(eth_program(M, [call("assert", bin_("==", path(md, "x"), c(1, b(8)))),
                                  out_port(1)]))
    r2 = p2.process(FRAME, 0, 0)
    assert r2.outputs == [] and r2.drops[0].reason == "assert"


# -- direct counters --------------------------------------------------------------------------
def test_direct_counter_counts_hits_only() -> None:
    from pipeline_irb import key, table

    from p4switch.pipeline.api import ExactMatch, TableEntry

    M = meta_t()
    t = table("t", [key(path(hdr, "ethernet.etherType"), "exact", "hdr.ethernet.etherType")],
              ["MyIngress.fwd", "NoAction"], "NoAction", direct_counter="dc")
    acts = [action("MyIngress.fwd", [("port", 9)],
                   [assign(path(sm, "egress_spec"), v("port", b(9)))])]
    dcs = [inst("dc", "direct_counter", [enum(COUNTER_TYPE, "packets_and_bytes")])]
    p = Pipeline(eth_program(M, [ir.ApplyTable("t")], actions=acts, tables=[t], instances=dcs))
    m = {"hdr.ethernet.etherType": ExactMatch(0x0800)}
    p.table_add("t", TableEntry(match=m, action="fwd", params={"port": 3}))
    p.process(FRAME, 0, 0)
    p.process(FRAME, 0, 0)
    p.process(FRAME[:12] + b"\x86\xdd" + FRAME[14:], 0, 0)  # miss
    (e,) = p.table_entries("t")
    assert (e.packets, e.bytes) == (2, 2 * len(FRAME))
    p.direct_counter_write("t", m, 0, 10, 20)
    assert (p.table_entries("t")[0].packets, p.table_entries("t")[0].bytes) == (10, 20)
    assert p.resolve("direct_counter", "dc") == "MyIngress.dc"


def test_valid_helper_used() -> None:
    assert valid(path(hdr, "ethernet")).type == ir.BoolType()
