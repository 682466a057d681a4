"""Every P4 program in the repository compiles with p4switch's front end.

Discovery is by directory, not by a hand-kept list, so a new program is checked as soon as it
is added. Excluded: include fragments (``include/`` directories, compiled through the programs
that include them), the Tofino port (``p4src/tna/``, TNA, not v1model) and programs that exist to
fail (``tests/stf/bad/``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch import ir
from p4switch.frontend import compile_file

ROOT = Path(__file__).resolve().parents[2]
_EXCLUDED_DIRS = ("p4src/tna/", "tests/stf/bad/")


def _programs() -> list[Path]:
    found = []
    for top in ("p4src", "tests", "bench"):
        for p in sorted((ROOT / top).rglob("*.p4")):
            rel = p.relative_to(ROOT).as_posix()
            if "/include/" in f"/{rel}" or rel.startswith(_EXCLUDED_DIRS):
                continue
            found.append(p)
    return found


PROGRAMS = _programs()


def test_discovery_finds_the_known_programs() -> None:
    rel = {p.relative_to(ROOT).as_posix() for p in PROGRAMS}
    assert {"p4src/fabric.p4", "tests/stf/programs/ipv4_lpm.p4",
            "tests/frontend/programs/fabric_lab.p4"} <= rel
    assert len(PROGRAMS) >= 30


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_program_compiles(path: Path) -> None:
    prog = compile_file(path)
    assert set(prog.package) == {"parser", "verify_checksum", "ingress", "egress",
                                 "compute_checksum", "deparser"}
    assert all(isinstance(prog.block(role), ir.Parser | ir.Control) for role in prog.package)
