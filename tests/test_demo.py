"""The `make demo` path: the real p4switch command forwards fabric.p4 traffic in batch mode."""

from __future__ import annotations

from pathlib import Path

from experiments import demo


def _loads(scheme: demo.Scheme, tmp_path: Path, n_flows: int, per_flow: int):
    traffic = tmp_path / "t.pcap"
    total = demo.write_traffic(traffic, n_flows, per_flow, seed=3)
    per_port = demo.run_switch(scheme, traffic, tmp_path)
    return total, per_port


def test_ecmp_keeps_each_flow_on_one_link(tmp_path: Path) -> None:
    total, per_port = _loads(demo.SCHEMES[0], tmp_path, n_flows=6, per_flow=10)
    assert sum(sum(c.values()) for c in per_port.values()) == total
    for src, _, _ in demo.flows(6):
        assert sum(1 for c in per_port.values() if c[src]) == 1


def test_whack_a_mole_splits_exactly_evenly(tmp_path: Path) -> None:
    wam = next(s for s in demo.SCHEMES if s.wam_log2_m)
    total, per_port = _loads(wam, tmp_path, n_flows=4, per_flow=16)
    loads = [sum(c.values()) for c in per_port.values()]
    assert loads == [total // 4] * 4  # 64 packets = 4 full periods of m = 16 balls


def test_demo_main_runs(tmp_path: Path) -> None:
    assert demo.main(["--flows", "2", "--packets-per-flow", "4"]) == 0
