"""Concise hand-built IR for pipeline tests (until/besides the front end)."""

from __future__ import annotations

from p4switch import ir

ERRORS = ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
          "ParserTimeout", "ParserInvalidArgument"]
BOOL = ir.BoolType()
INF = ir.InfIntType()
HASH_ALGO = ir.EnumType("HashAlgorithm", (("crc32", 0), ("crc32_custom", 1), ("crc16", 2),
                                          ("crc16_custom", 3), ("random", 4), ("identity", 5),
                                          ("csum16", 6), ("xor16", 7)))
COUNTER_TYPE = ir.EnumType("CounterType", (("packets", 0), ("bytes", 1),
                                           ("packets_and_bytes", 2)))
METER_TYPE = ir.EnumType("MeterType", (("packets", 0), ("bytes", 1)))
CLONE_TYPE = ir.EnumType("CloneType", (("I2E", 0), ("E2E", 1)))


def b(w: int, signed: bool = False) -> ir.BitsType:
    return ir.BitsType(w, signed)


def header(name: str, *fields: tuple[str, int]) -> ir.HeaderType:
    return ir.HeaderType(name, tuple(ir.Field(n, b(w)) for n, w in fields))


def struct(name: str, *fields: tuple[str, ir.Type], annotations: dict | None = None
           ) -> ir.StructType:
    ann = annotations or {}
    return ir.StructType(name, tuple(ir.Field(n, t, tuple(ann.get(n, ()))) for n, t in fields))


SM = struct(
    "standard_metadata_t",
    *[(n, b(w)) for n, w in [
        ("ingress_port", 9), ("egress_spec", 9), ("egress_port", 9), ("instance_type", 32),
        ("packet_length", 32), ("enq_timestamp", 32), ("enq_qdepth", 19),
        ("deq_timedelta", 32), ("deq_qdepth", 19), ("ingress_global_timestamp", 48),
        ("egress_global_timestamp", 48), ("mcast_grp", 16), ("egress_rid", 16),
        ("checksum_error", 1)]],
    ("parser_error", ir.ErrorType()),
    ("priority", b(3)),
)

ETH = header("ethernet_t", ("dstAddr", 48), ("srcAddr", 48), ("etherType", 16))
IPV4 = header("ipv4_t", ("version", 4), ("ihl", 4), ("diffserv", 8), ("totalLen", 16),
              ("identification", 16), ("flags", 3), ("fragOffset", 13), ("ttl", 8),
              ("protocol", 8), ("hdrChecksum", 16), ("srcAddr", 32), ("dstAddr", 32))
TCP = header("tcp_t", ("srcPort", 16), ("dstPort", 16), ("seqNo", 32), ("ackNo", 32),
             ("dataOffset", 4), ("res", 4), ("flags", 8), ("window", 16), ("checksum", 16),
             ("urgentPtr", 16))
UDP = header("udp_t", ("srcPort", 16), ("dstPort", 16), ("length", 16), ("checksum", 16))


# -- expressions ---------------------------------------------------------------------------
def c(value: int | bool | str, t: ir.Type | None = None) -> ir.Const:
    if t is None:
        t = BOOL if isinstance(value, bool) else INF
    return ir.Const(value, type=t)


def v(name: str, t: ir.Type) -> ir.Var:
    return ir.Var(name, type=t)


def m(base: ir.Expr, fname: str) -> ir.Member:
    t = base.type
    assert isinstance(t, ir.HeaderType | ir.StructType), t
    return ir.Member(base, fname, type=t.field_type(fname))


def path(base: ir.Expr, dotted: str) -> ir.Expr:
    e = base
    for part in dotted.split("."):
        e = m(e, part)
    return e


def bin_(op: str, left: ir.Expr, right: ir.Expr, t: ir.Type | None = None) -> ir.Binary:
    if t is None:
        t = BOOL if op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||") else left.type
    return ir.Binary(op, left, right, type=t)


def valid(h: ir.Expr) -> ir.IsValid:
    return ir.IsValid(h, type=BOOL)


def enum(t: ir.EnumType, member: str) -> ir.Const:
    return ir.Const(t.value_of(member), type=t)


def lst(*items: ir.Expr) -> ir.ListExpr:
    return ir.ListExpr(list(items), type=ir.TupleType(tuple(i.type for i in items)))


def err(name: str) -> ir.Const:
    return ir.Const(ERRORS.index(name), type=ir.ErrorType())


# -- statements ----------------------------------------------------------------------------
def assign(lhs: ir.Expr, rhs: ir.Expr) -> ir.Assign:
    return ir.Assign(lhs, rhs)


def blk(*stmts: ir.Stmt) -> ir.Block:
    return ir.Block(list(stmts))


def if_(cond: ir.Expr, then: list[ir.Stmt], else_: list[ir.Stmt] | None = None) -> ir.If:
    return ir.If(cond, blk(*then), blk(*else_) if else_ is not None else None)


def call(method: str, *args: ir.Expr, instance: str | None = None,
         type_args: tuple = ()) -> ir.ExternCall:
    return ir.ExternCall(instance, method, list(args), type_args)


def action(name: str, params: list[tuple[str, int]] | None = None, body: list[ir.Stmt] = (),
           directional: list[ir.Param] | None = None, **ann: str) -> ir.Action:
    ps = list(directional or []) + [ir.Param(n, "", b(w)) for n, w in (params or [])]
    return ir.Action(name, name, ps, blk(*body), annotations=dict(ann))


def param(name: str, w: int) -> ir.Var:
    return v(name, b(w))


def key(expr: ir.Expr, kind: str, name: str) -> ir.TableKey:
    return ir.TableKey(expr, kind, name)


def table(name: str, keys: list[ir.TableKey], actions: list[str], default: str,
          default_args: list[int] | None = None, control: str = "MyIngress", **kw) -> ir.Table:
    return ir.Table(name, f"{control}.{name}", keys, [ir.ActionRef(a) for a in actions],
                    ir.BoundAction(default, [c(a) for a in (default_args or [])]), **kw)


def inst(name: str, type_name: str, args: list[ir.Expr], type_args: tuple = (),
         control: str = "MyIngress") -> ir.ExternInstance:
    return ir.ExternInstance(name, f"{control}.{name}", type_name, type_args, args)


# -- whole programs ------------------------------------------------------------------------
def program(*, headers: ir.StructType, meta: ir.StructType, states: dict[str, ir.ParserState],
            ingress: ir.Control, egress: ir.Control | None = None,
            deparser_emits: list[str] | None = None, verify: list[ir.Stmt] | None = None,
            compute: list[ir.Stmt] | None = None, actions: list[ir.Action] = (),
            value_sets: dict[str, ir.ValueSet] | None = None,
            parser_locals: list[ir.VarDecl] | None = None) -> ir.Program:
    hdr_v, meta_v, sm_v = v("hdr", headers), v("meta", meta), v("standard_metadata", SM)
    pin = ir.Param("packet", "", ir.ExternType("packet_in"))
    pout = ir.Param("packet", "", ir.ExternType("packet_out"))
    ph = ir.Param("hdr", "inout", headers)
    pm = ir.Param("meta", "inout", meta)
    ps = ir.Param("standard_metadata", "inout", SM)
    parser = ir.Parser("MyParser", [pin, ir.Param("hdr", "out", headers), pm, ps],
                       parser_locals or [], {}, value_sets or {}, states)
    if egress is None:
        egress = ir.Control("MyEgress", [ph, pm, ps], [], {}, [], {}, blk())
    verify_c = ir.Control("MyVerify", [ph, pm], [], {}, [], {}, blk(*(verify or [])))
    compute_c = ir.Control("MyCompute", [ph, pm], [], {}, [], {}, blk(*(compute or [])))
    emits = [ir.Emit(path(hdr_v, h)) for h in (deparser_emits or [])]
    dep = ir.Control("MyDeparser", [pout, ir.Param("hdr", "in", headers)], [], {}, [], {},
                     blk(*emits))
    _ = (meta_v, sm_v)
    acts = {a.name: a for a in actions}
    acts.setdefault("NoAction", action("NoAction"))
    return ir.Program(
        types={}, errors=list(ERRORS), match_kinds=["exact", "ternary", "lpm", "range",
                                                    "optional", "selector"],
        actions=acts, parsers={"MyParser": parser},
        controls={c_.name: c_ for c_ in (ingress, egress, verify_c, compute_c, dep)},
        package={"parser": "MyParser", "verify_checksum": "MyVerify", "ingress": ingress.name,
                 "egress": egress.name, "compute_checksum": "MyCompute",
                 "deparser": "MyDeparser"},
    )


def control(name: str, headers: ir.StructType, meta: ir.StructType, body: list[ir.Stmt],
            *, tables: list[ir.Table] = (), instances: list[ir.ExternInstance] = (),
            actions: list[str] = (), locals_: list[ir.VarDecl] = ()) -> ir.Control:
    params = [ir.Param("hdr", "inout", headers), ir.Param("meta", "inout", meta),
              ir.Param("standard_metadata", "inout", SM)]
    return ir.Control(name, params, list(locals_), {i.name: i for i in instances},
                      list(actions), {t.name: t for t in tables}, blk(*body))


def state(name: str, stmts: list[ir.Stmt], nxt: str | None = None,
          select: list[ir.Expr] | None = None,
          cases: list[tuple[list[ir.Keyset], str]] | None = None) -> ir.ParserState:
    if select is None:
        tr = ir.Transition(next_state=nxt or "accept")
    else:
        tr = ir.Transition(select_keys=select,
                           cases=[ir.SelectCase(list(ks), s) for ks, s in cases or []])
    return ir.ParserState(name, stmts, tr)


def kv(value: int) -> ir.KeysetValue:
    return ir.KeysetValue(value)


DEFAULT = ir.KeysetDefault()
