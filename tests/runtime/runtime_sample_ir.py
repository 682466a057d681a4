"""A hand-built IR program with every kind of control-plane object, so P4Info generation and the
P4Runtime server can be tested without the front end. It mirrors ``sample.p4`` (next to this
file), which the front end compiles to an equivalent program once it is available."""

from __future__ import annotations

from p4switch import ir

B = ir.BitsType


def _var(name: str, width: int) -> ir.Var:
    return ir.Var(name, type=B(width))


def _const(value: int, t: ir.Type) -> ir.Const:
    return ir.Const(value, type=t)


COUNTER_TYPE = ir.EnumType("CounterType", (("packets", 0), ("bytes", 1), ("packets_and_bytes", 2)))
METER_TYPE = ir.EnumType("MeterType", (("packets", 0), ("bytes", 1)))
HASH_ALGO = ir.EnumType("HashAlgorithm", (("crc32", 0), ("crc32_custom", 1), ("crc16", 2)))

PACKET_IN = ir.HeaderType(
    "packet_in_t",
    (
        ir.Field("ingress_port", B(9)),
        ir.Field("_pad", B(7), (("padding", ""),)),
    ),
    (("controller_header", '"packet_in"'),),
)
PACKET_OUT = ir.HeaderType(
    "packet_out_t",
    (
        ir.Field("egress_port", B(9)),
        ir.Field("mcast", B(16)),
        ir.Field("_pad", B(7), (("padding", ""),)),
    ),
    (("controller_header", '"packet_out"'),),
)
LEARN = ir.StructType("mac_learn_t", (ir.Field("src_mac", B(48)), ir.Field("port", B(9))))


def _action(key: str, params: list[tuple[str, int]], annotations=None) -> ir.Action:
    return ir.Action(
        name=key,
        cp_name=key,
        params=[ir.Param(n, "", B(w)) for n, w in params],
        body=ir.Block([]),
        annotations=annotations or {},
    )


def _inst(name: str, type_name: str, args: list[ir.Expr], type_args=()) -> ir.ExternInstance:
    return ir.ExternInstance(name, f"MyIngress.{name}", type_name, tuple(type_args), args)


def build() -> ir.Program:
    actions = {
        "NoAction": _action("NoAction", []),
        "MyIngress.drop": _action("MyIngress.drop", []),
        "MyIngress.forward": _action("MyIngress.forward", [("port", 9)]),
        "MyIngress.set_nhop": _action("MyIngress.set_nhop", [("dmac", 48), ("port", 9)]),
        "MyIngress.set_group": _action("MyIngress.set_group", [("group", 16)],
                                       {"id": "0x01000777"}),
    }
    tables = {
        "ipv4_lpm": ir.Table(
            name="ipv4_lpm",
            cp_name="MyIngress.ipv4_lpm",
            keys=[ir.TableKey(_var("dst", 32), "lpm", "hdr.ipv4.dstAddr")],
            actions=[
                ir.ActionRef("MyIngress.set_nhop"),
                ir.ActionRef("MyIngress.set_group", "tableonly"),
                ir.ActionRef("MyIngress.drop"),
                ir.ActionRef("NoAction", "defaultonly"),
            ],
            default_action=ir.BoundAction("MyIngress.drop", []),
            size=1024,
        ),
        "acl": ir.Table(
            name="acl",
            cp_name="MyIngress.acl",
            keys=[
                ir.TableKey(_var("et", 16), "ternary", "hdr.ethernet.etherType"),
                ir.TableKey(_var("ip", 9), "exact", "standard_metadata.ingress_port"),
                ir.TableKey(_var("sp", 16), "range", "meta.l4_sport"),
                ir.TableKey(_var("pr", 8), "optional", "hdr.ipv4.protocol"),
            ],
            actions=[ir.ActionRef("MyIngress.forward"), ir.ActionRef("MyIngress.drop"),
                     ir.ActionRef("NoAction")],
            default_action=ir.BoundAction("NoAction", []),
            size=4,
            direct_counter="acl_counter",
            direct_meter="acl_meter",
        ),
        "ecmp": ir.Table(
            name="ecmp",
            cp_name="MyIngress.ecmp",
            keys=[
                ir.TableKey(_var("g", 16), "exact", "meta.group", {"id": "7"}),
                ir.TableKey(_var("h", 32), "selector", "hdr.ipv4.srcAddr"),
            ],
            actions=[ir.ActionRef("MyIngress.set_nhop"), ir.ActionRef("MyIngress.drop")],
            default_action=ir.BoundAction("NoAction", []),
            implementation="ecmp_sel",
            size=256,
        ),
        "ether_filter": ir.Table(
            name="ether_filter",
            cp_name="MyIngress.ether_filter",
            keys=[ir.TableKey(_var("et2", 16), "exact", "hdr.ethernet.etherType")],
            actions=[ir.ActionRef("MyIngress.forward"), ir.ActionRef("MyIngress.drop")],
            default_action=ir.BoundAction("MyIngress.forward", [_const(3, B(9))]),
            default_action_const=True,
            const_entries=[ir.ConstEntry([ir.EntryKey("exact", 0x88CC)],
                                         ir.BoundAction("MyIngress.drop", []))],
        ),
    }
    instances = {
        "port_counter": _inst("port_counter", "counter",
                              [_const(8, B(32)), _const(2, COUNTER_TYPE)]),
        "acl_counter": _inst("acl_counter", "direct_counter", [_const(2, COUNTER_TYPE)]),
        "acl_meter": _inst("acl_meter", "direct_meter", [_const(1, METER_TYPE)]),
        "port_meter": _inst("port_meter", "meter", [_const(16, B(32)), _const(0, METER_TYPE)]),
        "flowlet_ts": _inst("flowlet_ts", "register", [_const(16, B(32))], (B(48),)),
        "ecmp_sel": _inst("ecmp_sel", "action_selector",
                          [_const(2, HASH_ALGO), _const(64, B(32)), _const(14, B(32))]),
    }
    ingress = ir.Control(
        name="MyIngress",
        params=[],
        locals=[],
        instances=instances,
        actions=[k for k in actions if k.startswith("MyIngress.")],
        tables=tables,
        # every table is applied: P4Info (as p4c's) leaves out tables no control applies
        body=ir.Block([ir.ApplyTable(name) for name in tables]),
    )
    parser = ir.Parser("MyParser", [], [], {}, {}, {})
    return ir.Program(
        types={"packet_in_t": PACKET_IN, "packet_out_t": PACKET_OUT, "mac_learn_t": LEARN},
        errors=["NoError", "PacketTooShort"],
        match_kinds=["exact", "ternary", "lpm", "range", "optional", "selector"],
        actions=actions,
        parsers={"MyParser": parser},
        controls={"MyIngress": ingress},
        package={"parser": "MyParser", "ingress": "MyIngress"},
        controller_headers={"packet_in": PACKET_IN, "packet_out": PACKET_OUT},
        digests=[LEARN],
        main_file="sample.p4",
    )
