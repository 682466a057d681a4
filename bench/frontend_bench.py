"""Benchmark: where the front end's compile time goes, per phase, for p4src/fabric.p4 and an
annotation-heavy program (tests/runtime/p4/annotations.p4).

    .venv/bin/python bench/frontend_bench.py [--reps 20]

Phases (best of --reps, CPU of this process): preprocess, the basic lexer, the annotation-body
pass (folds each ``@a( ... )`` into one token, spec 18.1), the type-name / angle-bracket passes,
the whole parse (lexing + passes + LALR), elaboration, compile_file end to end (without the
on-disk cache) and compile_file served by that cache (a later process's cost). The same-run
ratio ``annotation pass / parse`` says what accepting any-token annotation bodies costs.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from lark.lexer import BasicLexer, LexerState
from lark.utils import TextSlice

from p4switch.frontend import compile_file
from p4switch.frontend.elaborate import Elaborator
from p4switch.frontend.parse import _annotation_bodies, _disambiguate, _parser, parse
from p4switch.frontend.preprocess import preprocess

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = [ROOT / "p4src" / "fabric.p4", ROOT / "tests" / "runtime" / "p4" / "annotations.p4"]


def best_ms(f: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.process_time()
        f()
        times.append(time.process_time() - t0)
    return min(times) * 1000


def phases(prog: Path, lexer: BasicLexer, reps: int) -> tuple[dict[str, float], int, int]:
    """Best ms of each phase, the token count and the number of '@'s of one program."""
    text = prog.read_text()
    pp = preprocess(text, str(prog))
    toks = list(lexer.lex(LexerState(TextSlice.cast_from(pp.text)), None))
    bodies = _annotation_bodies(toks)
    tree = parse(pp)
    out = {
        "preprocess": best_ms(lambda: preprocess(text, str(prog)), reps),
        "basic lexer": best_ms(
            lambda: list(lexer.lex(LexerState(TextSlice.cast_from(pp.text)), None)), reps),
        "annotation pass": best_ms(lambda: _annotation_bodies(toks), reps),
        "type/angle passes": best_ms(lambda: _disambiguate(bodies), reps),
        "parse (all)": best_ms(lambda: parse(pp), reps),
        "elaborate": best_ms(lambda: Elaborator(pp).program(tree), reps),
        "compile_file": best_ms(lambda: compile_file(prog, cache=False), reps),
        "compile_file (hit)": best_ms(lambda: compile_file(prog), reps),
    }
    n_at = sum(1 for t in toks if t.value == "@" and t.type != "STRING_LITERAL")
    return out, len(toks), n_at


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20, help="repetitions per phase (best is kept)")
    args = ap.parse_args()
    lexer = BasicLexer(_parser().lexer_conf)
    for prog in PROGRAMS:
        times, n_toks, n_at = phases(prog, lexer, args.reps)
        print(f"{prog.relative_to(ROOT)}: {n_toks} tokens, {n_at} '@'")
        for name, ms in times.items():
            print(f"  {name:18s} {ms:8.2f} ms")
        ratio = times["annotation pass"] / times["parse (all)"]
        print(f"  annotation pass / parse = {ratio:.3f}")


if __name__ == "__main__":
    main()
