"""p4switch's P4Info equals p4c's for every P4 program of the repository (tests/ and p4src/,
include directories aside): entity by entity, and then as text after dropping ``pkg_info``
(same objects, order, ids, names, widths, annotations and ``type_info``) -- so a controller
holding either P4Info drives either target. Needs ``p4c-bm2-ss`` on PATH
(p4c's BMv2 back end, on PATH); skips otherwise.

What is compared: every entity of every kind (matched by name), with all its fields -- ids,
names, aliases, widths, match kinds, scopes, sizes, default actions, resources -- and the whole
``type_info``; annotation strings exactly as written (quotes included). Where p4c rejects a
program, or p4switch's front end does, the case skips with the reason (acceptance is tested by tests/stf, not here).
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.frontend import compile_file
from p4switch.p4info import build_p4info

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted(p for d in ("tests", "p4src") for p in (ROOT / d).rglob("*.p4")
                  if "include" not in p.relative_to(ROOT).parts)
# program stem -> what p4c does wrong with it (the test checks that p4c still fails, so a
# fixed p4c is noticed, and that p4switch's P4Info has what the program declares)
P4C_FAILS: dict[str, str] = {
    "enum_register_size": ("p4c-bm2-ss 1.2.5.16 crashes (SIGSEGV) writing the P4Info of a "
                           "register sized by a serializable enum member (its BMv2 JSON is "
                           "fine); the same size for a counter works"),
}
KINDS = (
    "tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
    "direct_meters", "controller_packet_metadata", "value_sets", "registers", "digests",
)

P4C = shutil.which("p4c-bm2-ss")
pytestmark = pytest.mark.skipif(
    P4C is None, reason="p4c-bm2-ss not on PATH")


def p4c_env(p4c: str) -> dict[str, str]:
    """p4c finds core.p4/v1model.p4 through P4C_16_INCLUDE_PATH when its install prefix is not
    the one it was built for (the p4tools bundle ships them in share/p4c/p4include)."""
    env = dict(os.environ)
    inc = Path(p4c).resolve().parent.parent / "share" / "p4c" / "p4include"
    if inc.is_dir() and "P4C_16_INCLUDE_PATH" not in env:
        env["P4C_16_INCLUDE_PATH"] = str(inc)
    return env


def p4c_p4info(program: Path, workdir: Path) -> p4info_pb2.P4Info:
    out = workdir / "p4c.p4info.txtpb"
    r = subprocess.run(
        [P4C, "--p4runtime-files", str(out), "-o", str(workdir / "p4c.json"), str(program)],
        capture_output=True, text=True, timeout=120, env=p4c_env(P4C),
    )
    if r.returncode != 0:
        errors = [ln for ln in r.stderr.splitlines() if "error" in ln] or ["(no message)"]
        pytest.skip(f"p4c rejects {program.name}: {errors[0].strip()}")
    info = p4info_pb2.P4Info()
    text_format.Parse(out.read_text(), info)
    return info


def differences(ours: p4info_pb2.P4Info, theirs: p4info_pb2.P4Info) -> list[str]:
    """Human-readable differences, one per entity (or per missing/extra entity)."""
    out: list[str] = []
    for kind in KINDS:
        mine = {o.preamble.name: o for o in getattr(ours, kind)}
        ref = {o.preamble.name: o for o in getattr(theirs, kind)}
        for name in sorted(ref.keys() - mine.keys()):
            out.append(f"{kind} {name}: only in p4c's P4Info")
        for name in sorted(mine.keys() - ref.keys()):
            out.append(f"{kind} {name}: only in p4switch's P4Info")
        for name in sorted(mine.keys() & ref.keys()):
            a, b = type(mine[name])(), type(ref[name])()
            a.CopyFrom(mine[name])
            b.CopyFrom(ref[name])
            if a != b:
                out.append(f"{kind} {name}:\n  p4switch: {text_format.MessageToString(a)}"
                           f"\n  p4c:      {text_format.MessageToString(b)}")
    if ours.type_info != theirs.type_info:
        out.append(f"type_info:\n  p4switch: {ours.type_info}\n  p4c:      {theirs.type_info}")
    return out


def text_without_pkg_info(info: p4info_pb2.P4Info) -> str:
    copy = p4info_pb2.P4Info()
    copy.CopyFrom(info)
    copy.ClearField("pkg_info")
    return text_format.MessageToString(copy)


@pytest.mark.parametrize("program", [pytest.param(p, id=str(p.relative_to(ROOT)))
                                     for p in PROGRAMS if p.stem not in P4C_FAILS])
def test_p4info_equals_p4cs(program: Path, tmp_path: Path):
    theirs = p4c_p4info(program, tmp_path)
    try:
        prog = compile_file(program)
    except Exception as e:  # P4CompileError: file:line:col: error: ...
        pytest.skip(f"p4switch's front end rejects {program.name}: {str(e).splitlines()[0]}")
    ours = build_p4info(prog)
    diffs = differences(ours, theirs)
    assert not diffs, "\n".join(diffs)
    assert ours.pkg_info.arch == theirs.pkg_info.arch == "v1model"
    # the whole text: also the order of the objects and whether type_info is there
    mine, ref = text_without_pkg_info(ours), text_without_pkg_info(theirs)
    if mine != ref:
        diff = difflib.unified_diff(ref.splitlines(), mine.splitlines(), "p4c", "p4switch",
                                    lineterm="", n=1)
        pytest.fail("P4Info text differs:\n" + "\n".join(list(diff)[:60]))


def test_the_comparison_sees_a_wrong_id(tmp_path: Path):
    """The comparison is not vacuous: one changed id, alias or width is reported."""
    theirs = p4c_p4info(ROOT / "p4src" / "fabric.p4", tmp_path)
    for mutate in (
        lambda p: setattr(p.tables[0].preamble, "id", p.tables[0].preamble.id + 1),
        lambda p: setattr(p.actions[0].preamble, "alias", "x"),
        lambda p: setattr(p.tables[0].match_fields[0], "bitwidth", 3),
    ):
        ours = build_p4info(compile_file(ROOT / "p4src" / "fabric.p4"))
        mutate(ours)
        assert differences(ours, theirs)


@pytest.mark.parametrize("stem", sorted(P4C_FAILS))
def test_where_p4c_fails_p4switch_writes_the_p4info(stem: str, tmp_path: Path):
    [program] = [p for p in PROGRAMS if p.stem == stem]
    r = subprocess.run(
        [P4C, "--p4runtime-files", str(tmp_path / "p.txtpb"), "-o", str(tmp_path / "p.json"),
         str(program)], capture_output=True, text=True, timeout=120, env=p4c_env(P4C))
    assert r.returncode != 0, f"p4c no longer fails on {stem}: drop it from P4C_FAILS"
    ours = build_p4info(compile_file(program))
    assert [(r.preamble.name, r.size) for r in ours.registers] == [("ErIngress.cells", 4)]
