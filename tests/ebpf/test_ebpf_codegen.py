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

from p4switch.ebpf import cgen, toolchain
from p4switch.frontend import compile_file

ROOT = Path(__file__).resolve().parents[2]
STF = ROOT / "tests" / "stf" / "programs"


@pytest.mark.parametrize("stem,what", [
    ("varbit_length_eq", "varbit"),
    ("varbit_extract", "varbit"),
    ("varbit_checksum", "varbit"),
    ("varbit_values", "varbit"),
])
def test_refusals_are_located(stem: str, what: str) -> None:
    prog = compile_file(str(STF / f"{stem}.p4"))
    with pytest.raises(cgen.EbpfUnsupported) as ei:
        cgen.generate(prog)
    text = str(ei.value)
    first = text.splitlines()[0]
    assert first.startswith(str(STF / f"{stem}.p4") + ":") and what in first, text
    line, col = (int(x) for x in first.split(":")[1:3])
    assert line > 0 and col > 0
    assert text.splitlines()[-1].strip() == "^"  # the source line and a caret under the column


def test_recirculate_with_replication_is_refused_where_it_is_called(tmp_path: Path) -> None:
    src = (STF / "recirculate.p4").read_text().replace(
        "sm.egress_spec = 2;", "sm.egress_spec = 2; clone(CloneType.I2E, 1);")
    (tmp_path / "include").symlink_to(STF / "include")
    p4 = tmp_path / "recirc_clone.p4"
    p4.write_text(src)
    with pytest.raises(cgen.EbpfUnsupported) as ei:
        cgen.generate(compile_file(str(p4)))
    first = str(ei.value).splitlines()[0]
    assert "recirculate in a program that clones or multicasts" in first, first
    line = int(first.split(":")[1])
    assert "recirculate_preserving_field_list" in src.splitlines()[line - 1]


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
