"""Unit tests of the STF reader, value conversions, packet matcher and the runner's checking
logic. They need neither the front end nor the pipeline: the runner is driven with a tiny
hand-built IR program and a fake pipeline that records what it is told."""

from __future__ import annotations

import pytest

from p4switch import ir
from p4switch.pipeline import api
from p4switch.stf import compare, parse_stf
from p4switch.stf import syntax as s
from p4switch.stf.runner import StfRunner
from p4switch.stf.values import match_value

# ------------------------------------------------------------------------------------------
# Parsing
# ------------------------------------------------------------------------------------------


def one(text: str) -> s.Command:
    cmds = parse_stf(text, "t.stf")
    assert len(cmds) == 1
    return cmds[0]


def test_comments_and_blank_lines_are_skipped():
    assert parse_stf("# only a comment\n\n   \t\n# another\n") == []


def test_add_with_priority_qualified_names_and_stack_key():
    cmd = one(
        "add MyIngress.acl 42 hdr.ipv4.dstAddr:0x0a****** stk$1.tag:0b1*0 "
        "MyIngress.set_port(port:3, mac:0x0000aabbccdd)  # trailing comment"
    )
    assert isinstance(cmd, s.Add)
    assert cmd.table == "MyIngress.acl" and cmd.priority == 42
    assert [(k.name, k.value) for k in cmd.keys] == [
        ("hdr.ipv4.dstAddr", "0x0a******"),
        ("stk$1.tag", "0b1*0"),
    ]
    assert cmd.action.name == "MyIngress.set_port"
    assert cmd.action.args == [("port", "3"), ("mac", "0x0000aabbccdd")]
    assert cmd.line == 1


def test_add_without_priority_lpm_len_and_spaces_around_punctuation():
    cmd = one("add ipv4_lpm dstAddr : 0x0a000000 / 8 fwd( port : 1 )")
    assert isinstance(cmd, s.Add)
    assert cmd.priority is None
    assert cmd.keys[0].prefix_len == 8 and cmd.keys[0].value == "0x0a000000"
    assert cmd.action.args == [("port", "1")]


def test_add_with_entry_id_mask_range_and_member_forms():
    cmd = one("add t 7 a:0x10&&&0xf0 b:10->20 act() = A")
    assert isinstance(cmd, s.Add)
    assert cmd.keys[0].mask == "0xf0" and cmd.keys[1].hi == "20" and cmd.handle == "A"
    grp = one("add ecmp hdr.ipv4.dstAddr:0x0a000001 group=5")
    assert isinstance(grp, s.Add) and grp.action.group_id == 5 and grp.action.name is None
    mem = one("add ecmp hdr.ipv4.dstAddr:0x0a000001 member=2")
    assert isinstance(mem, s.Add) and mem.action.member_id == 2


def test_setdefault_and_noarg_action():
    cmd = one("setdefault MyIngress.t drop()")
    assert isinstance(cmd, s.SetDefault)
    assert cmd.table == "MyIngress.t" and cmd.action.name == "drop" and cmd.action.args == []


def test_packet_and_expect_with_spaces_wildcards_and_dollar():
    p = one("packet 3 0011 2233\t44 55")
    assert isinstance(p, s.PacketCmd) and p.port == 3 and p.data == bytes.fromhex("001122334455")
    e = one("expect 4 00 ** 22 3* $")
    assert isinstance(e, s.ExpectCmd) and e.port == 4 and e.pattern == "00**223*$"
    anyp = one("expect 5")
    assert isinstance(anyp, s.ExpectCmd) and anyp.pattern is None


@pytest.mark.parametrize(
    "line, message",
    [
        ("packet 0 0x00", "invalid packet data character 'x'"),
        ("packet 0 001", "odd number of hex digits"),
        ("packet 0 00**", "only allowed in expect"),
        ("frobnicate 1 2", "unsupported STF command 'frobnicate'"),
        ("remove t 1", "only 'remove all'"),
        ("add t k:1", "missing action"),
        ("check_counter c(1) packets = 3", "expected one of"),
        ("mc_node_create", "expected rid"),
    ],
)
def test_errors_carry_file_and_line(line, message):
    with pytest.raises(s.StfSyntaxError) as ei:
        parse_stf("# first line\n" + line, "bad.stf")
    assert str(ei.value).startswith("bad.stf:2: ")
    assert message in str(ei.value)


def test_check_counter_forms():
    c = one("check_counter MyIngress.c(3) bytes >= 128")
    assert isinstance(c, s.CheckCounter)
    assert (c.name, c.index, c.kind, c.op, c.value) == ("MyIngress.c", 3, "bytes", ">=", 128)
    bare = one("check_counter cnt(0x2)")
    assert isinstance(bare, s.CheckCounter)
    assert (bare.index, bare.kind, bare.op, bare.value) == (2, "packets", "==", 0)
    by_id = one("check_counter cnt($A)")
    assert isinstance(by_id, s.CheckCounter) and by_id.index == "$A"


def test_replication_register_meter_and_wait_commands():
    cmds = parse_stf(
        "mirroring_add 5 4\nmc_mgrp_create 1113\nmc_node_create 400 6 7\n"
        "mc_node_associate 1113 0\nregister_write r 3 0xff\nmeter_set_rates m 2 0.5:10 1:20\n"
        "wait\nwait 250\nmember prof 1 fwd(port:2)\ngroup prof 7 1 2*3\n",
        "x.stf",
    )
    kinds = [type(c).__name__ for c in cmds]
    assert kinds == [
        "MirroringAdd",
        "McMgrpCreate",
        "McNodeCreate",
        "McNodeAssociate",
        "RegisterWrite",
        "MeterSetRates",
        "Wait",
        "Wait",
        "Member",
        "Group",
    ]
    assert cmds[2].ports == [6, 7] and cmds[2].rid == 400
    assert cmds[4].value == 255
    assert cmds[5].rates == [(0.5, 10), (1.0, 20)]
    assert cmds[6].micros is None and cmds[7].micros == 250
    assert cmds[9].members == [(1, 1), (2, 3)]


# ------------------------------------------------------------------------------------------
# Values (bmv2stf's conversions)
# ------------------------------------------------------------------------------------------


def kv(text: str, **kw) -> s.KeyValue:
    return s.KeyValue("k", text, **kw)


def test_ternary_mask_covers_only_written_digits():
    assert match_value(kv("0x****0101"), "ternary", 32) == api.TernaryMatch(0x0101, 0x0000FFFF)
    assert match_value(kv("0x0101"), "ternary", 32) == api.TernaryMatch(0x0101, 0xFFFF)
    assert match_value(kv("0x25**"), "ternary", 16) == api.TernaryMatch(0x2500, 0xFF00)
    assert match_value(kv("0b1*0"), "ternary", 8) == api.TernaryMatch(0b100, 0b101)
    assert match_value(kv("0x10", mask="0xf0"), "ternary", 8) == api.TernaryMatch(0x10, 0xF0)
    assert match_value(kv("7"), "ternary", 8) == api.TernaryMatch(7, 0xFF)


def test_lpm_prefix_from_digits_or_slash():
    assert match_value(kv("0x0a******"), "lpm", 32) == api.LpmMatch(0x0A000000, 8)
    assert match_value(kv("0x0a000000", prefix_len=8), "lpm", 32) == api.LpmMatch(0x0A000000, 8)
    assert match_value(kv("0x0a010203"), "lpm", 32) == api.LpmMatch(0x0A010203, 32)
    assert match_value(kv("167772160"), "lpm", 32) == api.LpmMatch(0x0A000000, 32)


def test_exact_range_optional_and_width_checks():
    assert match_value(kv("0xff"), "exact", 8) == api.ExactMatch(255)
    assert match_value(kv("10", hi="20"), "range", 16) == api.RangeMatch(10, 20)
    assert match_value(kv("5"), "range", 16) == api.RangeMatch(5, 5)
    assert match_value(kv("3"), "optional", 4) == api.OptionalMatch(3)
    assert match_value(kv("-1"), "exact", 8) == api.ExactMatch(255)
    with pytest.raises(ValueError, match="does not fit"):
        match_value(kv("0x100"), "exact", 8)
    with pytest.raises(ValueError, match="need a range key"):
        match_value(kv("1", hi="2"), "exact", 8)


# ------------------------------------------------------------------------------------------
# Matcher
# ------------------------------------------------------------------------------------------


def test_matcher_wildcards_prefix_and_exact_length():
    data = bytes.fromhex("0a0b0c0d")
    assert compare("0A0B0C0D", data) is None
    assert compare("0a0b", data) is None  # longer received packet is fine
    assert compare("0*0B**0D", data) is None
    assert compare("0A0B0C0D$", data) is None
    mm = compare("0A0B0C$", data)
    assert mm is not None and mm.reason == "too long"
    mm = compare("0A0B0C0D0E", data)
    assert mm is not None and mm.reason == "too short" and mm.position == 8
    mm = compare("0A0B0F0D", data)
    assert mm is not None and mm.reason == "different" and mm.position == 5


# ------------------------------------------------------------------------------------------
# Runner logic against a fake pipeline
# ------------------------------------------------------------------------------------------


def _program() -> ir.Program:
    b8, b32 = ir.BitsType(8), ir.BitsType(32)
    port = ir.Param("port", "", ir.BitsType(9))
    fwd = ir.Action("MyIngress.fwd", "MyIngress.fwd", [port], ir.Block())
    drop = ir.Action("MyIngress.drop", "MyIngress.drop", [], ir.Block())
    keys = [
        ir.TableKey(ir.Var("x", type=b32), "ternary", "hdr.ipv4.dstAddr"),
        ir.TableKey(ir.Var("y", type=b8), "exact", "hdr.stk[0].tag"),
    ]
    table = ir.Table(
        "acl",
        "MyIngress.acl",
        keys,
        [ir.ActionRef("MyIngress.fwd"), ir.ActionRef("MyIngress.drop")],
        ir.BoundAction("MyIngress.drop", []),
    )
    ctl = ir.Control(
        "MyIngress", [], [], {}, ["MyIngress.fwd", "MyIngress.drop"], {"acl": table}, ir.Block()
    )
    return ir.Program(
        types={},
        errors=[],
        match_kinds=[],
        actions={a.name: a for a in (fwd, drop)},
        parsers={},
        controls={"MyIngress": ctl},
        package={},
    )


class FakePipeline:
    """Echoes each packet to port (first byte) at the given time; records state calls."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, api.TableEntry]] = []
        self.times: list[int] = []
        self.counters = {"MyIngress.c": (3, 300)}
        self.mcast: dict[int, list[api.Replica]] = {}

    def process(self, data: bytes, port: int, now_us: int) -> api.ProcessResult:
        self.times.append(now_us)
        if data[0] == 0xEE:
            return api.ProcessResult()
        outs = [api.Output(data[0], data)]
        if data[0] == 0xDD:
            outs.append(api.Output(data[0], data + b"\x01"))
        return api.ProcessResult(outputs=outs)

    def table_add(self, table: str, entry: api.TableEntry) -> None:
        self.entries.append((table, entry))

    def resolve(self, kind: str, name: str) -> str:
        full = "MyIngress." + name.split(".")[-1]
        if kind == "counter" and full in self.counters:
            return full
        raise api.StateError(api.StateCode.NOT_FOUND, f"no {kind} {name}")

    def counter_read(self, counter: str, index: int) -> tuple[int, int]:
        return self.counters[counter]

    def mcast_group_set(self, group_id: int, replicas: list[api.Replica]) -> None:
        self.mcast[group_id] = replicas


def run(text: str) -> tuple:
    pipe = FakePipeline()
    result = StfRunner(_program(), pipe, "t.stf").run(parse_stf(text, "t.stf"))  # type: ignore[arg-type]  # a fake pipeline with what the runner calls
    return result, pipe


def test_add_resolves_suffix_names_stack_keys_and_maps_priority():
    result, pipe = run(
        "add acl 0 ipv4.dstAddr:0x0a****** stk$0.tag:5 fwd(port:2)\nadd acl stk$0.tag:6 drop()\n"
    )
    assert result.ok, result.message
    (t1, e1), (t2, e2) = pipe.entries
    assert t1 == "MyIngress.acl" and e1.priority == 1 and e1.action == "MyIngress.fwd"
    assert e1.match == {
        "hdr.ipv4.dstAddr": api.TernaryMatch(0x0A000000, 0xFF000000),
        "hdr.stk[0].tag": api.ExactMatch(5),
    }
    assert e1.params == {"port": 2}
    assert e2.priority == 1 and "hdr.ipv4.dstAddr" not in e2.match  # omitted ternary = wildcard


def test_larger_stf_priority_stays_larger():
    _, pipe = run("add acl 100 stk$0.tag:1 drop()\nadd acl 110 stk$0.tag:1 drop()\n")
    assert [e.priority for _, e in pipe.entries] == [101, 111]


def test_unknown_names_fail_with_line():
    result, _ = run("\nadd nosuch k:1 drop()\n")
    assert result.exit_code == 1 and result.message.startswith("t.stf:2: no table named 'nosuch'")
    result, _ = run("add acl stk$0.tag:1 fwd(prt:1)\n")
    assert "missing parameter port" in result.message
    result, _ = run("add acl bogus:1 drop()\n")
    assert "has no key 'bogus'" in result.message


def test_expect_order_per_port_extras_and_missing():
    ok, _ = run("expect 2 02 aa\npacket 0 02aa\npacket 0 03bb\nexpect 3 03 **\n")
    assert ok.ok, ok.message
    extra, _ = run("packet 0 02aa\nexpect 2 02aa\npacket 0 02cc\n")
    assert not extra.ok and extra.message.startswith("t.stf:3: unexpected packet on port 2: 02 CC")
    missing, _ = run("packet 0 eeaa\nexpect 2 02aa\n")
    assert missing.message.startswith("t.stf:2: expected on port 2: 02 AA got: no packet on port 2")
    wrong, _ = run("packet 0 02ab\nexpect 2 02aa\n")
    assert "expected on port 2: 02 AA got: 02 AB" in wrong.message


def test_expect_without_data_accepts_anything_and_unnamed_ports_are_ignored():
    r, _ = run("expect 2\npacket 0 02aa\npacket 0 02bb\n")
    assert r.ok, r.message
    r, _ = run("packet 0 07aa\n")  # port 7 never named: not checked, as bmv2stf does
    assert r.ok and any("never named" in line for line in r.log)
    strict = StfRunner(_program(), FakePipeline(), "t.stf", strict=True)
    r = strict.run(parse_stf("packet 0 07aa\n", "t.stf"))
    assert not r.ok and "unexpected packet on port 7" in r.message


def test_two_packets_same_port_in_order_and_dollar_length():
    r, _ = run("packet 0 dd00\nexpect 221 dd00$\nexpect 221 dd0001$\n")
    assert r.ok, r.message
    r, _ = run("packet 0 dd00\nexpect 221 dd0001$\nexpect 221 dd00$\n")
    assert not r.ok and r.message.startswith("t.stf:2:")


def test_clock_advances_per_packet_and_with_wait():
    r, pipe = run("packet 0 ee\npacket 0 ee\nwait\npacket 0 ee\nwait 100\npacket 0 ee\n")
    assert r.ok
    assert pipe.times == [0, 1, 2, 103]


def test_check_counter_pass_and_fail():
    r, _ = run("check_counter c(0) packets == 3\ncheck_counter c(0) bytes > 299\n")
    assert r.ok, r.message
    r, _ = run("check_counter c(0) packets == 4\n")
    assert (
        r.message
        == "t.stf:1: check_counter MyIngress.c(0): expected packets == 4, got packets == 3"
    )


def test_multicast_nodes_are_numbered_in_creation_order():
    r, pipe = run(
        "mc_mgrp_create 9\nmc_node_create 400 6\nmc_node_create 401 7 8\n"
        "mc_node_associate 9 1\nmc_node_associate 9 0\n"
    )
    assert r.ok, r.message
    assert pipe.mcast[9] == [api.Replica(7, 401), api.Replica(8, 401), api.Replica(6, 400)]
    r, _ = run("mc_mgrp_create 9\nmc_node_associate 9 0\n")
    assert "no multicast node with handle 0" in r.message
