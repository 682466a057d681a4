"""Hand-built IR programs shared by the pipeline tests and the benchmark."""

from __future__ import annotations

from pipeline_irb import (
    DEFAULT,
    ETH,
    HASH_ALGO,
    IPV4,
    SM,
    TCP,
    UDP,
    action,
    assign,
    b,
    bin_,
    c,
    call,
    control,
    enum,
    if_,
    inst,
    key,
    kv,
    lst,
    path,
    program,
    state,
    struct,
    table,
    v,
    valid,
)

from p4switch import ir

HDRS = struct("headers", ("ethernet", ETH), ("ipv4", IPV4))
META = struct("metadata")
hdr = v("hdr", HDRS)
sm = v("standard_metadata", SM)

IPV4_FIELDS = ["version", "ihl", "diffserv", "totalLen", "identification", "flags",
               "fragOffset", "ttl", "protocol", "srcAddr", "dstAddr"]


def eth_ipv4_states(hdr_v: ir.Expr, l4: bool = False) -> dict[str, ir.ParserState]:
    states = {
        "start": state("start", [ir.Extract(path(hdr_v, "ethernet"))],
                       select=[path(hdr_v, "ethernet.etherType")],
                       cases=[([kv(0x0800)], "parse_ipv4"), ([DEFAULT], "accept")]),
    }
    if not l4:
        states["parse_ipv4"] = state("parse_ipv4", [ir.Extract(path(hdr_v, "ipv4"))])
    else:
        states["parse_ipv4"] = state(
            "parse_ipv4", [ir.Extract(path(hdr_v, "ipv4"))],
            select=[path(hdr_v, "ipv4.protocol")],
            cases=[([kv(6)], "parse_tcp"), ([kv(17)], "parse_udp"), ([DEFAULT], "accept")])
        states["parse_tcp"] = state("parse_tcp", [ir.Extract(path(hdr_v, "tcp"))])
        states["parse_udp"] = state("parse_udp", [ir.Extract(path(hdr_v, "udp"))])
    return states


def ipv4_checksum(hdr_v: ir.Expr, method: str) -> ir.ExternCall:
    data = lst(*[path(hdr_v, f"ipv4.{f}") for f in IPV4_FIELDS])
    return call(method, valid(path(hdr_v, "ipv4")), data, path(hdr_v, "ipv4.hdrChecksum"),
                enum(HASH_ALGO, "csum16"))


def forward_actions(hdr_v: ir.Expr) -> list[ir.Action]:
    return [
        action("MyIngress.drop", body=[call("mark_to_drop", sm)]),
        action("MyIngress.ipv4_forward", [("dstAddr", 48), ("port", 9)], body=[
            assign(path(sm, "egress_spec"), v("port", b(9))),
            assign(path(hdr_v, "ethernet.srcAddr"), path(hdr_v, "ethernet.dstAddr")),
            assign(path(hdr_v, "ethernet.dstAddr"), v("dstAddr", b(48))),
            assign(path(hdr_v, "ipv4.ttl"),
                   bin_("-", path(hdr_v, "ipv4.ttl"), c(1, b(8)))),
        ]),
    ]


def basic_ipv4() -> ir.Program:
    """The P4 tutorial's basic.p4: LPM forwarding with TTL decrement and checksum update."""
    lpm = table("ipv4_lpm", [key(path(hdr, "ipv4.dstAddr"), "lpm", "hdr.ipv4.dstAddr")],
                ["MyIngress.ipv4_forward", "MyIngress.drop", "NoAction"], "MyIngress.drop",
                size=1024)
    ing = control("MyIngress", HDRS, META,
                  [if_(valid(path(hdr, "ipv4")), [ir.ApplyTable("ipv4_lpm")])],
                  tables=[lpm], actions=["MyIngress.ipv4_forward", "MyIngress.drop"])
    return program(headers=HDRS, meta=META, states=eth_ipv4_states(hdr), ingress=ing,
                   deparser_emits=["ethernet", "ipv4"],
                   verify=[ipv4_checksum(hdr, "verify_checksum")],
                   compute=[ipv4_checksum(hdr, "update_checksum")],
                   actions=forward_actions(hdr))


L4_HDRS = struct("headers", ("ethernet", ETH), ("ipv4", IPV4), ("tcp", TCP), ("udp", UDP))
L4_META = struct("metadata", ("ecmp_select", b(16)), ("l4_src", b(16)), ("l4_dst", b(16)),
                 ("flow_slot", b(16)), ("last_seen", b(48)), ("flowlet_id", b(16)))


def ecmp_flowlet() -> ir.Program:
    """ECMP over the 5-tuple plus a flowlet id from a register pair, and a per-port counter:
    the benchmark's load-balancing program."""
    h = v("hdr", L4_HDRS)
    md = v("meta", L4_META)
    b16, b32, b48 = b(16), b(32), b(48)
    ms = lambda f: path(md, f)  # noqa: E731
    ecmp_group = table("ecmp_group",
                       [key(path(h, "ipv4.dstAddr"), "lpm", "hdr.ipv4.dstAddr")],
                       ["MyIngress.drop", "MyIngress.set_ecmp_select"], "MyIngress.drop")
    ecmp_nhop = table("ecmp_nhop", [key(ms("ecmp_select"), "exact", "meta.ecmp_select")],
                      ["MyIngress.drop", "MyIngress.set_nhop"], "MyIngress.drop")
    regs = [inst("last_seen", "register", [c(4096, b32)], (b48,)),
            inst("flowlet_ids", "register", [c(4096, b32)], (b16,)),
            inst("port_pkts", "counter", [c(512, b32), enum(struct_enum_counter(), "packets")])]
    timeout = c(50_000, b48)
    body = [
        if_(valid(path(h, "tcp")), [
            assign(ms("l4_src"), path(h, "tcp.srcPort")), assign(ms("l4_dst"), path(h, "tcp.dstPort"))]),
        if_(valid(path(h, "udp")), [
            assign(ms("l4_src"), path(h, "udp.srcPort")), assign(ms("l4_dst"), path(h, "udp.dstPort"))]),
        if_(valid(path(h, "ipv4")), [
            call("hash", ms("flow_slot"), enum(HASH_ALGO, "crc16"), c(0, b16),
                 lst(path(h, "ipv4.srcAddr"), path(h, "ipv4.dstAddr"), path(h, "ipv4.protocol"),
                     ms("l4_src"), ms("l4_dst")), c(4096, b32)),
            call("read", ms("last_seen"), ir.Cast(ms("flow_slot"), type=b32), instance="last_seen"),
            call("read", ms("flowlet_id"), ir.Cast(ms("flow_slot"), type=b32), instance="flowlet_ids"),
            if_(bin_(">", bin_("-", path(sm, "ingress_global_timestamp"), ms("last_seen")), timeout), [
                assign(ms("flowlet_id"), bin_("+", ms("flowlet_id"), c(1, b16))),
                call("write", ir.Cast(ms("flow_slot"), type=b32), ms("flowlet_id"), instance="flowlet_ids"),
            ]),
            call("write", ir.Cast(ms("flow_slot"), type=b32), path(sm, "ingress_global_timestamp"),
                 instance="last_seen"),
            ir.ApplyTable("ecmp_group"),
            ir.ApplyTable("ecmp_nhop"),
            call("count", ir.Cast(path(sm, "egress_spec"), type=b32), instance="port_pkts"),
        ]),
    ]
    ing = control("MyIngress", L4_HDRS, L4_META, body, tables=[ecmp_group, ecmp_nhop],
                  instances=regs)
    acts = [
        action("MyIngress.drop", body=[call("mark_to_drop", sm)]),
        action("MyIngress.set_ecmp_select", [("ecmp_base", 16), ("ecmp_count", 32)], body=[
            call("hash", ms("ecmp_select"), enum(HASH_ALGO, "crc16"), v("ecmp_base", b16),
                 lst(path(h, "ipv4.srcAddr"), path(h, "ipv4.dstAddr"), path(h, "ipv4.protocol"),
                     ms("l4_src"), ms("l4_dst"), ms("flowlet_id")),
                 v("ecmp_count", b32)),
        ]),
        action("MyIngress.set_nhop", [("nhop_dmac", 48), ("port", 9)], body=[
            assign(path(h, "ethernet.srcAddr"), path(h, "ethernet.dstAddr")),
            assign(path(h, "ethernet.dstAddr"), v("nhop_dmac", b48)),
            assign(path(sm, "egress_spec"), v("port", b(9))),
            assign(path(h, "ipv4.ttl"), bin_("-", path(h, "ipv4.ttl"), c(1, b(8)))),
        ]),
    ]
    return program(headers=L4_HDRS, meta=L4_META, states=eth_ipv4_states(h, l4=True),
                   ingress=ing, deparser_emits=["ethernet", "ipv4", "tcp", "udp"],
                   verify=[ipv4_checksum(h, "verify_checksum")],
                   compute=[ipv4_checksum(h, "update_checksum")], actions=acts)


def struct_enum_counter() -> ir.EnumType:
    from pipeline_irb import COUNTER_TYPE

    return COUNTER_TYPE


# -- a small frame for feature tests: Ethernet only, user metadata given per test ----------
ETH_HDRS = struct("headers", ("ethernet", ETH))


def eth_program(meta: ir.StructType, ingress: list[ir.Stmt], *, egress: list[ir.Stmt] = (),
                actions: list[ir.Action] = (), tables: list[ir.Table] = (),
                instances: list[ir.ExternInstance] = (),
                egress_instances: list[ir.ExternInstance] = (),
                states: dict[str, ir.ParserState] | None = None,
                headers: ir.StructType = ETH_HDRS, emits: list[str] = ("ethernet",),
                value_sets: dict[str, ir.ValueSet] | None = None,
                locals_: list[ir.VarDecl] = ()) -> ir.Program:
    h = v("hdr", headers)
    if states is None:
        states = {"start": state("start", [ir.Extract(path(h, "ethernet"))])}
    ing = control("MyIngress", headers, meta, list(ingress), tables=list(tables),
                  instances=list(instances), locals_=list(locals_))
    eg = control("MyEgress", headers, meta, list(egress), instances=list(egress_instances))
    return program(headers=headers, meta=meta, states=states, ingress=ing, egress=eg,
                   deparser_emits=list(emits), actions=list(actions), value_sets=value_sets)
