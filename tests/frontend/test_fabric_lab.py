"""The realistic program (IPv4 LPM, ECMP hash and selector, flowlet registers, counters,
meters, clone, digest, source-routing stack, packet-in/out) compiles to the expected IR."""

from __future__ import annotations

from fe_helpers import PROGRAMS

from p4switch import ir
from p4switch.frontend import compile_file
from p4switch.frontend.__main__ import main


def test_fabric_lab_ir() -> None:
    prog = compile_file(PROGRAMS / "fabric_lab.p4")
    ing = prog.controls["LabIngress"]
    assert set(ing.tables) == {"ipv4_lpm", "ecmp_nhop", "ecmp_selector", "acl", "mac_learn"}
    assert {t.cp_name for t in prog.all_tables()} == {
        "LabIngress.ipv4_lpm", "LabIngress.ecmp_nhop", "LabIngress.ecmp_selector",
        "LabIngress.acl", "LabIngress.mac_learn"}
    lpm = ing.tables["ipv4_lpm"]
    assert lpm.annotations["id"] == "0x02000001"
    assert lpm.direct_counter == "lpm_hits" and lpm.size == 4096
    assert ing.tables["ecmp_nhop"].keys[0].name == "ecmp_select"
    assert ing.tables["ecmp_nhop"].default_action_const
    sel = ing.tables["ecmp_selector"]
    assert [k.match_kind for k in sel.keys] == ["lpm", "selector", "selector"]
    assert ing.instances[sel.implementation].type_name == "action_selector"
    acl = ing.tables["acl"]
    assert acl.has_priority and len(acl.const_entries) == 3

    insts = {i.cp_name: i for i in prog.all_instances()}
    assert insts["LabIngress.flowlet_id_reg"].type_args == (ir.BitsType(16),)
    assert insts["LabIngress.flowlet_last_seen"].args == [ir.Const(1024, type=ir.BitsType(32))]
    assert insts["LabIngress.port_counter"].type_name == "counter"
    assert insts["LabIngress.port_meter"].type_name == "meter"

    assert set(prog.controller_headers) == {"packet_in", "packet_out"}
    assert [d.name for d in prog.digests] == ["learn_t"]
    meta = prog.types["metadata_t"]
    assert dict(meta.fields[1].annotations) == {"field_list": "1"}

    parser = prog.parsers["LabParser"]
    assert parser.value_sets["tunnel_types"].cp_name == "LabParser.tunnel_types"
    ipv4 = parser.states["parse_ipv4"].transition
    assert len(ipv4.select_keys) == 2
    assert ipv4.cases[0].keysets == [ir.KeysetValue(6), ir.KeysetValue(0)]
    udp = parser.states["parse_udp"]
    assert isinstance(udp.stmts[0], ir.VarDecl) and isinstance(udp.stmts[0].init, ir.Lookahead)
    assert udp.transition.cases[0].keysets == [ir.KeysetRange(4790, 4799)]

    # every action referenced by a table exists, and every expression is typed
    for t in prog.all_tables():
        for r in t.actions:
            assert r.action in prog.actions
        for k in t.keys:
            assert k.width > 0


def test_command_line_checker(capsys) -> None:  # noqa: ANN001
    assert main([str(PROGRAMS / "fabric_lab.p4")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: 5 tables, 6 actions, 1 parsers, 5 controls, 6 extern instances")
    assert main([str(PROGRAMS / "fabric_lab.p4"), "--dump", "-D", "FLOWLET_SLOTS=8"]) == 0
    assert "register<bit<48>>(8:bit<32>) flowlet_last_seen" in capsys.readouterr().out
    assert main([str(PROGRAMS / "does_not_exist.p4")]) == 1
    assert "error: cannot read" in capsys.readouterr().err
