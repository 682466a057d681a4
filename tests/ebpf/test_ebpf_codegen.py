"""The eBPF back end without root: refusals are located ``file:line:col`` errors, programs the
back end accepts compile with clang (when installed), and ``--target ebpf`` without the
toolchain is a one-line error."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from p4switch import ir
from p4switch.ebpf import cgen, toolchain
from p4switch.frontend import compile_file

ROOT = Path(__file__).resolve().parents[2]
STF = ROOT / "tests" / "stf" / "programs"


# every STF program is accepted now: the refusals are checked on variants of them
_WIDE = """#include <core.p4>
#include <v1model.p4>
header wide_t { bit<128> addr; }
struct headers_t { wide_t w; }
struct metadata_t { }
parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) { state start { pkt.extract(hdr.w); transition accept; } }
control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; } }
control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control V(inout headers_t hdr, inout metadata_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.w); } }
V1Switch(P(), V(), I(), E(), V(), D()) main;
"""


@pytest.mark.parametrize("stem,old,new,what", [
    ("varbit_checksum", "varbit<64>", "varbit<128>", "of type varbit<128> (wider than 64 bits)"),
    ("recirculate", "sm.egress_spec = 2;", "sm.egress_spec = 2; clone(CloneType.I2E, 1);",
     "recirculate in a program that clones or multicasts"),
    ("recirculate", "recirculate_preserving_field_list(0);", "",
     None),  # the unchanged program, minus its recirculation: accepted
    ("wide", "", "", "wider than 64 bits"),
])
def test_refusals_are_located(tmp_path: Path, stem: str, old: str, new: str,
                              what: str | None) -> None:
    src = _WIDE if stem == "wide" else (STF / f"{stem}.p4").read_text()
    assert old in src
    (tmp_path / "include").symlink_to(STF / "include")
    p4 = tmp_path / f"{stem}_variant.p4"
    p4.write_text(src.replace(old, new, 1) if old else src)
    if what is None:
        cgen.generate(compile_file(str(p4)))
        return
    with pytest.raises(cgen.EbpfUnsupported) as ei:
        cgen.generate(compile_file(str(p4)))
    text = str(ei.value)
    first = text.splitlines()[0]
    assert first.startswith(str(p4) + ":") and what in first, text
    line, col = (int(x) for x in first.split(":")[1:3])
    assert line > 0 and col > 0
    assert text.splitlines()[-1].strip() == "^"  # the source line and a caret under the column


@pytest.mark.skipif(shutil.which("clang") is None, reason="needs clang")
@pytest.mark.parametrize("program", ["p4src/fabric.p4", "tests/switch/p4/ipv4.p4"])
def test_generated_c_compiles(program: str, tmp_path: Path) -> None:
    gen = cgen.generate(compile_file(str(ROOT / program)), cpu_port=255)
    obj = toolchain.compile_c(gen.source, tmp_path)
    assert obj.stat().st_size > 0
    assert {"MyIngress.ipv4_lpm"} <= set(gen.layout.tables)


def test_target_ebpf_without_clang_is_one_line(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path))  # no clang (nor anything else) on PATH
    r = subprocess.run([sys.executable, "-m", "p4switch", str(ROOT / "tests/switch/p4/ipv4.p4"),
                        "--target", "ebpf", "--no-grpc", "-i", "1@p4ft-noif0"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "the eBPF target needs" in lines[0], r.stderr


def _kinds(base: type) -> list[type]:
    return [c for c in vars(ir).values()
            if isinstance(c, type) and issubclass(c, base) and c is not base]


def test_every_ir_node_kind_has_a_generator_method() -> None:
    """The generator dispatches on ``ir.Visitor``: a statement or expression kind added to the
    IR without a ``visit_`` method here would fall to ``generic`` and be refused on every
    program that uses it. Two kinds have none on purpose: list literals are generated where
    they are used (assignments, hash and digest inputs), and an extern call used as a value is
    refused with a located error."""
    missing = {c.__name__ for c in _kinds(ir.Stmt) + _kinds(ir.Expr)
               if not hasattr(cgen.CGen, "visit_" + c.__name__)}
    assert missing == {"ListExpr", "ExternCallExpr"}


def test_generated_c_is_deterministic() -> None:
    """Two compilations of a program give the same C, byte for byte (fresh names, the order of
    the struct definitions and maps do not depend on anything but the program)."""
    programs = sorted(STF.glob("*.p4")) + [ROOT / "p4src" / "fabric.p4",
                                            ROOT / "tests" / "ebpf" / "p4" / "rmw.p4"]
    generated = 0
    for p4 in programs:
        try:
            first = cgen.generate(compile_file(str(p4)), cpu_port=255)
        except cgen.EbpfUnsupported:
            continue
        assert cgen.generate(compile_file(str(p4)), cpu_port=255).source == first.source, p4
        generated += 1
    assert generated >= len(programs) - 2
