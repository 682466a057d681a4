"""Figures and report from a synthetic results directory (what the runner writes)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from experiments import plots, report
from experiments.config import from_dict

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CFG = {"name": "synthetic", "topology": {"kind": "fattree", "k": 4, "bw_mbps": 10},
       "schemes": ["ecmp", "random"],
       "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "64KB"}]}


def _results(root: Path) -> Path:
    root.mkdir(parents=True)
    from_dict(CFG)  # the synthetic config is a valid one
    (root / "experiment.json").write_text(json.dumps({"config": CFG, "backend": "mininet"}))
    ccts, links, queues, flows, runs = [], [], [], [], []
    for scheme, cct, hot in (("ecmp", 0.4, 1.0), ("random", 0.2, 0.5)):
        for rep in range(2):
            ccts.append({"workload": "ring", "scheme": scheme, "repetition": rep,
                         "collective": 0, "name": "ring_allreduce", "cct": cct + rep * 0.01,
                         "ok": True})
            runs.append({"workload": "ring", "scheme": scheme, "repetition": rep,
                         "qdepth_max": 10 if scheme == "ecmp" else 3, "drops": 0,
                         "retransmissions": 1, "reordered": 0 if scheme == "ecmp" else 50})
            for i in range(5):
                t = 100.0 + i * 0.25
                for j, dst in enumerate(("agg1", "agg2")):
                    share = hot if j == 0 else 1 - hot
                    links.append({"workload": "ring", "scheme": scheme, "repetition": rep,
                                  "t": t, "src": "edge1", "src_port": 3 + j, "dst": dst,
                                  "dst_port": 1, "tx_packets": i * 10,
                                  "tx_bytes": int(i * 300_000 * share), "up": True})
                queues.append({"workload": "ring", "scheme": scheme, "repetition": rep, "t": t,
                               "switch": "edge1", "port": 3, "peer": "agg1",
                               "qdepth_max": i * (2 if scheme == "ecmp" else 1),
                               "qdepth_last": 0})
            for f in range(6):
                flows.append({"workload": "ring", "scheme": scheme, "repetition": rep,
                              "direction": "send", "flow": f, "fct": cct * (f + 1) / 6})
    pd.DataFrame(ccts).to_csv(root / "ccts.csv", index=False)
    pd.DataFrame(links).to_csv(root / "links.csv", index=False)
    pd.DataFrame(queues).to_csv(root / "queues.csv", index=False)
    pd.DataFrame(flows).to_csv(root / "flows.csv", index=False)
    pd.DataFrame(runs).to_csv(root / "runs.csv", index=False)
    pd.DataFrame([{"workload": "ring", "collective": 0, "ideal_s": 0.1}]).to_csv(
        root / "ideal.csv", index=False)
    return root


def test_summary_table_ranks_schemes(tmp_path: Path) -> None:
    r = report.load_results(_results(tmp_path / "r"))
    t = report.summary_table(r).set_index("scheme")
    assert t.loc["random", "vs_best"] == 1.0
    assert t.loc["ecmp", "vs_best"] == pytest.approx(0.405 / 0.205)
    assert t.loc["random", "slowdown"] == pytest.approx(2.05)
    # ecmp put everything on agg1 (max/mean = 2 over two uplinks), random split evenly
    assert t.loc["ecmp", "imbalance"] == pytest.approx(2.0)
    assert t.loc["random", "imbalance"] == pytest.approx(1.0)
    assert t.loc["ecmp", "qdepth_max"] == 10 and t.loc["random", "reordered"] == 100


def test_report_and_figures_written(tmp_path: Path) -> None:
    root = _results(tmp_path / "r")
    md, page, table = report.write_report(root)
    pngs = sorted((root / "plots").glob("*.png"))
    assert {p.stem for p in pngs} == {"cct", "fct_cdf", "uplinks_ring", "queues_ring"}
    for p in pngs:
        assert p.read_bytes()[:8] == PNG_MAGIC and p.stat().st_size > 5000
        assert p.with_suffix(".svg").read_text().lstrip().startswith("<?xml")
    text = md.read_text()
    assert "| ring | random |" in text and "random wins" in text
    assert "![cct](plots/cct.png)" in text
    h = page.read_text()
    assert h.count("data:image/png;base64,") == 4 and "<table>" in h
    assert (root / "table.csv").exists() and len(table) == 2


def test_plots_skip_without_data(tmp_path: Path) -> None:
    assert plots.cct_bars(pd.DataFrame()) is None
    assert plots.queue_depth(pd.DataFrame(), "w") is None
    assert plots.save(None, tmp_path / "x") == []
    assert not list(tmp_path.iterdir())


def test_report_cli_rejects_a_non_results_dir(tmp_path: Path,
                                              capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as e:
        report.main([str(tmp_path)])
    assert e.value.code == 2
    assert "not an experiment results directory" in capsys.readouterr().err
    root = _results(tmp_path / "ok")
    assert report.main([str(root)]) == 0


def test_report_says_whether_the_switches_emulated_the_delay() -> None:
    from experiments.report import dilation_section

    meta = {"tdf": 1000.0, "backend": "mininet",
            "fabric": {"link_rate": "100G", "prop_delay_us": 0.1, "mtu": 1500,
                       "queue_packets": 64}}
    text = "\n".join(dilation_section({**meta, "prop_delay_emulated_us": 100.0}))
    assert "The switches add each link's propagation delay themselves (100 µs wall" in text
    assert "adds no propagation delay" not in text
    assert "adds no propagation delay" in "\n".join(dilation_section(meta))


def test_plots_return_figures_and_saving_is_separate(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    table = pd.DataFrame({"workload": ["w", "w"], "scheme": ["ecmp", "wam"],
                          "mean": [2e-4, 1e-4], "ci95": [1e-5, float("nan")]})
    fig = plots.cct_bars(table)
    assert isinstance(fig, Figure) and not list(tmp_path.iterdir())   # drawn, not written
    assert [p.name for p in plots.save(fig, tmp_path / "cct")] == ["cct.png", "cct.svg"]
    assert (tmp_path / "cct.png").stat().st_size > 0
    runs = pd.DataFrame({"workload": ["w"] * 4, "scheme": ["ecmp", "ecmp", "wam", "wam"],
                         "repetition": [0, 1, 0, 1], "cct": [2e-4, 2.1e-4, 1e-4, 1.1e-4]})
    assert isinstance(plots.sweep_bars(runs), Figure)
