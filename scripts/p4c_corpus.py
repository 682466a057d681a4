"""Measure p4switch against p4c's own test corpus (a p4c checkout is not part of this
repository; point the script at one):

    python scripts/p4c_corpus.py /path/to/p4c p4info   # P4Info equal to p4c's checked-in one
    python scripts/p4c_corpus.py /path/to/p4c stf      # STF packet tests of v1model programs

``p4info`` compiles each program of ``testdata/p4_16_samples`` whose P4Info p4c checks in
(``testdata/p4_16_samples_outputs/<name>.p4.p4info.txtpb``) for v1model, and sorts it into
``equal`` (the text, ``pkg_info`` aside), ``ids_names`` (same ids and names of every entity,
other fields differ), ``differ``, ``refused`` (a located compile error) or ``crash``. ``stf``
runs each v1model program that has an ``.stf`` as p4c's BMv2 driver would (``pass``, ``fail``,
``refused``, ``crash``). One line per program that is not ``equal``/``pass``, then the counts;
``--all`` lists every program.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

KINDS = ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
         "direct_meters", "controller_packet_metadata", "value_sets", "registers", "digests")


def _v1model(program: Path) -> bool:
    return "v1model.p4" in program.read_text(errors="replace")


def p4info_outcome(program: Path, reference: Path) -> tuple[str, str]:
    """(outcome, detail) of one program against p4c's P4Info text."""
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    from p4switch.errors import P4CompileError
    from p4switch.frontend import compile_file
    from p4switch.p4info import build_p4info

    theirs = p4info_pb2.P4Info()
    text_format.Parse(reference.read_text(), theirs)
    try:
        ours = build_p4info(compile_file(program))
    except P4CompileError as e:
        return "refused", str(e).splitlines()[0]
    except Exception as e:  # noqa: BLE001 - a crash is what this measures
        return "crash", f"{type(e).__name__}: {e}"

    def text(info: p4info_pb2.P4Info) -> str:
        copy = p4info_pb2.P4Info()
        copy.CopyFrom(info)
        copy.ClearField("pkg_info")
        return text_format.MessageToString(copy)

    def ids(info: p4info_pb2.P4Info) -> set[tuple[str, int, str]]:
        return {(k, o.preamble.id, o.preamble.name) for k in KINDS for o in getattr(info, k)}

    if text(ours) == text(theirs):
        return "equal", ""
    return ("ids_names" if ids(ours) == ids(theirs) else "differ"), ""


def stf_outcome(program: Path) -> tuple[str, str]:
    from p4switch.stf import run_stf

    try:
        r = run_stf(program, program.with_suffix(".stf"))
    except Exception as e:  # noqa: BLE001 - a crash is what this measures
        return "crash", f"{type(e).__name__}: {e}"
    if r.ok:
        return "pass", ""
    first = r.failures[0].splitlines()[0] if r.failures else ""
    return ("refused" if r.exit_code == 2 else "fail"), first


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("p4c", type=Path, help="a p4c checkout (its testdata/ is read)")
    ap.add_argument("what", choices=("p4info", "stf"))
    ap.add_argument("--all", action="store_true", help="list every program, also the good")
    args = ap.parse_args(argv)
    samples = args.p4c / "testdata" / "p4_16_samples"
    outputs = args.p4c / "testdata" / "p4_16_samples_outputs"
    if not samples.is_dir() or not outputs.is_dir():
        print(f"{args.p4c}: no testdata/p4_16_samples(_outputs) (not a p4c checkout?)",
              file=sys.stderr)
        return 2
    import warnings
    warnings.simplefilter("ignore")  # p4c's corpus warns a lot; outcomes are what counts
    results: dict[str, tuple[str, str]] = {}
    if args.what == "p4info":
        for ref in sorted(outputs.glob("*.p4.p4info.txtpb")):
            program = samples / ref.name.removesuffix(".p4info.txtpb")
            if program.is_file() and _v1model(program):
                results[program.stem] = p4info_outcome(program, ref)
    else:
        for stf in sorted(samples.glob("*.stf")):
            program = stf.with_suffix(".p4")
            if program.is_file() and _v1model(program):
                results[program.stem] = stf_outcome(program)
    for name, (outcome, detail) in results.items():
        if args.all or outcome not in ("equal", "pass"):
            print(f"{name}: {outcome}{': ' + detail if detail else ''}")
    counts = Counter(o for o, _ in results.values())
    print(f"{len(results)} programs: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
