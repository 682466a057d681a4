"""``python -m p4switch.stf prog.p4 test.stf [-v]``: run one STF packet test (see the package
docstring for the dialect and exit codes)."""

from __future__ import annotations

import argparse
import sys

from .runner import run_stf


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m p4switch.stf",
        description="Run a p4c-style STF packet test against p4switch.",
    )
    ap.add_argument("program", help="the v1model P4_16 program")
    ap.add_argument("stf", help="the STF test file")
    ap.add_argument("-v", "--verbose", action="store_true", help="log every command and packet")
    ap.add_argument("--seed", type=int, default=0, help="seed of random() (default 0)")
    ap.add_argument(
        "--strict",
        action="store_true",
        help="also fail on packets to ports the STF never names (bmv2stf ignores those)",
    )
    args = ap.parse_args(argv)
    result = run_stf(
        args.program,
        args.stf,
        verbose=args.verbose,
        echo=lambda text: print(text, flush=True),
        seed=args.seed,
        strict=args.strict,
    )
    if result.ok:
        print(f"{args.stf}: PASS")
    else:
        print(result.message, file=sys.stderr)
        if args.verbose:
            for more in result.failures[1:]:
                print(more, file=sys.stderr)
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
