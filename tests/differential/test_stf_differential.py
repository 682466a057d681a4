"""Every tests/stf/programs/*.stf through p4switch and through BMv2 simple_switch, its packets
followed by mutated copies of them: the packets leaving each port must be identical (the STF's
own ``expect`` lines play no part: BMv2 is the oracle). Skips with a reason without
p4c-bm2-ss/simple_switch on PATH, and per program where the set-up cannot reproduce the run on
BMv2 (differential.Unsupported) or a compiler refuses.

KNOWN_MISMATCHES lists the programs where the two targets differ, with the finding; they run
as strict xfails, so a fix is noticed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from bmv2_oracle import Bmv2Error, tools_missing
from differential import Packet, RecordingPipeline, Unsupported, run_bmv2

from p4switch.stf import StfRunner, parse_stf
from p4switch.stf import syntax as s

ROOT = Path(__file__).resolve().parents[2]
STF_DIR = ROOT / "tests" / "stf" / "programs"
PROGRAMS = sorted(STF_DIR.glob("*.p4"))

# stem -> the finding (reported to the lead / the pipeline's owner)
KNOWN_MISMATCHES: dict[str, str] = {
    "recirculate": (
        "BMv2 differs from v1model.p4's documented semantics, p4switch follows them: after "
        "recirculate_preserving_field_list(0) simple_switch 1.15.5 starts the next ingress "
        "pass with meta.passes (in field list 0) reset to 0 and instance_type 0 (p4switch: "
        "passes preserved, instance_type RECIRC=4); cf. p4lang/p4c#1669 on field lists"),
    "select_verify": (
        "BMv2 differs from the P4 spec (sec. 12.14), p4switch follows it: a select with no "
        "matching case and no default must reject with error.NoMatch; p4c's BMv2 JSON has no "
        "default transition and simple_switch accepts the packet with NoError"),
    "varbit_length_eq": (
        "BMv2 differs from the P4 spec (sec. 8.9), p4switch follows it: two varbits are equal "
        "only with the same dynamic width; simple_switch 1.15.5 finds 0xaa in 8 bits equal to "
        "0x00aa in 16 bits (field and whole-header ==)"),
    "union_stack_pop": (
        "BMv2 differs from the P4 spec (sec. 8.20), p4switch follows it: pop_front(n) on a "
        "header_union stack must leave the last n unions invalid; simple_switch 1.15.5 "
        "rotates them (the popped union comes back valid at the end)"),
}

# stem -> why mutated packets may legitimately leave differently (the STF's own still run)
UNSPECIFIED_ON_MUTANTS: dict[str, str] = {}
MUTANTS = 40

pytestmark = pytest.mark.skipif(tools_missing() is not None, reason=tools_missing() or "")


def program_params(programs: list[Path], known: dict[str, str]) -> list:
    """One pytest param per program (its stem as id), strictly xfail where ``known`` says why
    it differs."""
    return [pytest.param(p, id=p.stem, marks=[pytest.mark.xfail(strict=True, reason=known[p.stem])]
                         if p.stem in known else []) for p in programs]


def run_p4switch_stf(program_path: Path) -> tuple[object, RecordingPipeline, int]:
    """Compile with p4switch, run the STF through a recording pipeline; also returns how many
    check_counter / check_register lines it has."""
    from p4switch.frontend import compile_file
    from p4switch.pipeline import Pipeline

    stf = program_path.with_suffix(".stf")
    commands = parse_stf(stf.read_text(), str(stf))
    if any(isinstance(c, s.Wait) and c.micros for c in commands):
        raise Unsupported("uses `wait <us>` (p4switch's virtual clock; BMv2 runs on real time)")
    try:
        program = compile_file(program_path)
    except Exception as e:  # P4CompileError
        pytest.skip(f"p4switch's front end rejects it: {str(e).splitlines()[0]}")
    rec = RecordingPipeline(Pipeline(program, drop_port=511, cpu_port=None, seed=0))
    result = StfRunner(program, rec, str(stf)).run(commands)
    run_errors = [f for f in result.failures if "expected on port" not in f
                  and "unexpected packet" not in f and "check_" not in f]
    if run_errors:
        pytest.skip(f"the STF does not run on p4switch: {run_errors[0]}")
    checks = sum(isinstance(c, s.CheckCounter | s.CheckRegister) for c in commands)
    return program, rec, checks


def mutants(packets: list[Packet], n: int, seed: int) -> list[Packet]:
    """``n`` variants of the STF's packets, so that other select cases, table misses and
    checksum errors run too: bytes after the Ethernet header replaced, bytes appended. Never
    shorter, and the EtherType kept: a truncated or re-typed frame leaves headers invalid that
    most of these programs read unchecked, and such reads are unspecified (P4 spec 8.17) --
    p4switch reads 0, simple_switch whatever its reused PHV holds."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        base = rng.choice(packets)
        data = bytearray(base.data)
        for _ in range(rng.randrange(1, 4)):
            if rng.random() < 0.8 and len(data) > 14:
                data[rng.randrange(14, len(data))] = rng.randrange(256)
            else:
                data += rng.randbytes(rng.randrange(1, 16))
        out.append(Packet(base.port, bytes(data)))
    return out


@pytest.mark.parametrize("program_path", program_params(PROGRAMS, KNOWN_MISMATCHES))
def test_stf_program_matches_bmv2(program_path: Path, tmp_path: Path):
    """The STF's packets, then (unless the program's outputs are unspecified for some of them)
    MUTANTS mutated copies of them."""
    fuzz = 0 if program_path.stem in UNSPECIFIED_ON_MUTANTS else MUTANTS
    try:
        program, rec, checks = run_p4switch_stf(program_path)
        for p in mutants(rec.packets, fuzz, seed=len(rec.packets)):
            rec.process(p.data, p.port, 10_000_000)
        cmp = run_bmv2(program_path, program, rec, tmp_path)  # type: ignore[arg-type]  # a recording wrapper, not a Pipeline
    except Unsupported as e:
        pytest.skip(f"not reproducible on BMv2 here: {e}")
    except Bmv2Error as e:
        if "p4c rejects" in str(e) or "simple_switch exited" in str(e):
            pytest.skip(f"the reference toolchain cannot run it: {str(e)[:300]}")
        raise
    assert cmp.packets > 0
    if len({p.port for p in rec.packets}) == 1:  # replayed in order: every check compared
        assert len(cmp.probes) == checks
    problems = cmp.mismatches()
    assert not problems, "\n".join(problems + ["CLI commands:", *cmp.commands])
