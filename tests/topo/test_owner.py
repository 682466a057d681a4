"""Files a run writes under sudo go back to the invoking user (topo/owner.py), and a run that
cannot write its results says so in one line (experiments/run.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from topo.owner import give_back, invoker

NOBODY = 65534


def test_outside_sudo_nothing_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUDO_UID", raising=False)
    (tmp_path / "f").write_text("x")
    assert invoker() is None and give_back(tmp_path) == 0


@pytest.mark.root
def test_a_sudo_runs_results_belong_to_its_user(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (chown)")
    monkeypatch.setenv("SUDO_UID", str(NOBODY))
    monkeypatch.setenv("SUDO_GID", str(NOBODY))
    out = tmp_path / "results"
    run = out / "demo" / "20260101T000000Z"
    (run / "plots").mkdir(parents=True)
    (run / "runs.csv").write_text("a\n")
    (run / "plots" / "cct.png").write_bytes(b"x")
    mine = tmp_path / "results" / "other"
    mine.mkdir()
    os.chown(mine, 1234, 1234)   # someone else's: left alone
    assert give_back(run, upto=out) == 6
    for p in (out, out / "demo", run, run / "runs.csv", run / "plots" / "cct.png"):
        assert (p.stat().st_uid, p.stat().st_gid) == (NOBODY, NOBODY), p
    assert mine.stat().st_uid == 1234 and tmp_path.stat().st_uid == 0


def test_a_results_dir_it_cannot_write_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from experiments import run as run_cli

    cfg = tmp_path / "sim.yaml"
    cfg.write_text(json.dumps({"name": "t", "backend": "sim",
                               "topology": {"kind": "fattree", "k": 4},
                               "schemes": ["ecmp"], "workloads": [
                                   {"schedule": "ring_allreduce", "size": "4KB"}]}))

    def denied(*a: object, **k: object) -> None:
        raise PermissionError(13, "Permission denied", "results/t")

    monkeypatch.setattr(run_cli, "run_experiment", denied)
    assert run_cli.main([str(cfg), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("experiments.run: cannot write results/t: "
                                                "permission denied"), err
