"""The report's fabric-units, summary (mean ± 95 % CI, rank groups, invalid runs left out),
emulation-beside-simulation and fidelity sections, golden: a synthetic results directory as
the runner writes it (emulated at TDF 10,000, one invalid run, the simulator's run in sim/)
renders exactly tests/experiments/golden/report_sections.md. Regenerate after an intended
change with ``P4FABRIC_REGEN=1 pytest tests/experiments/test_report_golden.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from experiments import report
from topo.guard import SITES

GOLDEN = Path(__file__).parent / "golden" / "report_sections.md"
CFG = {"name": "gold", "backend": "mininet",
       "fabric": {"link_rate": "100G", "prop_delay_us": 0.1, "mtu": 1500, "queue_packets": 64},
       "topology": {"kind": "fattree", "k": 4}, "schemes": ["ecmp", "random", "rotate"],
       "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "720KB"}],
       "repetitions": 3}
EMU = {"ecmp": [260e-6, 270e-6, 250e-6], "random": [150e-6, 149e-6, 400e-6],
       "rotate": [145e-6, 148e-6, 151e-6]}
SIM = {"ecmp": 261e-6, "random": 147e-6, "rotate": 142e-6}


def _write(root: Path, backend: str, tdf: float, ccts: dict[str, list[float]],
           guard: bool) -> None:
    root.mkdir(parents=True)
    meta = {"config": {**CFG, "backend": backend}, "backend": backend, "tdf": tdf,
            "fabric": CFG["fabric"], "versions": {"git": "0123abcd"},
            "dilated": {"fabric.link_rate": ["100G", "10M"],
                        "parameters.control_period_s": [2e-05, 0.2]} if tdf != 1 else {}}
    (root / "experiment.json").write_text(json.dumps(meta))
    rows, runs = [], []
    for scheme, vals in ccts.items():
        for rep, c in enumerate(vals):
            rows.append({"workload": "ring", "scheme": scheme, "repetition": rep,
                         "collective": 0, "name": "ring_allreduce", "start": 1.0,
                         "finish": 1.0 + c, "cct": c, "ok": True})
            run = {"workload": "ring", "scheme": scheme, "repetition": rep, "ok": True,
                   "cct": c, "tdf": tdf, "valid": True, "invalid_reason": None}
            if guard:
                bad = scheme == "random" and rep == 2
                run.update(hidden_drops=40 if bad else 0, frames_switched=9000,
                           ingress_lag_p50_us=0.05, ingress_lag_p99_us=2.5 if bad else 0.2,
                           egress_delay_p99_us=1.6, send_lag_p99_us=0.1,
                           switch_cpu_max=0.35, valid=not bad,
                           invalid_reason="40 frames dropped outside the P4 pipeline "
                           "(switch_socket 40; > 0.10% of 9000)" if bad else None)
                tail = 12 if scheme == "ecmp" else 0
                run.update({f"drops_{k}": 0 for k in SITES})
                run.update(drops_p4_queue=tail, drops_switch_socket=40 if bad else 0,
                           data_frames_sent=700 + tail, data_frames_arrived=700 + tail
                           - (9 if scheme == "ecmp" else 0) - (30 if bad else 0),
                           data_frames_uncounted=0)
            runs.append(run)
    pd.DataFrame(rows).to_csv(root / "ccts.csv", index=False)
    pd.DataFrame(runs).to_csv(root / "runs.csv", index=False)
    pd.DataFrame([{"workload": "ring", "collective": 0, "ideal_s": 105e-6,
                   "unloaded_s": 125e-6}]).to_csv(
        root / "ideal.csv", index=False)


def _sections(text: str) -> str:
    """From the fabric-units section up to the figures (the rest names files)."""
    start = text.index("## Fabric units")
    return text[start:text.index("## Figures")].rstrip() + "\n"


def test_report_sections_are_golden(tmp_path: Path) -> None:
    root = tmp_path / "gold"
    _write(root, "mininet", 10_000.0, EMU, guard=True)
    _write(root / "sim", "sim", 1.0, {k: [v] for k, v in SIM.items()}, guard=False)
    md, _, table = report.write_report(root)
    got = _sections(md.read_text())
    if os.environ.get("P4FABRIC_REGEN"):
        GOLDEN.write_text(got)
    assert got == GOLDEN.read_text()
    # and the facts the golden text shows, stated once more
    t = table.set_index("scheme")
    assert t.loc["random", "n"] == 2 and t.loc["random", "invalid"] == 1   # the bad rep out
    assert t.loc["rotate", "rank"] == t.loc["random", "rank"] == 1 and t.loc["ecmp", "rank"] == 2
    with_bad = report.summary_table(report.load_results(root), include_invalid=True)
    assert with_bad.set_index("scheme").loc["random", "n"] == 3


def test_report_cli_compares_the_grouping_of_two_runs(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    _write(a, "mininet", 10_000.0, EMU, guard=True)
    _write(b, "mininet", 10_000.0, {k: [x * 1.01 for x in v] for k, v in EMU.items()},
           guard=True)
    # a third run where rotate is as slow as ECMP: ECMP no longer stands apart
    _write(c, "mininet", 10_000.0, {**EMU, "rotate": [262e-6, 268e-6, 255e-6]}, guard=True)
    assert report.main([str(a), "--against", str(b)]) == 0
    assert "ring: same grouping" in capsys.readouterr().out
    assert report.main([str(a), "--against", str(c)]) == 0
    out = capsys.readouterr().out
    assert "ring: DIFFERENT grouping" in out and "{ecmp, rotate}" in out
    assert "no contradiction" in out
    # a fourth where ECMP beats rotate: the two runs order a pair the opposite way round
    d = tmp_path / "d"
    _write(d, "mininet", 10_000.0, {**EMU, "ecmp": [100e-6, 101e-6, 99e-6]}, guard=True)
    assert report.main([str(a), "--against", str(d)]) == 0
    assert "ring: DIFFERENT grouping (CONTRADICTING" in capsys.readouterr().out


def test_the_report_says_when_emulation_and_simulation_contradict(tmp_path: Path) -> None:
    root = tmp_path / "x"
    _write(root, "mininet", 10_000.0, EMU, guard=True)
    # the simulator puts ECMP first, the emulation (ECMP apart, slowest) last
    _write(root / "sim", "sim", 1.0, {"ecmp": [100e-6], "random": [147e-6], "rotate": [142e-6]},
           guard=False)
    md, _, _ = report.write_report(root)
    text = md.read_text()
    assert "**ring**: the two rankings contradict (a pair of schemes" in text
    assert "rankings agree" not in text


def test_the_terminal_table_shows_its_columns_whole(tmp_path: Path) -> None:
    """The summary a terminal prints keeps to report.TERMINAL's columns, none cut to an
    ellipsis at the runner's 150 characters; report.md keeps every column."""
    from rich.console import Console
    root = tmp_path / "gold"
    _write(root, "mininet", 10_000.0, EMU, guard=True)
    table = report.summary_table(report.load_results(root))
    console = Console(width=150, record=True)
    console.print(report.rich_table(table, title="gold"))
    text = console.export_text()
    assert "…" not in text and "every column: report.md" in text
    head, _ = report.rows(table, report.TERMINAL)
    assert all(h.split()[-1] in text for h in head)
    assert "vs unloaded" not in text and "vs unloaded" in report.rows(table)[0]
