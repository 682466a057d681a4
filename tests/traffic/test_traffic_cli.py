"""The CLI reports bad input as one argparse-style line naming the field."""

from __future__ import annotations

import json

import pytest

from traffic.run import main
from traffic.schedules import load


def run_err(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    assert e.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_dump_generated_schedule(tmp_path):
    out = tmp_path / "s.yaml"
    assert main(["--schedule", "ring_allreduce", "--ranks", "4", "--size", "1MB",
                 "--iterations", "2", "--compute-us", "100", "--dump-schedule", str(out)]) == 0
    s = load(out)
    assert s.ranks == 4 and len(s.programs[0]) == 2 * 6 and len(s.collectives) == 2


def test_bad_generator_argument_names_field(capsys):
    err = run_err(capsys, "--schedule", "halving_doubling_allreduce", "--ranks", "6",
                  "--hosts", "10.0.0.1")
    assert err.endswith("ranks: butterfly algorithms need a power of two >= 2, got 6")


def test_bad_schedule_file_names_field(tmp_path, capsys):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps({"ranks": 2, "programs": [
        {"steps": [{"sends": [{"dst": 5, "bytes": 10, "flow": 0}]}]}, {"steps": []}]}))
    err = run_err(capsys, "--schedule", str(f), "--hosts", "10.0.0.1,10.0.0.2")
    assert "programs[0].steps[0].sends[0].dst" in err


def test_bad_size_and_unknown_schedule(capsys):
    assert "bad size" in run_err(capsys, "--schedule", "ring_allreduce", "--size", "3 parsecs")
    assert "unknown generator" in run_err(capsys, "--schedule", "ring_allgatherz",
                                          "--hosts", "10.0.0.1")


def test_trace_import_via_cli(tmp_path):
    t = tmp_path / "t.csv"
    t.write_text("id,src,dst,bytes,time_us,after\n0,0,1,1000,0,\n1,1,2,500,,0\n2,2,0,700,5,\n")
    out = tmp_path / "s.json"
    assert main(["--trace", "--schedule", str(t), "--dump-schedule", str(out)]) == 0
    s = load(out)
    assert s.ranks == 3
    # rank 1 forwards only after message 0 arrived; rank 0 collects message 2 at the end
    assert s.programs[1][0].recvs[0].flow == 0 and s.programs[1][0].sends[0].dst == 2
    assert [x.flow for x in s.programs[0][-1].recvs] == [2]
    assert s.programs[2][0].at_us == 5.0


def test_trace_bad_dependency_names_row(tmp_path, capsys):
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes,after\n0,1,1000,\n2,0,10,0\n")
    err = run_err(capsys, "--trace", "--schedule", str(t), "--hosts", "10.0.0.1")
    assert "rows[1].after" in err
