"""`make topo-check` end to end: python -m topo --check brings up k=4 with the controller, pings
all 240 pairs, prints one summary line and exits 0; an unprogrammed fabric exits 1."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mininet.net", reason="needs Mininet (Debian package `mininet`)")

pytestmark = [pytest.mark.root, pytest.mark.mininet]
REPO = Path(__file__).resolve().parents[2]


def _topo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "topo", "--lock-wait", "240", *args],
                          capture_output=True, text=True, timeout=290, cwd=REPO)


def test_topo_check_k4_passes(tmp_path) -> None:
    r = _topo("--check", "--run-dir", str(tmp_path / "run"))
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    (line,) = [x for x in r.stdout.splitlines() if x.startswith("topo-check:")]
    assert re.match(r"topo-check: 240/240 host pairs reachable in [\d.]+ s", line), line
    assert re.search(r"20 p4switch switches, 16 hosts up in [\d.]+ s of wall time", r.stdout)
    assert (tmp_path / "run" / "p4info.txtpb").exists()  # what make shell reads
    assert not list((tmp_path / "run" / "pids").glob("*.pid"))  # everything stopped


def test_topo_check_fails_without_controller() -> None:
    r = _topo("--topo", "leafspine", "--leaves", "2", "--spines", "1", "--hosts-per-leaf", "1",
              "--no-controller", "--check")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "topo-check: 0/2 host pairs reachable" in r.stdout and "FAILED: h1->h2" in r.stdout
