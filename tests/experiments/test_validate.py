"""python -m experiments.validate: the small plan passes; a target it cannot meet fails it with
exit status 1; a malformed plan is a one-line error with status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.validate import main

PLANS = Path(__file__).parent / "validate"


def test_the_small_plan_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(PLANS / "k4.yaml")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [x.split(":")[0] for x in out[:3]] == [
        "PASS permutation, random spraying", "PASS permutation, one path per flow",
        "PASS 2-to-1 incast, trimming"]
    assert out[-1] == "k4: 3/3 passed"


def test_a_broken_target_fails_the_plan(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "incast2.cm").write_text((PLANS / "incast2.cm").read_text())
    plan = tmp_path / "broken.yaml"
    plan.write_text("runs:\n  - name: incast without trimming\n"
                    "    args: [--k, 4, --tm, incast2.cm, --queue-depth, 4]\n"
                    "    expect: {timeouts: 0, fct_tail_us: {max: 150}}\n"
                    "  - name: no such fabric\n    args: [--k, 5]\n    expect: {ok: true}\n")
    assert main([str(plan)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("FAIL incast without trimming: timeouts ")
    assert "!= 0" in out[0] and "fct_tail_us" in out[0]
    assert out[1] == "FAIL no such fabric: the run failed: python -m sim: error: fat-tree k " \
                     "must be even and in 2..32, got 5"
    assert out[2] == "broken: 0/2 passed"


@pytest.mark.parametrize("text, msg", [
    ("runs: []\n", "non-empty list 'runs'"),
    ("runs:\n  - args: [--k, 4]\n", "runs[0].expect: a mapping of targets"),
    ("runs:\n  - args: [--k, 4]\n    expect: {fct_tail_us: {below: 3}}\n", "a range is"),
    ("runs: [\n", "not valid YAML"),
])
def test_a_bad_plan_is_a_one_line_error(tmp_path: Path, text: str, msg: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "p.yaml"
    plan.write_text(text)
    assert main([str(plan)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and msg in err and err.startswith("python -m experiments.validate")
