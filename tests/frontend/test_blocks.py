"""Parsers, controls, tables and externs: the IR shape of each construct."""

from __future__ import annotations

from fe_helpers import HEADERS, REST, compile_error, compile_ingress

from p4switch import ir
from p4switch.frontend import compile_source

B8, B9, B16, B32 = ir.BitsType(8), ir.BitsType(9), ir.BitsType(16), ir.BitsType(32)


def test_table_defaults_follow_p4c() -> None:
    prog = compile_ingress(
        "action a(bit<9> port) { sm.egress_spec = port; }\n"
        "table t { key = { hdr.ethernet.dstAddr: exact; } actions = { a; } }\n"
        "apply { t.apply(); }")
    t = prog.controls["I"].tables["t"]
    assert [(r.action, r.scope) for r in t.actions] == [("I.a", ""), ("NoAction", "defaultonly")]
    assert t.default_action == ir.BoundAction("NoAction", [])
    assert not t.default_action_const and t.size == 1024 and t.const_entries is None


def test_table_properties_names_and_scopes() -> None:
    prog = compile_ingress(
        "action a(bit<9> port) { sm.egress_spec = port; }\n"
        "@name(\"b_renamed\") action b() { }\n"
        "@name(\".global_c\") action c() { }\n"
        "direct_counter(CounterType.packets_and_bytes) dc;\n"
        "direct_meter<bit<2>>(MeterType.packets) dm;\n"
        "@name(\"tt\") @id(33554433) table t {\n"
        "    key = { hdr.ethernet.dstAddr: ternary @name(\"dmac\"); hdr.ipv4.isValid(): exact;\n"
        "            hdr.ipv4.srcAddr[31:24]: lpm; }\n"
        "    actions = { a; @tableonly b; @defaultonly c; }\n"
        "    const default_action = c();\n"
        "    counters = dc; meters = dm; size = 77;\n"
        "}\n"
        "apply { t.apply(); }")
    t = prog.controls["I"].tables["t"]
    assert t.cp_name == "I.tt"
    assert t.annotations == {"name": "tt", "id": "33554433"}
    assert [(k.name, k.match_kind, k.width) for k in t.keys] == [
        ("dmac", "ternary", 48), ("hdr.ipv4.$valid$", "exact", 1),
        ("hdr.ipv4.srcAddr[31:24]", "lpm", 8)]
    assert isinstance(t.keys[1].expr, ir.IsValid)
    assert [(r.action, r.scope) for r in t.actions] == [
        ("I.a", ""), ("I.b_renamed", "tableonly"), ("global_c", "defaultonly")]
    assert t.default_action == ir.BoundAction("global_c", []) and t.default_action_const
    assert (t.direct_counter, t.direct_meter, t.size) == ("dc", "dm", 77)
    assert t.has_priority
    insts = prog.controls["I"].instances
    assert insts["dm"].type_args == (ir.BitsType(2),)
    assert set(prog.actions) >= {"I.a", "I.b_renamed", "global_c", "NoAction"}


def test_const_entries_with_masks_ranges_and_lpm() -> None:
    prog = compile_ingress(
        "action a(bit<9> port) { sm.egress_spec = port; }\n"
        "table t {\n"
        "    key = { hdr.ipv4.dstAddr: lpm; }\n"
        "    actions = { a; }\n"
        "    const entries = {\n"
        "        0x0a000000 &&& 0xff000000: a(1);\n"
        "        32w0x0a010203: a(2);\n"
        "        _: a(3);\n"
        "    }\n"
        "}\n"
        "table r {\n"
        "    key = { meta.m16: range; hdr.ipv4.protocol: ternary; meta.m8: optional; }\n"
        "    actions = { a; }\n"
        "    const entries = {\n"
        "        (10 .. 20, 6 &&& 0x0f, 5): a(4);\n"
        "        (_, _, _): a(5);\n"
        "    }\n"
        "}\n"
        "apply { t.apply(); r.apply(); }")
    t = prog.controls["I"].tables["t"]
    e = t.const_entries
    assert e[0].keys == [ir.EntryKey("lpm", 0x0A000000, 0xFF000000, prefix_len=8)]
    assert e[0].action == ir.BoundAction("I.a", [ir.Const(1, type=B9)])
    assert e[1].keys == [ir.EntryKey("lpm", 0x0A010203, 0xFFFFFFFF, prefix_len=32)]
    assert e[2].keys == [ir.EntryKey("default")]
    assert all(x.priority is None for x in e)
    r = prog.controls["I"].tables["r"].const_entries
    assert r[0].keys == [ir.EntryKey("range", 10, hi=20), ir.EntryKey("ternary", 6, 0x0F),
                         ir.EntryKey("optional", 5)]
    assert [x.priority for x in r] == [2, 1]  # earlier entries win; larger wins


def test_bad_lpm_mask_is_an_error() -> None:
    from fe_helpers import ingress_program

    text = ingress_program(
        "action a() { }\n"
        "table t { key = { hdr.ipv4.dstAddr: lpm; } actions = { a; }\n"
        "    const entries = { 0x0a000000 &&& 0x00ff0000: a(); } }\n"
        "apply { t.apply(); }")
    err = compile_error(text)
    assert "is not a prefix" in err.message


def test_action_selector_and_profile_inline() -> None:
    prog = compile_ingress(
        "action a(bit<9> port) { sm.egress_spec = port; }\n"
        "table sel { key = { hdr.ipv4.dstAddr: exact; hdr.ipv4.srcAddr: selector; }\n"
        "    actions = { a; }\n"
        "    implementation = action_selector(HashAlgorithm.crc16, 32w64, 32w14); }\n"
        "table prof { key = { hdr.ipv4.dstAddr: exact; } actions = { a; }\n"
        "    implementation = action_profile(128); }\n"
        "apply { sel.apply(); prof.apply(); }")
    ctrl = prog.controls["I"]
    assert ctrl.tables["sel"].implementation == "sel"
    sel = ctrl.instances["sel"]
    algo = prog.types["HashAlgorithm"]
    assert (sel.type_name, sel.cp_name) == ("action_selector", "I.sel")
    assert sel.args == [ir.Const(algo.value_of("crc16"), type=algo), ir.Const(64, type=B32),
                        ir.Const(14, type=B32)]
    assert ctrl.instances["prof"].type_name == "action_profile"
    assert ctrl.instances["prof"].args == [ir.Const(128, type=B32)]


def test_switch_on_action_run_and_hit_miss_exit_return() -> None:
    prog = compile_ingress(
        "action a() { }\naction b() { return; }\n"
        "table t { key = { meta.m8: exact; } actions = { a; b; } }\n"
        "apply {\n"
        "    switch (t.apply().action_run) { a: b: { exit; } default: { } }\n"
        "    if (t.apply().miss) { return; }\n"
        "}")
    body = prog.controls["I"].body.stmts
    sw = body[0]
    assert isinstance(sw, ir.SwitchAction) and sw.table == "t"
    assert [c.actions for c in sw.cases] == [["I.a"], ["I.b"], None]
    assert sw.cases[0].body is None  # falls through to b
    assert isinstance(sw.cases[1].body.stmts[0], ir.Exit)
    assert body[1].cond == ir.TableHit("t", negate=True, type=ir.BoolType())
    assert isinstance(prog.actions["I.b"].body.stmts[0], ir.Return)


def test_externs_registers_counters_hash_random_clone_digest() -> None:
    prelude = "struct digest_t { bit<48> mac; bit<9> port; }\n"
    prog = compile_ingress(
        "register<bit<32>>(16) r;\ncounter(8, CounterType.packets) c;\n"
        "meter(4, MeterType.bytes) m;\n"
        "apply {\n"
        "    r.read(meta.m32, 3); r.write(3, meta.m32 + 1); c.count(2);\n"
        "    m.execute_meter(1, meta.m8);\n"
        "    hash(meta.m16, HashAlgorithm.crc32, 16w0, { hdr.ipv4.srcAddr, meta.m8 }, 32w1024);\n"
        "    random(meta.m8, 0, 100);\n"
        "    clone(CloneType.E2E, 5); resubmit_preserving_field_list(1);\n"
        "    recirculate_preserving_field_list(2);\n"
        "    digest<digest_t>(1, { hdr.ethernet.srcAddr, sm.ingress_port });\n"
        "    sm.mcast_grp = 3; assert(meta.m8 < 200); assume(true); truncate(100);\n"
        "    log_msg(\"plain\"); log_msg(\"v={}\", { meta.m8 });\n"
        "}", prelude)
    s = prog.controls["I"].body.stmts
    assert s[0] == ir.ExternCall("r", "read", [ir.Var("meta", type=prog.types["metadata"])
                                               and s[0].args[0], ir.Const(3, type=B32)])
    assert isinstance(s[0].args[0], ir.Member) and s[0].args[0].field == "m32"
    assert s[1].args[1].type == B32
    assert s[2] == ir.ExternCall("c", "count", [ir.Const(2, type=B32)])
    assert s[3].type_args == (B8,)
    h = s[4]
    assert h.method == "hash" and h.instance is None
    assert h.type_args == (B16, B16, ir.TupleType((B32, B8)), B32)
    rnd = s[5]
    assert rnd.args[1:] == [ir.Const(0, type=B8), ir.Const(100, type=B8)]
    assert [x.method for x in s[6:9]] == ["clone", "resubmit_preserving_field_list",
                                          "recirculate_preserving_field_list"]
    dg = s[9]
    assert dg.type_args == (prog.types["digest_t"],)
    assert dg.args[1].type == prog.types["digest_t"]
    assert prog.digests == [prog.types["digest_t"]]
    assert [x.method for x in s[11:]] == ["assert", "assume", "truncate", "log_msg", "log_msg"]
    insts = prog.controls["I"].instances
    assert insts["r"].type_args == (B32,) and insts["r"].cp_name == "I.r"
    assert insts["c"].args[1].value == prog.types["CounterType"].value_of("packets")


def test_parser_select_tuple_masks_ranges_value_sets_and_lookahead() -> None:
    parser = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(8) vs;
    bit<8> tmp;
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType, pkt.lookahead<bit<8>>()) {
            (0x0800, 0x45 &&& 0xf0): parse_ipv4;
            (vs, _): accept;
            (0x8100 .. 0x8101, default): reject;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.NoMatch);
        tmp = hdr.ipv4.ttl;
        pkt.advance(32);
    }
}
"""
    text = HEADERS + parser + "control I(inout headers hdr, inout metadata meta, " \
        "inout standard_metadata_t sm) { apply { } }\n" + REST
    prog = compile_source(text, "t.p4")
    p = prog.parsers["P"]
    assert p.value_sets["vs"].cp_name == "P.vs" and p.value_sets["vs"].size == 8
    assert [v.name for v in p.locals] == ["tmp"]
    tr = p.states["start"].transition
    assert isinstance(tr.select_keys[1], ir.Lookahead) and tr.select_keys[1].type == B8
    assert [c.keysets for c in tr.cases] == [
        [ir.KeysetValue(0x800), ir.KeysetMask(0x45, 0xF0)],
        [ir.KeysetValueSet("vs"), ir.KeysetDefault()],
        [ir.KeysetRange(0x8100, 0x8101), ir.KeysetDefault()],
        [ir.KeysetDefault(), ir.KeysetDefault()],
    ]
    st = p.states["parse_ipv4"]
    assert isinstance(st.stmts[1], ir.ExternCall) and st.stmts[1].method == "verify"
    assert isinstance(st.stmts[3], ir.Advance)
    assert st.transition.next_state == "reject"  # no transition statement


def test_header_stacks() -> None:
    text = HEADERS.replace("struct headers { ethernet_t ethernet; ipv4_t ipv4; }",
                           "header tag_t { bit<1> bos; bit<15> port; }\n"
                           "struct headers { ethernet_t ethernet; ipv4_t ipv4; tag_t[4] tags; }")
    text += """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.tags.next);
        transition select(hdr.tags.last.bos) { 0: start; default: accept; }
    }
}
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = (bit<9>) hdr.tags[0].port;
        hdr.tags.pop_front(1);
        hdr.tags.push_front(2);
        hdr.tags[1].setValid();
        meta.m32 = hdr.tags.lastIndex;
        meta.m8 = (bit<8>) hdr.tags.size;
        hdr.tags[meta.m8].port = 1;
    }
}
""" + REST.replace("pkt.emit(hdr.ethernet);", "pkt.emit(hdr.ethernet); pkt.emit(hdr.tags);")
    prog = compile_source(text, "t.p4")
    st = prog.parsers["P"].states["start"]
    assert isinstance(st.stmts[0].header, ir.StackNext)
    assert isinstance(st.transition.select_keys[0].base, ir.StackLast)
    body = prog.controls["I"].body.stmts
    tag = prog.types["tag_t"]
    assert isinstance(body[0].rhs.expr, ir.Member)
    assert body[0].rhs.expr.base == ir.StackElem(body[0].rhs.expr.base.stack,
                                                 ir.Const(0, type=B32), type=tag)
    assert body[1] == ir.StackMethod(body[1].stack, "pop_front", 1)
    assert body[2].method == "push_front" and body[2].count == 2
    assert isinstance(body[3], ir.HeaderMethod) and body[3].method == "setValid"
    assert isinstance(body[4].rhs, ir.StackProp) and body[4].rhs.prop == "lastIndex"
    assert body[5].rhs == ir.Const(4, type=B8)
    assert isinstance(body[6].lhs.base, ir.StackElem) and body[6].lhs.base.index.type == B8
    deparser = prog.controls["D"].body.stmts
    assert isinstance(deparser[1].header.type, ir.StackType)


def test_controller_headers_and_field_annotations() -> None:
    prelude = ('@controller_header("packet_in") header pin_t { bit<9> port; bit<7> pad; }\n'
               "struct fl_t { @field_list(1) bit<8> keep; bit<8> drop_; }\n")
    prog = compile_ingress("apply { }", prelude)
    assert prog.controller_headers["packet_in"] == prog.types["pin_t"]
    fl = prog.types["fl_t"]
    assert fl.fields[0].annotations == (("field_list", "1"),)


def test_top_level_actions_and_instances() -> None:
    prelude = ("action set_port(inout standard_metadata_t s, bit<9> p) { s.egress_spec = p; }\n"
               "counter(4, CounterType.packets) global_count;\n")
    prog = compile_ingress("apply { set_port(sm, 3); global_count.count(1); }", prelude)
    act = prog.actions["set_port"]
    assert act.cp_name == "set_port"
    assert [(p.name, p.direction) for p in act.params] == [("s", "inout"), ("p", "")]
    call = prog.controls["I"].body.stmts[0]
    assert call == ir.ActionCall("set_port", [call.args[0], ir.Const(3, type=B9)])
    assert prog.instances["global_count"].cp_name == "global_count"
    assert prog.controls["I"].body.stmts[1].instance == "global_count"
