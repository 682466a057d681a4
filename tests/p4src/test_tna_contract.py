"""The contract between the two data planes: p4src/fabric.p4 (v1model) and p4src/tna/fabric.p4
(Tofino) give the controller the same tables, actions, parameters, registers, counters and
constants, except where ``model.tna.DIFFERENCES`` says otherwise (and the tofino target handles
it). The v1model side is p4switch's P4Info of fabric.p4; the TNA side is read from the program's
declarations (tests/p4src/p4contract.py) and, where the Tofino compiler is on PATH, also from
the P4Info it writes. A change to one program that the other misses fails here.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
from pathlib import Path

import p4contract as pc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from model import tna
from p4switch import build_p4info, compile_file

ROOT = Path(__file__).resolve().parents[2]
P4SRC = ROOT / "p4src"
V1 = P4SRC / "fabric.p4"
TNA = P4SRC / "tna" / "fabric.p4"
CONTRACT = P4SRC / "include" / "contract.p4"
DECLARED = {(d.kind, d.name, d.v1model, d.tna) for d in tna.DIFFERENCES}


def v1_contract(program: Path = V1) -> pc.Contract:
    return pc.from_p4info(build_p4info(compile_file(program)))


@pytest.fixture(scope="module")
def v1() -> pc.Contract:
    return v1_contract()


@pytest.fixture(scope="module")
def tna_src() -> pc.Contract:
    return pc.from_tna_source(TNA)


def _report(found: set[pc.Difference]) -> str:
    new = sorted(found - DECLARED)
    gone = sorted(DECLARED - found)
    return ("\nundeclared (fix the program that missed the change, or declare it in "
            "model/tna.py DIFFERENCES and handle it):\n  " + "\n  ".join(map(str, new))
            + "\ndeclared but no longer true (drop from DIFFERENCES and the docs):\n  "
            + "\n  ".join(map(str, gone)))


# ---- constants: one shared include ---------------------------------------------------------
def _defined_names(text: str) -> set[str]:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return (set(re.findall(r"#define\s+(\w+)", text))
            | set(re.findall(r"\bconst\s+[\w<>]+\s+(\w+)\s*=", text)))


def test_both_programs_include_the_shared_constants():
    includes = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    v1_incs = [(P4SRC / "include" / i).resolve() for i in
               includes.findall((P4SRC / "include" / "defines.p4").read_text())]
    tna_incs = [(TNA.parent / i).resolve() for i in includes.findall(TNA.read_text())]
    assert CONTRACT.resolve() in v1_incs
    assert CONTRACT.resolve() in tna_incs
    assert "defines.p4" in V1.read_text()


def test_no_program_redefines_a_contract_constant():
    shared = _defined_names(CONTRACT.read_text())
    assert {"LB_MAX_GROUPS", "ROT_SLOTS", "SCHEME_WAM", "DROP_LB_MEMBER_MISS"} <= shared
    for f in sorted(P4SRC.rglob("*.p4")):
        if f.resolve() == CONTRACT.resolve():
            continue
        again = _defined_names(f.read_text()) & shared
        assert not again, f"{f.relative_to(ROOT)} redefines {sorted(again)} of contract.p4"


def test_the_tna_parser_sees_the_shared_constants(tna_src):
    text = CONTRACT.read_text()
    for name, value in re.findall(r"#define\s+(\w+)\s+(\d+)", text):
        assert tna_src.constants[name] == int(value), name
    assert tna_src.constants["CPU_PORT"] == 192  # the one constant each program sets itself


# ---- tables, actions, registers, counters ----------------------------------------------------
def test_tna_differs_from_fabric_p4_only_as_declared(v1, tna_src):
    found = pc.differences(v1, tna_src)
    assert found == DECLARED, _report(found)


def test_the_contract_is_not_empty(v1, tna_src):
    """Guards the parser: a regex that stops matching would make both sides look alike."""
    for c in (v1, tna_src):
        assert len(c.tables) >= 6 and len(c.actions) >= 15
        assert len(c.registers) == 6 and len(c.counters) == 4
        assert c.direct_counters == {"MyIngress.ipv4_lpm_ctr": "MyIngress.ipv4_lpm"}
        assert set(c.packet_metadata) == {"packet_in", "packet_out"}


def _controller_names() -> set[str]:
    """Every "MyIngress.x" / "MyEgress.x" string the controller side names (model/, controller/)."""
    names = set()
    for pkg in ("model", "controller"):
        for f in (ROOT / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(f.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    names |= set(re.findall(r"\b(My(?:Ingress|Egress)\.\w+)\b", node.value))
    return names


def test_every_name_the_controller_uses_is_in_the_programs(v1, tna_src):
    def declared(c: pc.Contract) -> set[str]:
        return (set(c.tables) | set(c.actions) | set(c.registers) | set(c.counters)
                | set(c.direct_counters) | set(c.profiles))

    only_tna = {d.name for d in tna.DIFFERENCES if d.v1model == pc.ABSENT}
    used = _controller_names()
    assert {"MyIngress.lb_group", "MyIngress.drop_ctr", "MyEgress.port_qdepth_max"} <= used
    assert not (used - only_tna) - declared(v1), sorted((used - only_tna) - declared(v1))
    assert not used - declared(tna_src), sorted(used - declared(tna_src))


# ---- the test fails on a change one side misses -----------------------------------------------
def _copy_p4src(tmp_path: Path) -> Path:
    dst = tmp_path / "p4src"
    shutil.copytree(P4SRC, dst)
    return dst


def test_a_tna_only_change_fails_the_contract(tmp_path, v1):
    src = _copy_p4src(tmp_path)
    prog = src / "tna" / "fabric.p4"
    text = prog.read_text()
    changed = text.replace("action set_ecn_threshold(bit<19> qdepth)",
                           "action set_ecn_threshold(bit<16> qdepth)")
    changed = changed.replace("Register<bit<16>, bit<16>>(ROT_SLOTS, 0) rot_next;",
                              "Register<bit<16>, bit<16>>(ROT_SLOTS, 0) rotation_next;")
    assert changed.count("bit<16> qdepth") == 1 and "rotation_next" in changed
    prog.write_text(changed)
    found = pc.differences(v1, pc.from_tna_source(prog)) - DECLARED
    assert ("action", "MyEgress.set_ecn_threshold", "qdepth:19", "qdepth:16") in found
    assert ("register", "MyIngress.rot_next", "bit<16> x 16384", pc.ABSENT) in found


def test_a_v1model_only_change_fails_the_contract(tmp_path, tna_src):
    src = _copy_p4src(tmp_path)
    ingress = src / "include" / "ingress.p4"
    text = ingress.read_text()
    changed = text.replace("action lb_rotate(bit<16> n_members)",
                           "action lb_rotate(bit<16> n_members, bit<16> stride)")
    assert changed != text
    ingress.write_text(changed)
    found = pc.differences(v1_contract(src / "fabric.p4"), tna_src) - DECLARED
    assert ("action", "MyIngress.lb_rotate", "n_members:16, stride:16", "n_members:16") in found


def test_a_shared_constant_change_reaches_both(tmp_path):
    src = _copy_p4src(tmp_path)
    contract = src / "include" / "contract.p4"
    contract.write_text(contract.read_text().replace("#define ROT_SLOTS          16384",
                                                     "#define ROT_SLOTS          8192"))
    v1 = v1_contract(src / "fabric.p4")
    t = pc.from_tna_source(src / "tna" / "fabric.p4")
    assert v1.registers["MyIngress.rot_next"] == t.registers["MyIngress.rot_next"] == (16, 8192)
    assert pc.differences(v1, t) == DECLARED


# ---- the Tofino compiler's P4Info (where it is installed) ---------------------------------------
def _tofino_script():
    spec = importlib.util.spec_from_file_location("tofino_script", ROOT / "scripts" / "tofino.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TOFINO = _tofino_script()
COMPILER = TOFINO.find_compiler()
NO_COMPILER = ("no Tofino compiler on PATH (bf-p4c or p4c-barefoot: p4lang/p4c built with "
               "-DENABLE_TOFINO=ON, docs/tofino.md)")


@pytest.fixture(scope="module", params=sorted(TOFINO.CHIPS))
def compiled(request, tmp_path_factory):
    """(chip, P4Info, resource summary) of p4src/tna/fabric.p4 through the Tofino compiler."""
    if COMPILER is None:
        pytest.skip(NO_COMPILER)
    chip = request.param
    out = tmp_path_factory.mktemp(chip)
    r, _secs = TOFINO.compile_for(COMPILER, chip, out)
    assert r.returncode == 0, r.stderr
    info = p4info_pb2.P4Info()
    text_format.Parse((out / "p4info.txtpb").read_text(), info)
    return chip, info, TOFINO.summary(out)


def test_tofino_compiler_p4info_matches_the_declared_contract(compiled, v1, tna_src):
    _chip, info, _summary = compiled
    bf = pc.from_p4info(info, pipe_prefix="pipe.")
    assert set(bf.tables) == set(tna_src.tables)
    assert set(bf.actions) == set(tna_src.actions)
    assert set(bf.registers) == set(tna_src.registers)
    assert set(bf.counters) == set(tna_src.counters)
    for name, t in tna_src.tables.items():
        assert bf.tables[name].keys == t.keys, name
        assert set(bf.tables[name].actions) == set(t.actions), name
    for name, a in tna_src.actions.items():
        assert bf.actions[name].params == a.params, name
    found = pc.differences(v1, bf)
    # the compiler may size tables/profiles and name the selector its own way: names must hold
    kinds = {"table-size", "action-profile", "table-implementation"}
    assert {d for d in found if d[0] not in kinds} == {d for d in DECLARED if d[0] not in kinds}


LOGICAL_TABLES_PER_STAGE = 16
"""Logical table ids per MAU stage, Tofino 1 and 2."""


def test_tofino_compile_fits_the_pipeline(compiled):
    chip, _info, summary = compiled
    assert summary, "the compiler wrote no metrics.json/resources.json"
    assert "stages_used" in summary, summary
    assert 0 < summary["stages_used"] <= TOFINO.STAGES[chip], summary
    assert max(summary["tables_per_stage"]) <= LOGICAL_TABLES_PER_STAGE, summary
    # every register of the program got a stateful ALU (the selector takes one more)
    registers = (ROOT / "p4src" / "tna" / "fabric.p4").read_text().count("Register<")
    assert registers and summary["stateful_alus"] >= registers, summary


def test_the_docs_name_every_declared_difference():
    docs = (ROOT / "docs" / "tofino.md").read_text()
    for d in tna.DIFFERENCES:
        assert d.name.split(".")[-1] in docs, d.name
