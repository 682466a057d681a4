"""A program file, whichever front end reads it: BMv2 JSON (``p4c-bm2-ss`` output) is told
from P4 source by its content, so ``p4switch prog.json`` and ``p4switch prog.p4`` both run.
Both front ends raise ``P4CompileError`` for a program they refuse."""

from __future__ import annotations

from pathlib import Path

from p4switch import ir


def load_program(path: str | Path) -> ir.Program:
    p = Path(path)
    with p.open("rb") as f:
        head = f.read(1 << 12)
    if head.lstrip()[:1] == b"{":
        from p4switch import bmv2json

        return bmv2json.load_file(p)
    from p4switch.frontend import compile_file

    return compile_file(str(p.resolve()))
