"""p4switch's v1model.p4 follows p4c's V1MODEL_VERSION convention: without a definition the
version is 20180101 (bit<32> indexes), a program defining 20200408 or later gets
counter<I>, meter<I>, register<T, I> and PortId_t."""

from __future__ import annotations

from pathlib import Path

import pytest
from fe_helpers import compile_error, line_of

from p4switch import ir
from p4switch.frontend import compile_source
from p4switch.stf import run_stf

STF = Path(__file__).resolve().parents[1] / "stf" / "programs"
PROGRAM = STF / "v1model_20200408.p4"


def _without_version() -> str:
    return PROGRAM.read_text().replace("#define V1MODEL_VERSION 20200408\n", "").replace(
        "PortId_t out_port", "bit<9> out_port")


def _version_const(prog_text: str) -> int:
    text = prog_text.replace("hdr.h.colour = meta.colour;",
                             "hdr.h.colour = meta.colour; hdr.h.val = (bit<8>)__v1model_version;")
    prog = compile_source(text, "v.p4")
    [assign] = [s for s in prog.controls["VIngress"].body.stmts
                if isinstance(s, ir.Assign) and getattr(s.lhs, "field", "") == "val"]
    return assign.rhs.value


def test_the_default_version_is_p4cs_20180101() -> None:
    text = _without_version()
    err = compile_error(text, "v.p4")
    assert err.loc.line == line_of(text, "counter<bit<8>>(16")
    assert "expects 0 type arguments, got 1" in err.message


def _older() -> str:
    return _without_version().replace("counter<bit<8>>", "counter").replace(
        "meter<bit<8>>", "meter").replace("register<bit<8>, bit<8>>", "register<bit<8>>").replace(
        "hdr.h.idx", "(bit<32>)hdr.h.idx")


def test_the_older_forms_index_by_bit32() -> None:
    text = _older()
    prog = compile_source(text, "v.p4")
    hits = prog.controls["VIngress"].instances["hits"]
    assert hits.type_args == ()


def test_version_20200408_takes_index_types_and_portid() -> None:
    prog = compile_source(PROGRAM.read_text(), "v.p4")
    inst = prog.controls["VIngress"].instances
    assert inst["hits"].type_args == (ir.BitsType(8),)
    assert inst["rate"].type_args == (ir.BitsType(8),)
    assert inst["cells"].type_args == (ir.BitsType(8), ir.BitsType(8))
    assert _version_const(PROGRAM.read_text()) == 20200408 % 256  # (bit<8>) of the constant


def test_version_20200408_register_index_must_have_type_i() -> None:
    text = PROGRAM.read_text().replace("cells.read(hdr.h.old, hdr.h.idx);",
                                       "cells.read(hdr.h.old, 16w3);")
    err = compile_error(text, "v.p4")
    assert err.loc.line == line_of(text, "cells.read(hdr.h.old, 16w3)")


@pytest.mark.parametrize("index,count", [(3, 2), (5, 1), (4, 0)])
def test_version_20200408_counter_counts_at_its_typed_index(tmp_path: Path, index: int,
                                                            count: int) -> None:
    stf = tmp_path / "v.stf"
    stf.write_text((STF / "v1model_20200408.stf").read_text()
                   + f"check_counter hits({index}) packets == {count}\n")
    result = run_stf(PROGRAM, stf, strict=True)
    assert result.ok, "\n".join(result.failures)


def test_the_version_constant_follows_the_definition() -> None:
    assert _version_const(_older()) == 20180101 % 256
