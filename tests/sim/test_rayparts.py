"""A split run whose parts are Ray tasks (sim.rayparts) gives the results of one loop: on a
local Ray cluster (2 CPUs standing in for two machines), the golden k=4 cases and a k=8 run,
byte for byte; an experiment's ``parameters.sim_ray`` runs the same."""

from __future__ import annotations

import pytest

# tests/sim/golden.py, importable as a sibling (see test_sim_fabric.py)
from golden import run_case  # noqa: E402
from raylocal import local_ray_cluster  # noqa: E402

from model.spec import fat_tree
from sim.network import SimConfig, SimNetwork
from sim.results import member_counters
from traffic.schedules import alltoall


@pytest.fixture(scope="module")
def local_ray():  # noqa: ANN201 - the ray module
    """Ray started here on 2 CPUs, standing in for two machines."""
    with local_ray_cluster() as ray:
        yield ray


@pytest.mark.slow
@pytest.mark.parametrize("name", ["random", "wam-failure", "ecmp-drops"])
def test_ray_split_equals_one_loop_k4(local_ray, name: str) -> None:  # noqa: ANN001
    assert run_case(name, workers=2, ray_address="local") == run_case(name, workers=1)


@pytest.mark.slow
def test_ray_split_equals_one_loop_k8(local_ray) -> None:  # noqa: ANN001
    sched = alltoall(16, 16 * 8_000)
    sched.placement = [f"h{i * 8 + 1}" for i in range(16)]
    out = {}
    for ray_address, w in ((None, 1), ("local", 2)):
        net = SimNetwork(fat_tree(8, bw_mbps=10_000), "random",
                         SimConfig(workers=w, ray_address=ray_address, record_ingress=True))
        res = net.run(sched)
        assert res.ok
        timing = dict.fromkeys(("wall_s", "hops_per_s", "build_s", "install_s"), 0)
        out[w] = (res.summary() | timing, member_counters(net).to_records(index=False).tolist(),
                  sorted(net.ingress_log, key=lambda e: e[0]))
    assert out[2] == out[1]


@pytest.mark.slow
def test_experiment_sim_ray_gives_the_same_runs(local_ray, tmp_path) -> None:  # noqa: ANN001
    import pandas as pd

    from experiments import runner
    from experiments.config import from_dict

    tiny = {"name": "tiny", "backend": "sim",
            "topology": {"kind": "fattree", "k": 4, "bw_mbps": 10},
            "schemes": ["ecmp", "random"],
            "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "8KB",
                           "placement": "random", "timeout_s": 20}]}
    got = {}
    for name, params in (("one", {"sim_workers": 1}),
                         ("ray", {"sim_workers": 2, "sim_ray": "local"})):
        d = {**tiny, "parameters": {"seed": 1, **params}}
        root = runner.run_experiment(from_dict(d), tmp_path / name).root
        got[name] = pd.read_csv(root / "ccts.csv")["cct"].tolist()
    assert got["ray"] == got["one"] and len(got["one"]) == 2
