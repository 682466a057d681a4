"""experiments.sweep: task expansion, file errors, and two tiny simulator runs on a local Ray."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from raylocal import local_ray_cluster

from experiments.sweep import SweepError, load_sweep, main, run_sweep

EXPERIMENT = """\
name: tiny
backend: sim
topology: {kind: leafspine, leaves: 2, spines: 2, hosts_per_leaf: 1, bw_mbps: 10000}
schemes: [ecmp, wam]
workloads:
  - {name: a2a, schedule: alltoall, size: 8KB, timeout_s: 5}
"""


def _files(tmp_path: Path, grid: str = "") -> Path:
    (tmp_path / "exp.yaml").write_text(EXPERIMENT)
    sw = tmp_path / "sweep.yaml"
    sw.write_text("experiment: exp.yaml\nretries: 0\n" + grid)
    return sw


def test_grid_x_schemes_x_repetitions_expand_to_one_run_tasks(tmp_path: Path) -> None:
    sw = _files(tmp_path, "grid:\n  topology.spines: [1, 2]\n  repetitions: [2]\n")
    s = load_sweep(sw)
    assert len(s.tasks) == 2 * 2 * 2  # spines x schemes x repetitions
    t = s.tasks[-1]
    assert t.tags == {"topology.spines": 2, "repetitions": 2, "workload": "a2a",
                      "scheme": "wam", "repetition": 1}
    assert t.experiment["schemes"] == ["wam"] and t.experiment["repetitions"] == 1
    assert t.experiment["parameters"]["seed"] == 1000  # repetition 1: seed + 1000, as the runner
    assert s.backend == "sim" and s.retries == 0


@pytest.mark.parametrize("grid, msg", [
    ("grid:\n  topology.k: []\n", "non-empty lists"),
    ("grid:\n  workloads.5.size: [1KB]\n", "index 5 out of range"),
    ("grid:\n  topology.kind: [ring]\n", "grid point topology.kind=ring"),
])
def test_bad_grid_names_the_field(tmp_path: Path, grid: str, msg: str) -> None:
    with pytest.raises(SweepError, match=msg):
        load_sweep(_files(tmp_path, grid))


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main([str(tmp_path / "missing.yaml")])
    assert e.value.code == 2
    assert "cannot read" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(_files(tmp_path)), "--cpus", "0"])
    assert main([str(_files(tmp_path)), "--dry-run"]) == 0
    assert "a2a · wam · 0" in capsys.readouterr().out


@pytest.fixture
def local_ray():  # noqa: ANN201 - the ray module
    """A local Ray on 2 CPUs for one test, always shut down, also when the test fails."""
    with local_ray_cluster() as ray:
        yield ray


@pytest.mark.slow
def test_two_tiny_sim_runs_on_local_ray(tmp_path: Path, local_ray) -> None:
    sweep = load_sweep(_files(tmp_path))
    out = tmp_path / "out"
    s = run_sweep(sweep, out, show_progress=False)
    assert local_ray.is_initialized()  # the caller's Ray: run_sweep leaves it running
    assert s.succeeded == 2 and s.failed == [], s.failed
    runs = pd.read_csv(out / "runs.csv")
    assert sorted(runs["scheme"]) == ["ecmp", "wam"]
    assert runs["ok"].all() and runs["bytes_conserved"].all()
    assert (runs["cct"] > 0).all()
    assert (out / "sweep.png").stat().st_size > 0
    summary = json.loads((out / "sweep.json").read_text())
    assert summary["tasks"] == 2 and summary["address"] == "local"
    assert len(summary["task_dirs"]) == 2


def test_cli_help_documents_cluster_and_retries(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--address", "--working-dir", "--retries", "--cpus", "--dry-run"):
        assert flag in text
