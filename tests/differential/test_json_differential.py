"""Every program of tests/stf/programs/ and p4src/fabric.p4, compiled by p4c-bm2-ss to BMv2
JSON and run by p4switch from that JSON, against the same program run by p4switch from its P4
source: the same state, the same packets (each STF's own, then mutated copies; for fabric.p4
the controller's entries for every scheme and a seeded random stream) must leave the same
ports with the same bytes, and every counter and register must end equal. Skips without
p4c-bm2-ss on PATH.

Where the JSON cannot say what the source says, the JSON path does what BMv2 does with that
JSON (JSON_DIFFERS, strict xfails; each also listed in docs/bmv2-compat.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from bmv2_oracle import P4C, p4c_env, tools_missing
from differential import RecordingPipeline, run_bmv2
from test_stf_differential import mutants, program_params

from p4switch import bmv2json, ir
from p4switch.pipeline import Pipeline
from p4switch.stf import StfRunner, parse_stf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "p4src"))
import fabric_harness as fh  # noqa: E402  (tests/p4src has no package)

ROOT = Path(__file__).resolve().parents[2]
STF_PROGRAMS = sorted((ROOT / "tests" / "stf" / "programs").glob("*.p4"))
MUTANTS = 20

#: stem -> what the JSON lacks (the JSON path then behaves as simple_switch does)
JSON_DIFFERS: dict[str, str] = {
    "select_verify": "p4c writes no reject for a select without a matching case; BMv2 (and "
                     "p4switch from the JSON) accept the packet, the source path rejects it",
    "action_selector": "BMv2 JSON has no default entry for an action-selector table: a miss "
                       "runs no action there (the source's default_action = drop() is lost)",
    "action_profile": "BMv2 JSON has no default entry for an action-profile table: a miss "
                      "runs no action there (the source's default_action = drop() is lost)",
}
#: stem -> why the JSON is refused (a construct the JSON front end does not map)
JSON_REFUSED: dict[str, str] = {}
P4INFO_KINDS = ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
                "direct_meters", "registers", "digests", "controller_packet_metadata")

pytestmark = pytest.mark.skipif(shutil.which(P4C) is None, reason=f"{P4C} not on PATH")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, Path | str]:
    """stem -> the JSON p4c wrote, or why p4c refused (compiled two at a time)."""
    out_dir = tmp_path_factory.mktemp("p4c-json")

    def one(p: Path) -> tuple[str, Path | str]:
        out = out_dir / f"{p.stem}.json"
        r = subprocess.run([P4C, "--p4runtime-files", str(out.with_suffix(".p4info.txtpb")),
                            "-o", str(out), str(p)], capture_output=True, text=True,
                           timeout=180, env=p4c_env())
        if r.returncode != 0:
            return p.stem, f"p4c rejects {p.name}: " + next(
                (ln.strip() for ln in r.stderr.splitlines() if "error" in ln), "(no message)")
        return p.stem, out

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(one, STF_PROGRAMS + [fh.FABRIC_P4]))


def _json_program(compiled: dict, stem: str) -> ir.Program:
    got = compiled[stem]
    if isinstance(got, str):
        pytest.skip(f"p4c refuses it: {got}")
    return bmv2json.load_file(got)


def _final_state(pl: Pipeline, program: ir.Program) -> dict:
    out = {}
    for inst in program.all_instances():
        n = int(inst.args[0].value) if inst.args and isinstance(inst.args[0], ir.Const) else 0
        if inst.type_name == "counter":
            out[inst.cp_name] = [tuple(pl.counter_read(inst.cp_name, i)) for i in range(n)]
        elif inst.type_name == "register":
            out[inst.cp_name] = [pl.register_read(inst.cp_name, i) for i in range(n)]
    return out


def _run_stf(program: ir.Program, stf: Path) -> tuple[RecordingPipeline, Pipeline]:
    pl = Pipeline(program, drop_port=511, cpu_port=None, seed=0)
    rec = RecordingPipeline(pl)
    StfRunner(program, rec, str(stf)).run(parse_stf(stf.read_text(), str(stf)))
    return rec, pl


@pytest.mark.parametrize("program_path", program_params(STF_PROGRAMS, JSON_DIFFERS))
def test_stf_program_from_json_equals_source(program_path: Path, compiled):
    if program_path.stem in JSON_REFUSED:
        with pytest.raises(bmv2json.Bmv2JsonError, match=JSON_REFUSED[program_path.stem]):
            _json_program(compiled, program_path.stem)
        return
    from p4switch.frontend import compile_file

    src_prog = compile_file(program_path)
    json_prog = _json_program(compiled, program_path.stem)
    stf = program_path.with_suffix(".stf")
    src, src_pl = _run_stf(src_prog, stf)
    js, js_pl = _run_stf(json_prog, stf)
    for p in mutants(src.packets, MUTANTS, seed=len(src.packets)):
        src.process(p.data, p.port, 10_000_000)
        js.process(p.data, p.port, 10_000_000)
    assert [p.outputs for p in js.packets] == [p.outputs for p in src.packets]
    assert js.p4switch_outputs == src.p4switch_outputs
    probes = [e for e in src.timeline if not isinstance(e, tuple) and hasattr(e, "kind")]
    assert probes == [e for e in js.timeline if not isinstance(e, tuple) and hasattr(e, "kind")]
    assert _final_state(js_pl, src_prog) == _final_state(src_pl, src_prog)


def test_fabric_from_json_equals_source_for_every_scheme(compiled, monkeypatch):
    """fabric.p4's controller entries for ECMP, rotation, WaM (test_fabric_differential's set),
    plus flowlet and random spraying groups (same seed and clock on both sides)."""
    import random

    from test_fabric_differential import fabric_with_routes, random_frame

    json_prog = _json_program(compiled, "fabric")
    runs = {}
    for label, prog in (("source", fh.program()), ("json", json_prog)):
        monkeypatch.setattr(fh, "program", lambda prog=prog: prog)
        f, rec = fabric_with_routes()
        f.route_group("10.8.0.0", 16, group_id=4)
        f.group_flowlet(4, 2, timeout_us=100, seed=3)
        f.members(4, 2, port0=14)
        f.route_group("10.9.0.0", 16, group_id=5)
        f.group_random(5, 3)
        f.members(5, 3, port0=20)
        rng = random.Random(20261201)
        for k in range(300):
            f.now += rng.choice([1, 50, 500])
            frame = random_frame(rng)
            if k % 7 == 0:
                frame = fh.fast_pkt(fh.ip_int("10.1.0.9"), fh.ip_int(rng.choice(
                    ["10.8.0.5", "10.9.0.5"])), sport=rng.randrange(1024, 1030))
            f.send(frame, port=rng.choice([1, 2, 3]))
        runs[label] = (rec, f.p.inner)
    (src, src_pl), (js, js_pl) = runs["source"], runs["json"]
    assert sum(len(v) for v in src.p4switch_outputs.values()) > 100
    assert js.p4switch_outputs == src.p4switch_outputs
    assert _final_state(js_pl, json_prog) == _final_state(src_pl, json_prog)


@pytest.mark.parametrize("program_path", STF_PROGRAMS + [fh.FABRIC_P4], ids=lambda p: p.stem)
def test_p4info_from_json_has_p4cs_ids(program_path: Path, compiled):
    """The P4Info p4switch derives from the JSON (given p4c's, for what the JSON lacks) names
    the same objects with the same ids as p4c's, and p4c's passes the server's check."""
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    from p4switch import p4info
    from p4switch.runtime.schema import check_compatible

    if program_path.stem in JSON_REFUSED:
        pytest.skip(f"refused: {JSON_REFUSED[program_path.stem]}")
    got = compiled[program_path.stem]
    if isinstance(got, str):
        pytest.skip(got)
    theirs = text_format.Parse(got.with_suffix(".p4info.txtpb").read_text(), p4info_pb2.P4Info())
    mine = p4info.build_p4info(bmv2json.load_file(got, theirs))

    def ids(info: p4info_pb2.P4Info) -> list[tuple[str, str, int]]:
        return sorted((k, o.preamble.name, o.preamble.id) for k in P4INFO_KINDS
                      for o in getattr(info, k))

    assert ids(mine) == ids(theirs)
    check_compatible(theirs, mine)


@pytest.mark.skipif(tools_missing() is not None, reason=tools_missing() or "")
@pytest.mark.parametrize("stem", sorted(JSON_DIFFERS))
def test_where_the_json_lost_information_p4switch_from_json_does_what_bmv2_does(
        stem: str, compiled, tmp_path: Path):
    """The JSON_DIFFERS programs: p4switch from the JSON, replayed on simple_switch through
    tests/differential's harness (which gives BMv2 no default entry it did not get from the
    JSON), leaves the same packets on the same ports."""
    program_path = ROOT / "tests" / "stf" / "programs" / f"{stem}.p4"
    json_prog = _json_program(compiled, stem)
    rec, _ = _run_stf(json_prog, program_path.with_suffix(".stf"))
    for p in mutants(rec.packets, MUTANTS, seed=len(rec.packets)):
        rec.process(p.data, p.port, 10_000_000)
    cmp = run_bmv2(program_path, json_prog, rec, tmp_path)
    problems = cmp.mismatches()
    assert not problems, "\n".join(problems)
