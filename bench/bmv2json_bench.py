"""Benchmark: front-end time for p4src/fabric.p4, from BMv2 JSON vs from P4 source.

    .venv/bin/python bench/bmv2json_bench.py [--repeat 5] [--program p4src/fabric.p4]

What a switch does before it can build a pipeline for a pushed program: the P4 front end
(preprocess, parse, elaborate: ``p4switch.frontend.compile_file``) on the source, or the BMv2
JSON front end (``p4switch.bmv2json.load_file``) on what ``p4c-bm2-ss`` wrote for the same
program. Both produce the same IR (tests/differential/test_json_differential.py). The JSON is
compiled once, untimed; p4c's own time is printed beside as context (one run). Wall and CPU
seconds per run; the ratio is of the medians of the same run. Needs p4c-bm2-ss on PATH.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _timed(fn) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", type=Path, default=ROOT / "p4src" / "fabric.p4")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    p4c = shutil.which("p4c-bm2-ss")
    if p4c is None:
        print("bmv2json_bench: p4c-bm2-ss not on PATH: nothing to compare", file=sys.stderr)
        return 0
    from p4switch import bmv2json
    from p4switch.frontend import compile_file

    env = dict(os.environ)
    env.setdefault("P4C_16_INCLUDE_PATH",
                   str(Path(p4c).resolve().parents[1] / "share" / "p4c" / "p4include"))
    with tempfile.TemporaryDirectory(prefix="p4ft-bench-") as tmp:
        out = Path(tmp) / "prog.json"
        t0 = time.perf_counter()
        subprocess.run([p4c, "-o", str(out), str(args.program)], check=True, env=env,
                       capture_output=True)
        p4c_s = time.perf_counter() - t0
        size = out.stat().st_size
        compile_file(args.program, cache=False)  # warm both (imports, lark grammar, caches)
        bmv2json.load_file(out)
        rows = {"P4 source (p4switch.frontend)": [], "BMv2 JSON (p4switch.bmv2json)": []}
        for _ in range(args.repeat):  # interleaved, so load changes hit both alike
            rows["P4 source (p4switch.frontend)"].append(_timed(lambda: compile_file(args.program, cache=False)))
            rows["BMv2 JSON (p4switch.bmv2json)"].append(_timed(lambda: bmv2json.load_file(out)))
    print(f"{args.program.relative_to(ROOT) if args.program.is_relative_to(ROOT) else args.program}"
          f": {args.repeat} runs each, load average {os.getloadavg()[0]:.1f}")
    med = {}
    for name, samples in rows.items():
        walls = [w for w, _ in samples]
        cpus = [c for _, c in samples]
        med[name] = statistics.median(walls)
        print(f"  {name:32s} wall median {med[name] * 1e3:8.1f} ms  (min {min(walls) * 1e3:.1f})"
              f"   CPU median {statistics.median(cpus) * 1e3:8.1f} ms")
    src, js = med.values()
    print(f"  JSON / source wall ratio: {js / src:.3f}  (JSON front end {src / js:.1f}x faster)")
    print(f"  context: p4c-bm2-ss took {p4c_s:.2f} s wall once; the JSON is {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
