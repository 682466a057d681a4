"""python -m topo: bad arguments give a one-line argparse error (exit 2) before anything is
started; good ones describe the intended spec."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from topo.__main__ import build_spec, main, parser


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "topo", *args], capture_output=True, text=True,
                          timeout=60)


def _main_error(capsys, args: list[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main(args)
    return e.value.code, capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--k", "5"], "fat-tree k must be even"),
    (["--k", "32"], "a k=32 fat tree (1280 switches, 8192 hosts) is too big for Mininet: "
                    "k <= 16 here"),
    (["--k", "34"], "fat-tree k must be even and in 2..32"),
    (["--k", "x"], "argument --k: expected a positive integer"),
    (["--bw", "0"], "argument --bw: link rate must be > 0"),
    (["--scheme", "nope"], "argument --scheme: invalid choice"),
    (["--target", "tofino"], "argument --target: invalid choice"),
    (["--topo", "ring"], "--topo: expected fattree, leafspine or a .json file"),
    (["--topo", "leafspine", "--uplinks", "17"], "uplinks must be in 1..16"),
    (["--topo", "/nonexistent/topology.json"], "No such file"),
])
def test_bad_arguments_one_line_error(capsys, args, message) -> None:
    code, err = _main_error(capsys, args)
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith("python -m topo: error:") and message in last, err
    assert len(err.strip().splitlines()) <= 2  # usage + the error


def test_the_module_runs_as_a_program() -> None:
    r = _run("--k", "3")
    assert r.returncode == 2 and "fat-tree k must be even" in r.stderr


def test_help_lists_the_options() -> None:
    r = _run("--help")
    assert r.returncode == 0
    for opt in ("--topo", "--k", "--target", "--bw", "--scheme", "--check", "--run-dir",
                "--uplinks", "--hosts-per-leaf"):
        assert opt in r.stdout


def test_build_spec_from_arguments(tmp_path) -> None:
    a = parser().parse_args(["--topo", "leafspine", "--leaves", "3", "--spines", "2",
                             "--hosts-per-leaf", "1", "--uplinks", "2", "--bw", "40"])
    spec = build_spec(a)
    assert (len(spec.switches), len(spec.hosts)) == (5, 3)
    assert {lk.bw_mbps for lk in spec.links} == {40}
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"hosts": {"h1": {}, "h2": {}}, "switches": {"s1": {}},
                             "links": [["h1", "s1", "0ms", 5], ["h2", "s1"]]}))
    spec = build_spec(parser().parse_args(["--topo", str(f), "--bw", "20"]))
    assert sorted(lk.bw_mbps for lk in spec.links) == [5, 20]  # --bw fills only the gaps
    assert len(build_spec(parser().parse_args(["--k", "6"])).hosts) == 54
