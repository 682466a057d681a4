"""python -m sim: a tiny run with the reference check, and one-line errors for bad arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.__main__ import main


def test_tiny_run_checks_counters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--leaf-spine", "2x2", "--size", "32KB", "--scheme", "wam", "--check"]) == 0
    out = capsys.readouterr().out
    assert "ok=True" in out
    line = next(x for x in out.splitlines() if x.startswith("counters vs reference"))
    n, total = line.split(": ")[1].split(" ")[0].split("/")
    assert n == total and int(total) > 0


@pytest.mark.parametrize("args, msg", [
    (["--k", "5"], "fat-tree k must be even"),
    (["--size", "12XB"], "bad size"),
    (["--rate", "10MBps"], "not a bit rate"),
    (["--fail", "agg1-core9@5"], "no link agg1-core9"),
    (["--fail", "nonsense"], "A-B@MICROSECONDS"),
    (["--check", "--fail", "agg1-core1@5"], "not with --fail"),
    (["--schedule", "ring_allreduce", "--algorithm", "scattered"], "--algorithm is for"),
    (["--algorithm", "fastest"], "invalid choice"),
    (["--workers", "0"], "--workers must be >= 1"),
    (["--ecn-kmin", "-1"], "--ecn-kmin must be >= 0"),
    (["--mtu", "70"], "--mtu must be in 71..9216"),
    (["--degrade", "x@y"], "is not N@FRACTION or A-B@FRACTION"),
    (["--degrade", "agg1-core9@0.5"], "no link agg1-core9"),
    (["--oversub", "0.5"], "oversubscription must be in 1..64"),
    (["--cc-preset", "uec", "--cc", "dctcp"], "--cc-preset uec is for --cc nscc"),
    (["--workers", "2", "--prop-us", "0"], "needs --prop-us > 0"),
    (["--loops", "wam,magic"], "'magic' is not one of failure, reconcile, wam"),
    (["--loops", "wam", "--control-period-us", "0"], "--control-period-us must be > 0"),
    (["--loops", "wam", "--workers", "2"], "not with --workers > 1"),
    (["--ray", "local"], "--ray splits the run: give --workers 2 or more"),
])
def test_bad_arguments_are_one_line_errors(args: list[str], msg: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert msg in err[-1] and err[-1].startswith("python -m sim: error:")


def test_split_run_prints_what_one_process_prints(capsys: pytest.CaptureFixture[str]) -> None:
    out = {}
    for w in ("1", "2"):
        assert main(["--k", "4", "--size", "32KB", "--scheme", "rotate", "--counters",
                     "--quiet", "--workers", w, "--json"]) == 0
        text = capsys.readouterr().out
        summary = json.loads(text[:text.index("\n}") + 2])
        timing = ("wall_s", "build_s", "install_s", "hops_per_s")
        out[w] = ({k: v for k, v in summary.items() if k not in timing},
                  text[text.index("\n}") + 2:])
    assert out["1"] == out["2"] and "packets" in out["2"][1]


def test_progress_bar_goes_to_stderr_and_ends_at_every_flow(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--k", "4", "--size", "32KB", "--algorithm", "scattered"]) == 0
    cap = capsys.readouterr()
    assert "ok=True" in cap.out and "flows" not in cap.out
    assert "240/240 flows" in cap.err   # 16 hosts x 15 peers, all acknowledged
    assert main(["--k", "4", "--size", "32KB", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_export_cm_then_run_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cm = tmp_path / "ring.cm"
    assert main(["--k", "4", "--schedule", "ring_allreduce", "--size", "64KB",
                 "--export-cm", str(cm)]) == 0
    # 16 ranks, 30 steps of one send each; a barrier per step after the first
    assert "480 flows, 464 triggers on 16 nodes" in capsys.readouterr().out
    assert main(["--k", "4", "--tm", str(cm), "--quiet"]) == 0
    assert "ok=True" in capsys.readouterr().out


def test_a_bad_matrix_is_a_one_line_error(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    cm = tmp_path / "bad.cm"
    cm.write_text("Nodes 4\nConnections 1\n0->1 id 1 start 0 size ten\n")
    with pytest.raises(SystemExit):
        main(["--k", "4", "--tm", str(cm)])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"python -m sim: error: {cm}:3: size: expected an integer, got 'ten'"


def test_loops_run_in_virtual_time(capsys: pytest.CaptureFixture[str]) -> None:
    """Whack-a-Mole's loop moves balls off a link at a quarter of its rate; the failure loop
    finds a cut link two missed probe rounds after the cut."""
    assert main(["--k", "4", "--size", "128KB", "--scheme", "wam", "--quiet", "--loops",
                 "wam,failure", "--degrade", "agg1-core1@0.25", "--fail", "agg2-core3@30"]) == 0
    out = capsys.readouterr().out
    assert "[wam] group 1 weights [0.75, 1.0]" in out
    assert "30.0 µs  link agg2-core3 down" in out
    assert "80.0 µs  [failure] link agg2:" in out and "rerouted around" not in out
