"""Snapshot of what the front end produces, to show a refactoring of it changes nothing.

    python scripts/frontend_snapshot.py OUT_DIR            # write one file per program
    diff -r BEFORE_DIR AFTER_DIR                           # compare two snapshots

For every program under tests/stf/programs/, tests/frontend/programs/, p4src/ and
bench/programs/: the IR (``repr`` of the ``ir.Program``: every field of every node), the
generated pipeline source and the P4Info text; for a refused program, its error message (and
any warnings, in order). Paths in the output are relative to the repository.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from p4switch import p4info
from p4switch.frontend import compile_file
from p4switch.pipeline import Pipeline

ROOT = Path(__file__).resolve().parent.parent
DIRS = ("tests/stf/programs", "tests/frontend/programs", "p4src", "bench/programs")


def programs() -> list[Path]:
    return sorted(p for d in DIRS for p in (ROOT / d).rglob("*.p4"))


def snapshot(path: Path) -> str:
    rel = path.relative_to(ROOT)
    out: list[str] = [f"== {rel}"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            program = compile_file(rel)
        except Exception as e:  # a refused program: its message is the output
            out.append(f"refused: {type(e).__name__}: {e}")
            program = None
        for w in caught:
            out.append(f"warning: {w.message}")
    if program is None:
        return "\n".join(out) + "\n"
    out.append("-- ir")
    out.append(repr(program))
    try:
        out.append("-- p4info")
        out.append(p4info.serialize(p4info.build_p4info(program), "text").decode())
    except Exception as e:
        out.append(f"p4info refused: {type(e).__name__}: {e}")
    try:
        pipe = Pipeline(program)
        out.append("-- pipeline source")
        out.append(pipe.source)
        out.append(f"-- fused: {pipe.fused_reason}")
    except Exception as e:
        out.append(f"pipeline refused: {type(e).__name__}: {e}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="directory to write the snapshot files into")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    import os
    os.chdir(ROOT)
    paths = programs()
    for i, p in enumerate(paths, 1):
        name = str(p.relative_to(ROOT)).replace("/", "__") + ".txt"
        # the checkout's own path (in the IR's sources) does not count
        (args.out / name).write_text(snapshot(p).replace(str(ROOT), "<repo>"))
        print(f"\r{i}/{len(paths)}", end="", file=sys.stderr, flush=True)
    print(f"\n{len(paths)} programs written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
