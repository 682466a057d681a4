"""``python -m p4switch.frontend prog.p4 [--dump]``: check a P4 program with p4switch's front end."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from p4switch.frontend import P4CompileError, compile_file
from p4switch.frontend.dump import dump_program, summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m p4switch.frontend",
                                 description="Check a P4_16 v1model program with p4switch.")
    ap.add_argument("program", type=Path)
    ap.add_argument("-I", dest="include_dirs", action="append", type=Path, default=[],
                    help="add an include directory")
    ap.add_argument("-D", dest="defines", action="append", default=[],
                    help="define a macro: NAME or NAME=VALUE")
    ap.add_argument("--dump", action="store_true", help="print the IR after the summary")
    args = ap.parse_args(argv)
    defines = {}
    for d in args.defines:
        name, _, value = d.partition("=")
        defines[name] = value or "1"
    try:
        program = compile_file(args.program, args.include_dirs, defines)
    except P4CompileError as e:
        print(e, file=sys.stderr)
        return 1
    print(summary(program))
    if args.dump:
        print(dump_program(program))
    return 0


if __name__ == "__main__":
    sys.exit(main())
