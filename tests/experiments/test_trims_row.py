"""runs.csv's ``trims`` column from the backend that counts them: on an emulated fabric the
switches' count the guard reads (its probes' ``Measures.trims``), on the simulator the
simulator's own; a run that gives no count of its own (``RunSamples.trims`` None) keeps the
switches'. Scripted backends, no root."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from experiments import runner
from experiments.backends import Backend, RunSamples
from experiments.config import from_dict
from topo.guard import Measures

CFG = {"name": "trims", "backend": "mininet", "fabric": {"link_rate": "100G", "trim": True},
       "topology": {"kind": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
       "schemes": ["ecmp"], "repetitions": 1,
       "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "8KB",
                      "timeout_s": 20}],
       "parameters": {"seed": 1, "tdf": 50_000}}


class Scripted(Backend):
    """Gives each run the samples it was made with."""

    name = "scripted"

    def __init__(self, cfg, spec, samples: RunSamples) -> None:  # noqa: ANN001
        super().__init__(cfg, spec)
        self.samples = samples

    def up(self, scheme) -> None:  # noqa: ANN001
        pass

    def set_scheme(self, scheme) -> None:  # noqa: ANN001
        pass

    def run(self, schedule, hosts, w, out) -> RunSamples:  # noqa: ANN001
        return self.samples

    def down(self) -> None:
        pass


def _row(tmp_path: Path, samples: RunSamples, backend: str) -> pd.Series:
    cfg = from_dict({**CFG, "backend": backend})
    be = Scripted(cfg, cfg.spec(), samples)
    run = runner.run_experiment(cfg, tmp_path, backend=be, report=False)
    return pd.read_csv(run.root / "runs.csv").iloc[0]


def test_an_emulated_runs_row_keeps_the_switches_trim_count(tmp_path: Path) -> None:
    m = Measures(frames_switched=10_000, trims=17)
    row = _row(tmp_path, RunSamples(measures=m, trims=None, trim=True), "mininet")
    assert row["trims"] == 17 and bool(row["trim"])
    assert "hidden_drops" in row.index                 # the guard's columns are there


def test_a_simulated_runs_row_has_the_simulators_trim_count(tmp_path: Path) -> None:
    row = _row(tmp_path, RunSamples(trims=5, trim=True, tail_drops=2), "sim")
    assert row["trims"] == 5 and row["drops_p4_queue"] == 2
    assert "hidden_drops" not in row.index              # nothing hidden was measured


@pytest.mark.parametrize("trims", [0, 40])
def test_the_guards_figures_and_the_row_agree(tmp_path: Path, trims: int) -> None:
    m = Measures(frames_switched=10_000, trims=trims)
    row = _row(tmp_path, RunSamples(measures=m, trims=999, trim=True), "mininet")
    assert row["trims"] == trims                       # the switches counted what they cut
