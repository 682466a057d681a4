"""A run's drops by site (topo/guard.py SITES) from the runner's runs.csv: an incast
into 4-packet egress queues loses frames, and every one lost is counted somewhere — on the
simulator (virtual time: exact) as the queues' tail drops, on the emulated fabric as tail
drops or at a hidden site, with the data frames sent minus those that arrived within the
drops counted (``data_frames_uncounted`` 0).

The emulated assertions are an account, not timing: which frames die depends on the load of
the machine, that every dead one is counted does not; that the queues dropped at all has a
wide margin (three senders into one 4-packet queue at line rate)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from experiments import runner
from experiments.config import from_dict
from topo.guard import FAULT_SITES, SITES


def _cfg(backend: str, tdf: float, target: str = "p4switch") -> dict[str, Any]:
    return {
        "name": f"drops_{backend}_{target}", "backend": backend,
        "fabric": {"link_rate": "100G", "queue_packets": 4},
        "topology": {"kind": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
        "schemes": ["random"],
        "workloads": [{"name": "incast", "schedule": "moe_alltoall", "size": "96KB",
                       "options": {"skew": "zipf", "alpha": 1.2}, "window": 64,
                       "rto_ms": 300 / tdf, "timeout_s": 90}],
        "transport": {"cc": "dctcp", "min_rto_us": 3e5 / tdf, "max_rto_us": 2e6 / tdf},
        "parameters": {"target": target, "tdf": tdf, "loops": [],
                       "sample_period_s": 0.5 / tdf,
                       "socket_buffer": 8 << 20, "lock_timeout_s": 600}}


def _run(tmp_path: Path, backend: str, tdf: float, target: str = "p4switch") -> pd.Series:
    run = runner.run_experiment(from_dict(_cfg(backend, tdf, target)), tmp_path, report=False)
    assert run.meta["interrupted"] is None, run.meta["interrupted"]
    return pd.read_csv(run.root / "runs.csv").iloc[0]


def test_the_simulators_tail_drops_reach_runs_csv(tmp_path: Path) -> None:
    row = _run(tmp_path, "sim", 1.0)
    assert row["ok"], row["errors"]
    assert row["drops_p4_queue"] > 0 and row["retransmissions"] > 0


@pytest.mark.root
@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mnexec") is None,
                    reason="needs root and Mininet")
@pytest.mark.parametrize("target", ["p4switch", "ebpf"])
def test_every_frame_the_emulated_fabric_lost_is_counted_at_a_site(tmp_path: Path,
                                                                   target: str) -> None:
    if target == "ebpf":
        from p4switch import ebpf_unavailable_reason

        if (why := ebpf_unavailable_reason()) is not None:
            pytest.skip(why)
    row = _run(tmp_path, "mininet", 100_000, target)      # 1 Mb/s links
    assert row["ok"], row["errors"]
    lost = row["data_frames_sent"] - row["data_frames_arrived"]
    counted = sum(int(row[f"drops_{k}"]) for k in SITES)
    print({k: row[f"drops_{k}"] for k in SITES}, "data lost", lost,   # pytest -s shows it
          "retx", row["retransmissions"], "wall", row["wall_s"], "valid", row["valid"],
          row["invalid_reason"], row["drops_detail"], row["frames_switched"])
    assert row["drops_p4_queue"] > 0               # the incast overflowed the tiny queues
    assert row["data_frames_uncounted"] == 0 and lost <= counted, (lost, counted)
    assert row["hidden_drops"] == sum(int(row[f"drops_{k}"]) for k in SITES
                                      if k in FAULT_SITES)
