"""The simulator backend runs the controller's control loops (sim.control) and the report
says which loops ran on each side and what they did (experiments.loop_report).

The demo's file, run on the simulator with one agg-core link at a quarter of the rate and its
MoE AllToAll (Zipf-skewed) on all 16 hosts, 256 KB: the burst queues up behind the slow link,
and Whack-a-Mole's loop moves balls off it (and back once the queue drained). The demo's own
8-rank 96 KB MoE keeps DCTCP's queues below the loop's threshold (16 packets) even there."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd

from experiments import report, runner
from experiments.backends import SimBackend
from experiments.config import load
from experiments.loop_report import action_counts, side_line
from model.spec import FabricSpec

ROOT = Path(__file__).resolve().parents[2]


def _degraded(spec: FabricSpec) -> FabricSpec:
    for i, lk in enumerate(spec.links):
        if {lk.a, lk.b} == {"agg1", "core1"}:
            spec.links[i] = dataclasses.replace(lk, bw_mbps=lk.bw_mbps / 4)
    return spec


def test_sim_backend_wam_changes_weights_and_the_report_counts_them(tmp_path: Path) -> None:
    cfg = load(ROOT / "experiments" / "configs" / "demo.yaml")
    (moe,) = [w for w in cfg.workloads if w.name == "moe_alltoall"]
    cfg = dataclasses.replace(
        cfg, backend="sim", repetitions=1, max_repetitions=None,
        schemes=tuple(s for s in cfg.schemes if s.name in ("ecmp", "wam")),
        workloads=(dataclasses.replace(moe, size=256_000, hosts=None),))
    assert "wam" in cfg.parameters.loops
    be = SimBackend(cfg, _degraded(cfg.spec()))
    run = runner.run_experiment(cfg, tmp_path, backend=be)
    events = pd.read_csv(run.root / "events.csv")
    wam = events[events["loop"] == "wam"]
    assert set(wam["scheme"]) == {"wam"}          # ECMP's groups are not the loop's
    changes = wam[wam["what"].str.startswith("group ")]
    assert len(changes) > 0 and set(changes["switch"]) == {"agg1"}
    counts = action_counts(pd.read_csv(run.root / "runs.csv"), events)
    n = int(counts.set_index("scheme").loc["wam", "weight_changes"])
    assert n == len(changes)
    md = (run.root / "report.md").read_text()
    assert "## Control loops" in md
    assert (f"**Simulated** ran wam every 20 µs of virtual time (reconcile: no switch "
            f"reconnects in the simulator). Whack-a-Mole weight changes: {n} in 1 run "
            f"(per run — moe_alltoall wam: {n})") in md


def _side(root: Path, backend: str, changes: list[int]) -> None:
    root.mkdir(parents=True)
    cfg = {"name": "x", "backend": backend, "fabric": {"link_rate": "100G"},
           "topology": {"kind": "fattree", "k": 4}, "schemes": ["ecmp", "wam"],
           "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "64KB"}],
           "parameters": {"loops": ["failure", "reconcile", "wam"]}}
    (root / "experiment.json").write_text(json.dumps({"config": cfg, "backend": backend}))
    runs = [{"workload": "ring", "scheme": s, "repetition": r, "ok": True, "cct": 1e-4}
            for s in ("ecmp", "wam") for r in range(len(changes))]
    pd.DataFrame(runs).to_csv(root / "runs.csv", index=False)
    ev = [{"workload": "ring", "scheme": "wam", "repetition": r, "time": 1e-5 * i,
           "loop": "wam", "switch": "agg1", "what": "group 1 weights [0.75, 1.0] (qdepth_max "
           "[63, 2])"} for r, n in enumerate(changes) for i in range(n)]
    ev.append({"workload": "ring", "scheme": "ecmp", "repetition": 0, "time": 1e-5,
               "loop": "failure", "switch": "agg1",
               "what": "link agg1:3-core1:1 down (no probe for 2 periods)"})
    pd.DataFrame(ev).to_csv(root / "events.csv", index=False)


def test_the_report_shows_each_sides_loops_and_counts(tmp_path: Path) -> None:
    root = tmp_path / "emu"
    _side(root, "mininet", [2, 0, 3])
    _side(root / "sim", "sim", [1, 1, 0])
    text = "\n".join(report.loops_section(report.load_results(root)))
    assert ("- **Emulated** ran failure, reconcile, wam every 20 µs of fabric time. "
            "Whack-a-Mole weight changes: 5 in 3 runs (per run — ring wam: 2, 0, 3); "
            "links declared down: 1.") in text
    assert ("- **Simulated** ran failure, wam every 20 µs of virtual time (reconcile: no "
            "switch reconnects in the simulator). Whack-a-Mole weight changes: 2 in 3 runs "
            "(per run — ring wam: 1, 1, 0); links declared down: 1.") in text
    r = report.load_results(root)
    assert side_line("Emulated", r.meta, r.runs, pd.DataFrame()).endswith(
        "Whack-a-Mole weight changes: 0 in 3 runs (per run — ring wam: 0, 0, 0); links "
        "declared down: 0.")
