"""The P4_16 front end of p4switch: preprocess, parse (lark, LALR) and elaborate v1model
programs into the typed IR of ``p4switch.ir``.

    from p4switch.frontend import compile_file
    program = compile_file("p4src/ecmp.p4")

Both entry points raise ``P4CompileError`` (``file:line:col: error: message`` plus the source
line) for any program they reject, including constructs p4switch does not support.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from p4switch import ir
from p4switch.frontend.elaborate import Elaborator
from p4switch.frontend.errors import P4CompileError
from p4switch.frontend.parse import parse
from p4switch.frontend.preprocess import PACKAGE_INCLUDE_DIR, preprocess

__all__ = ["P4CompileError", "PACKAGE_INCLUDE_DIR", "compile_file", "compile_source"]


def compile_source(
    text: str,
    filename: str = "<string>",
    include_dirs: Sequence[Path] = (),
    defines: Mapping[str, str] | None = None,
) -> ir.Program:
    """Compile P4 source text; ``filename`` names it in errors and resolves ``#include "x"``."""
    pp = preprocess(text, filename, include_dirs, defines)
    tree = parse(pp)
    try:
        return Elaborator(pp).program(tree)
    except RecursionError:
        raise P4CompileError(None, "program is nested too deeply") from None


def compile_file(
    path: str | Path,
    include_dirs: Sequence[Path] = (),
    defines: Mapping[str, str] | None = None,
) -> ir.Program:
    """Compile a P4 file (``#include "x"`` is resolved relative to it)."""
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise P4CompileError(ir.SourceLoc(str(path), 1, 1), f"cannot read {path}: {e}") from None
    return compile_source(text, str(path), include_dirs, defines)
