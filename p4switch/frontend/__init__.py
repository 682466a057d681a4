"""The P4_16 front end of p4switch: preprocess, parse (lark, LALR) and elaborate v1model
programs into the typed IR of ``p4switch.ir``.

    from p4switch.frontend import compile_file
    program = compile_file("p4src/ecmp.p4")

The result is cached on disk per machine (``p4switch.frontend.cache``; ``P4FABRIC_NO_CACHE=1``
or ``cache=False`` turns it off). Both entry points raise ``P4CompileError`` (``file:line:col: error: message`` plus the source
line) for any program they reject, including constructs p4switch does not support.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from p4switch import ir
from p4switch.frontend import cache as _cache
from p4switch.frontend import diagnostics
from p4switch.frontend.errors import P4CompileError
from p4switch.frontend.preprocess import PACKAGE_INCLUDE_DIR, preprocess

__all__ = ["P4CompileError", "PACKAGE_INCLUDE_DIR", "compile_file", "compile_source"]


def compile_source(
    text: str,
    filename: str = "<string>",
    include_dirs: Sequence[Path] = (),
    defines: Mapping[str, str] | None = None,
    *,
    cache: bool = True,
) -> ir.Program:
    """Compile P4 source text; ``filename`` names it in errors and resolves ``#include "x"``.
    With ``cache`` (and unless ``P4FABRIC_NO_CACHE=1``) a program compiled before on this
    machine is read from the on-disk cache instead of parsed again."""
    pp = preprocess(text, filename, include_dirs, defines)
    key = _cache.key(pp, include_dirs, defines) if cache and _cache.enabled() else None
    if key is not None:
        hit = _cache.load(key)
        if hit is not None:
            return hit
    # imported here: a cache hit does not pay for importing lark and the elaborator
    from p4switch.frontend.elaborate import Elaborator
    from p4switch.frontend.parse import parse

    warned = diagnostics.issued
    tree = parse(pp)
    try:
        program = Elaborator(pp).program(tree)
    except RecursionError:
        raise P4CompileError(None, "program is nested too deeply") from None
    if key is not None and diagnostics.issued == warned:
        _cache.store(key, program)
    return program


def compile_file(
    path: str | Path,
    include_dirs: Sequence[Path] = (),
    defines: Mapping[str, str] | None = None,
    *,
    cache: bool = True,
) -> ir.Program:
    """Compile a P4 file (``#include "x"`` is resolved relative to it)."""
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise P4CompileError(ir.SourceLoc(str(path), 1, 1), f"cannot read {path}: {e}") from None
    return compile_source(text, str(path), include_dirs, defines, cache=cache)
