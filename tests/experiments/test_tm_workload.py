"""An experiment workload that runs an htsim connection matrix (``tm:``) on the simulator, and
the config's one-line errors for a bad one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from experiments import runner
from experiments.config import ConfigError, from_dict

CM = """\
Nodes 4
Connections 3
Triggers 1
0->3 id 1 start 0 size 30000 recv_done_trigger 1
1->3 id 2 start 0 size 30000
3->2 id 3 trigger 1 size 30000
trigger id 1 oneshot
"""


def _cfg(tm: Path, **w: Any) -> dict[str, Any]:
    return {"name": "tm", "backend": "sim", "fabric": {"link_rate": "100G"},
            "topology": {"kind": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
            "schemes": ["ecmp"], "workloads": [{"name": "cm", "tm": str(tm), **w}],
            "parameters": {"loops": []}}


def test_a_tm_workload_runs_on_the_simulator(tmp_path: Path) -> None:
    tm = tmp_path / "w.cm"
    tm.write_text(CM)
    cfg = from_dict(_cfg(tm))
    assert cfg.workloads[0].schedule == "tm" and cfg.workloads[0].size == 90000
    run = runner.run_experiment(cfg, tmp_path / "out", report=False)
    assert run.meta["interrupted"] is None, run.meta["interrupted"]
    row = pd.read_csv(run.root / "runs.csv").iloc[0]
    assert row["ok"], row["errors"]


@pytest.mark.parametrize("text, extra, msg", [
    ("Nodes 4\n0->1 id 1 size 5\n", {}, "w.cm:2: no start time"),
    ("Nodes 9\n0->8 id 1 start 0 size 5\n", {}, "9 nodes, but the fabric has only 4"),
    (CM, {"size": "1MB"}, "workloads[0].size: not with tm"),
])
def test_bad_tm_workloads_are_one_line_errors(tmp_path: Path, text: str,
                                              extra: dict[str, Any], msg: str) -> None:
    tm = tmp_path / "w.cm"
    tm.write_text(text)
    with pytest.raises(ConfigError) as e:
        from_dict(_cfg(tm, **extra))
    assert msg in str(e.value) and "\n" not in str(e.value)


INCAST = "Nodes 4\nConnections 2\n0->3 id 1 start 0 size 200000\n1->3 id 2 start 0 size 200000\n"


def test_trimming_and_the_per_flow_figures_reach_runs_csv(tmp_path: Path) -> None:
    tm = tmp_path / "incast.cm"
    tm.write_text(INCAST)
    rows = {}
    for trim in (False, True):
        d = _cfg(tm)
        d["fabric"].update(queue_packets=4, trim=trim)
        run = runner.run_experiment(from_dict(d), tmp_path / f"out{trim}", report=False)
        rows[trim] = pd.read_csv(run.root / "runs.csv").iloc[0]
    on, off = rows[True], rows[False]
    assert bool(on["trim"]) and not bool(off["trim"])
    assert on["trims"] > 0 and on["trims"] == on["trim_nacks"] and on["timeouts"] == 0
    assert off["trims"] == 0 and off["timeouts"] > 0
    for r in (on, off):
        assert r["fct_min_us"] <= r["fct_p50_us"] <= r["fct_tail_us"]
        assert r["fct_spread"] == pytest.approx(r["fct_tail_us"] / r["fct_min_us"], rel=1e-3)


def test_trimming_on_mininet_needs_the_p4switch_target(tmp_path: Path) -> None:
    """p4switch trims (``--trim-bytes``); BMv2 and the eBPF target's qdiscs tail-drop."""
    tm = tmp_path / "incast.cm"
    tm.write_text(INCAST)
    d = _cfg(tm)
    d.update(backend="mininet")
    d["fabric"]["trim"] = True
    assert from_dict(d).fabric.trim
    for target in ("bmv2", "ebpf"):
        d["parameters"] = {"loops": [], "target": target}
        with pytest.raises(ConfigError, match=f"fabric.trim: target {target} does not trim"):
            from_dict(d)
