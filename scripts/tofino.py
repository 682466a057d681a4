"""`make tofino`: compile p4src/tna/fabric.p4 with the Tofino compiler and print what it used.

For each chip (Tofino 1: ``--target tofino --arch tna``; Tofino 2: ``--target tofino2 --arch
t2na``) it runs the compiler with the P4Info the controller needs (``--p4runtime-files``,
``--p4runtime-force-std-externs``: standard P4Runtime names and externs, docs/tofino.md) and
``-g`` (the resource logs), then prints the resource summary it finds in the output: MAU stages
and logical tables per stage, SRAM/TCAM/map RAM, crossbar bytes, hash bits, stateful ALUs, PHV
containers, parser TCAM rows, and the compile time. Uses the ``bf-p4c`` driver when it is on PATH
(it also runs the assembler), else ``p4c-barefoot`` alone. Without either it exits with one line
saying what is missing.

Usage: python scripts/tofino.py [--out DIR] [--chips tofino,tofino2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "p4src" / "tna" / "fabric.p4"
CHIPS = {"tofino": "tna", "tofino2": "t2na"}
COMPILERS = ("bf-p4c", "p4c-barefoot")
STAGES = {"tofino": 12, "tofino2": 20}
"""MAU stages per pipe: the limit a fit is checked against."""


def find_compiler() -> str | None:
    return next((p for c in COMPILERS if (p := shutil.which(c))), None)


def compile_for(compiler: str, chip: str, out: Path, program: Path = PROGRAM
                ) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run the compiler for one chip into ``out``; (result, seconds)."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = [compiler, "--target", chip, "--arch", CHIPS[chip], "--std", "p4-16", "-g",
           "-o", str(out), "--p4runtime-files", str(out / "p4info.txtpb"),
           "--p4runtime-force-std-externs", str(program)]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, time.monotonic() - t0


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def summary(out: Path) -> dict[str, Any]:
    """The figures of one compile's logs (metrics.json, resources.json); missing ones omitted."""
    s: dict[str, Any] = {}
    metrics = next(iter(sorted(out.rglob("metrics.json"))), None)
    if metrics:
        m = _load(metrics)
        mau = m.get("mau", {})
        for k in ("srams", "tcams", "map_rams", "logical_tables", "exact_crossbar_bytes",
                  "ternary_crossbar_bytes", "action_bus_bytes"):
            if k in mau:
                s[k] = mau[k]
        phv = m.get("phv", {})
        if isinstance(phv, dict):
            for kind in ("normal", "tagalong", "mocha", "dark"):
                for c in phv.get(kind, []) or []:
                    s[f"phv_{kind}_{c.get('bit_width')}b_containers"] = c.get(
                        "containers_occupied")
        parser = m.get("parser", {})
        for g in ("ingress", "egress"):
            if isinstance(parser.get(g), dict) and "tcam_rows" in parser[g]:
                s[f"parser_{g}_tcam_rows"] = parser[g]["tcam_rows"]
    resources = next(iter(sorted(out.rglob("resources.json"))), None)
    if resources:
        r = _load(resources).get("resources", {})
        stages = (r.get("mau", {}) or {}).get("mau_stages", []) or []

        def used(st: dict[str, Any], unit: str, items: str) -> int:
            return len((st.get(unit, {}) or {}).get(items, []) or [])

        per_stage = [used(st, "logical_tables", "ids") for st in stages]
        s["stages_used"] = sum(1 for n in per_stage if n)
        s["tables_per_stage"] = per_stage
        s["hash_bits"] = sum(used(st, "hash_bits", "bits") for st in stages)
        s["stateful_alus"] = sum(used(st, "meter_alus", "meters") for st in stages)
        # p4c-barefoot alone writes no metrics.json: the same memories, per stage, here.
        for key, unit, items in (("srams", "rams", "srams"), ("tcams", "tcams", "tcams"),
                                 ("map_rams", "map_rams", "maprams")):
            if key not in s and stages:
                s[key] = sum(used(st, unit, items) for st in stages)
        if "exact_crossbar_bytes" not in s and stages:
            s["crossbar_bytes"] = sum(used(st, "xbar_bytes", "bytes") for st in stages)
        if stages:
            s["gateways"] = sum(used(st, "gateways", "gateways") for st in stages)
    phv = next(iter(sorted(out.rglob("phv.json"))), None)
    if phv and not any(k.startswith("phv_") for k in s):
        occupied: dict[str, int] = {}
        for c in _load(phv).get("containers", []) or []:
            if isinstance(c, dict) and c.get("slices"):
                k = f"phv_{c.get('container_type', 'normal')}_{c.get('bit_width')}b_containers"
                occupied[k] = occupied.get(k, 0) + 1
        s.update(sorted(occupied.items()))
    return s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Compile p4src/tna/fabric.p4 for Tofino 1 and 2.")
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "tofino")
    ap.add_argument("--chips", default="tofino,tofino2")
    args = ap.parse_args(argv)
    chips = [c.strip() for c in args.chips.split(",") if c.strip()]
    if bad := [c for c in chips if c not in CHIPS]:
        print(f"make tofino: unknown chip {bad[0]!r} (choose from {', '.join(CHIPS)})",
              file=sys.stderr)
        return 2
    compiler = find_compiler()
    if compiler is None:
        print("make tofino: no Tofino compiler on PATH (bf-p4c or p4c-barefoot, from p4lang/p4c "
              "built with -DENABLE_TOFINO=ON or Intel P4 Studio; docs/tofino.md)", file=sys.stderr)
        return 1
    status = 0
    for chip in chips:
        out = args.out / chip
        r, secs = compile_for(compiler, chip, out)
        print(f"== {chip} ({Path(compiler).name} --arch {CHIPS[chip]}): "
              f"{'ok' if r.returncode == 0 else 'FAILED'} in {secs:.1f} s, output {out}")
        if r.returncode != 0:
            status = 1
            print((r.stderr or r.stdout).strip())
            continue
        if r.stderr.strip():
            print(r.stderr.strip())
        s = summary(out)
        if not s:
            print("  (no metrics.json/resources.json in the output: no summary)")
        for k, v in s.items():
            print(f"  {k}: {v}")
        if "stages_used" in s:
            fits = s["stages_used"] <= STAGES[chip]
            print(f"  fits {STAGES[chip]} stages: {'yes' if fits else 'NO'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
