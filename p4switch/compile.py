"""``python -m p4switch.compile prog.p4 --p4info out.p4info.txtpb --device-config out.bin``

The p4c-like step for p4switch: compiles a program (so errors surface before a controller
pushes it) and writes the two files a P4Runtime controller needs — the P4Info and the device
config (a source bundle, see docs/device-config.md). p4runtime-shell takes them as
``--config out.p4info.txtpb,out.bin``.

What is compiled is the bundle itself, not the file on disk: the output is then exactly what
the switch will compile when the config is pushed (a missing include shows up here, not there).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from p4switch import device_config, p4info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m p4switch.compile",
        description="Compile a v1model P4 program to P4Info + a p4switch device config.",
    )
    ap.add_argument("program", help="main P4 source file")
    ap.add_argument("--p4info", metavar="FILE", help="write the P4Info here")
    ap.add_argument("--p4info-format", choices=p4info.FORMATS, default="text",
                    help="P4Info encoding (default: text, what p4runtime-shell reads)")
    ap.add_argument("--device-config", metavar="FILE",
                    help="write the device config (source bundle) here")
    ap.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                    help="also bundle files included from DIR")
    args = ap.parse_args(argv)

    src = Path(args.program)
    if not src.is_file():
        print(f"p4switch.compile: error: {src}: no such file", file=sys.stderr)
        return 2
    try:
        bundle = device_config.bundle_from_file(src, [Path(d) for d in args.include_dirs])
        program = device_config.compile_bundle(bundle)
        info = p4info.build_p4info(program)
    except OSError as e:
        print(f"p4switch.compile: error: {e}", file=sys.stderr)
        return 1
    except p4info.P4InfoError as e:
        print(f"{src}: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # P4CompileError: its text is file:line:col: error: ...
        print(str(e), file=sys.stderr)
        return 1
    if args.p4info:
        Path(args.p4info).write_bytes(p4info.serialize(info, args.p4info_format))
    if args.device_config:
        Path(args.device_config).write_bytes(bundle.to_bytes())
    if not args.p4info and not args.device_config:
        print(f"{src}: OK ({len(info.tables)} tables, {len(info.actions)} actions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
