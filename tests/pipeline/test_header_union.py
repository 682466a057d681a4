"""header_union validity rules where the P4 spec (8.19) and BMv2 1.15.5 differ, so the
differential STF cannot check them: assigning an invalid header to a member, or setInvalid()
of any member, leaves the whole union invalid. Both pipeline paths, in lock-step."""

from __future__ import annotations

from pathlib import Path

from p4switch.frontend import compile_file, compile_source
from p4switch.pipeline import Pipeline

PROGRAM = (Path(__file__).resolve().parents[1] / "stf" / "programs" / "header_union.p4")


def _pipelines() -> tuple[Pipeline, Pipeline]:
    text = PROGRAM.read_text().replace(
        "        } else if (hdr.sel.op == 4) {",
        "        } else if (hdr.sel.op == 3) {\n            a_t none;\n            hdr.u.a = none;\n"
        "        } else if (hdr.sel.op == 5) {\n            hdr.u.b.setInvalid();\n"
        "        } else if (hdr.sel.op == 4) {")
    prog = compile_source(text, str(PROGRAM))
    fused = Pipeline(prog)
    general = Pipeline(prog)
    general._fused = general._fused_lean = None
    vars(general).pop("process", None)
    vars(general).pop("process_fast", None)
    assert fused._fused is not None
    return fused, general


def _run(pipes: tuple[Pipeline, Pipeline], data: bytes) -> bytes:
    a, b = (p.process(data, 0, 0) for p in pipes)
    assert a == b
    [out] = a.outputs
    return out.data


def test_invalid_member_assignment_and_set_invalid_invalidate_the_union() -> None:
    pipes = _pipelines()
    # b valid; u.a = (invalid a): nothing of the union is emitted
    assert _run(pipes, bytes.fromhex("020300 2233 ee")) == bytes.fromhex("020301 ee")
    # a valid; u.b.setInvalid() (b was not valid): a is invalid too
    assert _run(pipes, bytes.fromhex("010500 11 ee")) == bytes.fromhex("010501 ee")
    # unchanged otherwise
    assert _run(pipes, bytes.fromhex("010000 11 ee")) == bytes.fromhex("010001 11 ee")


def test_header_union_program_compiles_with_the_union_as_a_struct() -> None:
    prog = compile_file(PROGRAM)
    u = prog.types["ab_t"]
    assert u.union and [f.name for f in u.fields] == ["a", "b"]
