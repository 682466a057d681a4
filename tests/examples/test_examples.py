"""Every script in examples/ and the notebook run here, as a user would run them: the simulator
ones (and the notebook) everywhere, the emulated ones (``--emulated``) where root and Mininet
are (they bring up a k=4 fabric each, at TDF 100,000)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run(script: str, *args: str, timeout: float = 280) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True,
                       text=True, timeout=timeout, env=env, cwd=ROOT)
    assert p.returncode == 0, f"{script} {' '.join(args)} failed:\n{p.stdout}\n{p.stderr}"
    return p.stdout


def test_every_example_is_tested() -> None:
    here = Path(__file__).read_text()
    for f in sorted(EXAMPLES.glob("*.py")) + sorted(EXAMPLES.glob("*.ipynb")):
        assert f.name in here, f"examples/{f.name} is not run by {Path(__file__).name}"


@pytest.mark.slow
def test_compare_schemes_on_the_simulator(tmp_path: Path) -> None:
    out = run("compare_schemes.py", "--out", str(tmp_path))
    ccts = dict(re.findall(r"^(\w+)\s+CCT\s+([\d.]+) µs", out, re.M))
    assert set(ccts) == {"ecmp", "flowlet", "random", "wam"}
    assert float(ccts["ecmp"]) > float(ccts["random"])   # the ring's hash collisions
    assert list(tmp_path.glob("compare_schemes/*/cct.png"))


@pytest.mark.slow
def test_link_failure_on_the_simulator(tmp_path: Path) -> None:
    out = run("link_failure.py", "--out", str(tmp_path))
    assert re.search(r"\[failure\] link agg1:\d+-core1:\d+ down \(no probe for 2 periods\)",
                     out)
    cost = re.findall(r"intact\s+([\d.]+) µs, cut\s+([\d.]+) µs .* rerouted (\d+) µs", out)
    assert len(cost) == 2
    assert all(float(c) > float(i) and r == "50" for i, c, r in cost)


@pytest.mark.slow
def test_sweep_wam_period_on_the_simulator(tmp_path: Path) -> None:
    out = run("sweep_wam_period.py", "--periods", "10,50", "--out", str(tmp_path))
    rows = re.findall(r"^\s+(off|[\d.]+ µs)\s+([\d.]+)\s+(\d+)$", out, re.M)
    assert [r[0] for r in rows] == ["off", "10 µs", "50 µs"]
    changes = [int(r[2]) for r in rows]
    assert changes[0] == 0 and changes[1] > changes[2] > 0   # a faster loop acts more often


def test_custom_topology_on_the_simulator() -> None:
    out = run("custom_topology.py")
    assert "asym-3x2: 5 switches, 6 hosts, 13 links" in out
    split = {m[0]: [int(x) for x in re.findall(r"port \d: (\d+)", m[1])]
             for m in re.findall(r"^(\w+)\s+CCT.*carried (.*)$", out, re.M)}
    assert set(split) == {"ecmp", "random", "wam"} and all(len(v) == 3 for v in split.values())
    wam = split["wam"]
    assert max(wam) - min(wam) <= 0.05 * sum(wam)   # deterministic spraying: even thirds


@pytest.mark.slow
def test_the_notebook_runs(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(EXAMPLES / "simulator_tour.ipynb", as_version=4)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env_path}" if env_path else str(ROOT)
    try:
        nbclient.NotebookClient(nb, timeout=240, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        if env_path:
            os.environ["PYTHONPATH"] = env_path
        else:
            os.environ.pop("PYTHONPATH")
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)   # the figure was shown
    text = "".join(o.get("text", "") for o in outputs)
    assert re.search(r"[1-9]\d* weight changes", text)




@pytest.mark.parametrize("script", ["compare_schemes.py", "link_failure.py",
                                    "custom_topology.py"])
@pytest.mark.root
@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.timeout(1800)   # may wait up to 600 s for another fabric to finish
def test_emulated_examples(script: str, tmp_path: Path) -> None:
    out = run(script, "--emulated", "--tdf", "100000", "--out", str(tmp_path), timeout=1700)
    assert "µs (fabric time, TDF 100000" in out
