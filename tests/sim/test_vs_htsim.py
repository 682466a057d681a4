"""bench/vs_htsim.py: skipped with a reason without htsim; with one (here a stand-in that
prints htsim's output lines) each flow's FCT is its finish minus its start, and p4fabric's
simulator runs the same matrix."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.netutil import load_bench

bench = load_bench("vs_htsim")

FAKE = '''\
import sys
args = sys.argv[1:]
tm = args[args.index("-tm") + 1]
flows = [l.split() for l in open(tm) if "->" in l]
for f in flows:
    fid, start = int(f[2]), float(f[4])
    print(f"Flow Uec_x flowId {fid} uecSrc 0 starting at {start}")
for f in flows:
    fid, start = int(f[2]), float(f[4])
    print(f"Flow Uec_x flowId {fid} uecSrc 0 finished at {start + 10 * fid} total messages 1")
print("New: 9 Rtx: 3 RTS: 0 Bounced: 0 ACKs: 4 NACKs: 2 Pulls: 0 sleek_pkts: 0")
'''


def test_without_htsim_the_bench_says_why(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("HTSIM", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert bench.main(["--workload", "perm"]) == 0
    assert capsys.readouterr().out.startswith("skipped: htsim_uec is not on PATH")


def test_fcts_are_finish_minus_start(tmp_path: Path) -> None:
    exe = tmp_path / "htsim_uec"
    exe.write_text(f"#!{sys.executable}\n{FAKE}")
    exe.chmod(0o755)
    cm = tmp_path / "w.cm"
    cm.write_text("Nodes 16\nConnections 2\n0->5 id 1 start 0 size 20000\n"
                  "5->9 id 2 start 7 size 20000\n")
    h = bench.run_htsim(str(exe), cm, 16, "spray", 4150, 64, 1000.0, 1)
    assert (h.min_us, h.tail_us, h.finished, h.retx, h.nacks) == (10.0, 20.0, 2, 3, 2)
    f = bench.run_p4fabric(cm, 4, "spray+trim", 4150, 64, 1000.0, 1, 1)
    assert not f.error and f.finished == f.flows == 2 and f.tail_us is not None
    assert f.cpu_s > 0


def test_the_starting_window_is_htsims_one_and_a_half_bdp() -> None:
    # htsim at 100 Gb/s, 1 µs hops, 4150-byte MTU: a 262,926-byte window (its log), 64 packets
    assert bench.init_cwnd_pkts(4150, 4) == 64
