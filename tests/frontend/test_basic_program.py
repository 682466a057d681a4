"""A complete IPv4 LPM forwarding program compiles to the IR the pipeline expects."""

from __future__ import annotations

from fe_helpers import PROGRAMS

from p4switch import ir
from p4switch.frontend import compile_file


def test_ipv4_forward_compiles_to_expected_ir() -> None:
    prog = compile_file(PROGRAMS / "ipv4_forward.p4")
    assert prog.package == {
        "parser": "MyParser",
        "verify_checksum": "MyVerifyChecksum",
        "ingress": "MyIngress",
        "egress": "MyEgress",
        "compute_checksum": "MyComputeChecksum",
        "deparser": "MyDeparser",
    }
    assert prog.errors[:7] == [
        "NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
        "ParserTimeout", "ParserInvalidArgument",
    ]
    assert prog.main_file.endswith("ipv4_forward.p4")
    assert any(f.endswith("v1model.p4") for f in prog.sources)

    ingress = prog.controls["MyIngress"]
    table = ingress.tables["ipv4_lpm"]
    assert table.cp_name == "MyIngress.ipv4_lpm"
    assert [(k.name, k.match_kind, k.width) for k in table.keys] == [
        ("hdr.ipv4.dstAddr", "lpm", 32)
    ]
    assert [r.action for r in table.actions] == [
        "MyIngress.ipv4_forward", "MyIngress.drop", "NoAction"
    ]
    assert table.default_action == ir.BoundAction("MyIngress.drop", [])
    assert table.size == 1024
    assert not table.has_priority

    fwd = prog.actions["MyIngress.ipv4_forward"]
    assert [(p.name, p.direction, p.type) for p in fwd.params] == [
        ("dstAddr", "", ir.BitsType(48)), ("port", "", ir.BitsType(9))
    ]
    ttl = fwd.body.stmts[-1]
    assert isinstance(ttl, ir.Assign)
    assert isinstance(ttl.rhs, ir.Binary) and ttl.rhs.op == "-"
    assert ttl.rhs.right == ir.Const(1, type=ir.BitsType(8))

    parser = prog.parsers["MyParser"]
    assert list(parser.states) == ["start", "parse_ethernet", "parse_ipv4"]
    sel = parser.states["parse_ethernet"].transition
    assert sel.cases[0].keysets == [ir.KeysetValue(0x800)]
    assert sel.cases[1].keysets == [ir.KeysetDefault()]

    csum = prog.controls["MyComputeChecksum"].body.stmts[0]
    assert isinstance(csum, ir.ExternCall) and csum.method == "update_checksum"
    assert csum.args[3].value == prog.types["HashAlgorithm"].value_of("csum16")
    assert isinstance(csum.args[1].type, ir.TupleType)
    assert len(csum.args[1].items) == 11


def test_standard_metadata_matches_v1model() -> None:
    prog = compile_file(PROGRAMS / "ipv4_forward.p4")
    sm = prog.types["standard_metadata_t"]
    assert isinstance(sm, ir.StructType)
    widths = {f.name: f.type for f in sm.fields}
    assert widths == {
        "ingress_port": ir.BitsType(9), "egress_spec": ir.BitsType(9),
        "egress_port": ir.BitsType(9), "instance_type": ir.BitsType(32),
        "packet_length": ir.BitsType(32), "enq_timestamp": ir.BitsType(32),
        "enq_qdepth": ir.BitsType(19), "deq_timedelta": ir.BitsType(32),
        "deq_qdepth": ir.BitsType(19), "ingress_global_timestamp": ir.BitsType(48),
        "egress_global_timestamp": ir.BitsType(48), "mcast_grp": ir.BitsType(16),
        "egress_rid": ir.BitsType(16), "checksum_error": ir.BitsType(1),
        "parser_error": ir.ErrorType(), "priority": ir.BitsType(3),
    }
    assert prog.match_kinds == ["exact", "ternary", "lpm", "range", "optional", "selector"]
    algos = prog.types["HashAlgorithm"]
    assert {m for m, _ in algos.members} >= {
        "identity", "crc32", "crc32_custom", "crc16", "crc16_custom", "random", "csum16",
        "xor16"}
