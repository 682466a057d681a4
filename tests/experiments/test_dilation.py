"""Time dilation: every time-like knob of a loaded experiment is scaled (enumerated, not
sampled), the flowlet timeout written to the switches is the fabric value × TDF, the backend
runs the dilated experiment and everything recorded comes back in fabric units."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from experiments import backends, runner
from experiments.backends import Backend, RunSamples
from experiments.config import ConfigError, from_dict
from model.dilation import Dim, dilate, format_rate, knobs, parse_rate, to_fabric_time
from model.routing import compute_fabric_entries

TDF = 2000.0

FULL = {
    "name": "fab", "backend": "mininet",
    "fabric": {"link_rate": "100G", "prop_delay_us": 1.0, "queue_packets": 32,
               "flowlet_gap_us": 50},
    "topology": {"kind": "fattree", "k": 4},
    "schemes": ["ecmp", "flowlet", {"name": "ecmp", "path_policy": {
        "policy": "ecn-adaptive", "avoid_us": 20}}],
    "workloads": [
        {"name": "ring", "schedule": "ring_allreduce", "size": "64KB", "rto_ms": 0.5,
         "timeout_s": 30, "linger_rtos": 3, "failure": {"link": ["agg1", "core1"], "at_s": 1e-4,
                                      "restore_s": 3e-4}},
        {"name": "bsp", "schedule": "ring_allreduce", "size": "8KB", "rate": "50G",
         "bsp": {"iterations": 2, "compute_us": 10}}],
    "transport": {"cc": "dctcp", "min_rto_us": 20, "max_rto_us": 5000},
    "parameters": {"tdf": TDF, "sample_period_s": 20e-6, "control_period_s": 10e-6,
                   "settle_s": 5e-6, "loops": ["wam"], "start_margin_s": 3,
                   "lock_timeout_s": 60, "socket_buffer": 65536},
}


def test_every_time_like_knob_declares_its_dimension_and_is_scaled() -> None:
    cfg = from_dict(FULL)
    emu = dilate(cfg, TDF)
    pairs = list(zip(knobs(cfg), knobs(emu), strict=True))
    undeclared = [k.path for k, _ in pairs if k.dim is None]
    assert not undeclared, f"time-like knobs without a Dim: {undeclared}"
    seen = {Dim.TIME: 0, Dim.RATE: 0, Dim.WALL: 0, Dim.COUNT: 0}
    for fab, em in pairs:
        assert fab.path == em.path
        seen[fab.dim] += 1
        if fab.value is None:
            assert em.value is None, fab.path
        elif fab.dim is Dim.TIME:
            assert em.value == pytest.approx(fab.value * TDF), fab.path
        elif fab.dim is Dim.RATE:
            assert parse_rate(em.value) == pytest.approx(parse_rate(fab.value) / TDF), fab.path
        else:
            assert em.value == fab.value, fab.path     # machine bounds, counts: as they are
    paths = {k.path for k, _ in pairs}
    # the enumeration reaches every section: parameters, fabric, workloads, failure, bsp,
    # the schemes' parameters and the hosts' path policy
    for p in ("parameters.control_period_s", "parameters.sample_period_s", "fabric.link_rate",
              "fabric.flowlet_gap_us", "fabric.prop_delay_us", "topology.bw_mbps",
              "workloads[0].rto_ms", "workloads[0].rate", "workloads[0].failure.at_s",
              "workloads[1].bsp.compute_us", "schemes[1].params.timeout_us",
              "schemes[2].path_policy.avoid_us", "workloads[0].timeout_s",
              "transport.min_rto_us", "transport.max_rto_us", "workloads[0].linger_rtos"):
        assert p in paths, p
    assert seen[Dim.TIME] >= 10 and seen[Dim.RATE] >= 4 and seen[Dim.WALL] >= 3


def test_fabric_block_sets_rates_and_flowlet_gap() -> None:
    cfg = from_dict(FULL)
    assert cfg.topology.bw_mbps == 100_000 and cfg.workloads[0].rate == "100G"
    assert cfg.workloads[1].rate == "50G"                   # stated rates are kept
    assert cfg.schemes[1].params == {"timeout_us": 50}
    emu = dilate(cfg, TDF)
    assert emu.spec().links[0].bw_mbps == pytest.approx(50.0)   # 100 Gb/s / 2000


def test_flowlet_timeout_written_to_the_switches_is_the_fabric_gap_times_tdf() -> None:
    emu = dilate(from_dict(FULL), TDF)
    entries = compute_fabric_entries(emu.spec(), emu.schemes[1].build())
    flowlet = [dict(e.params) for sw in entries.switches.values() for e in sw.entries
               if e.action.endswith("lb_flowlet")]
    assert flowlet and {p["timeout_us"] for p in flowlet} == {50 * int(TDF)}


def test_a_fabric_file_defaults_its_time_knobs_in_fabric_units() -> None:
    d = {**FULL, "parameters": {"tdf": TDF}, "workloads": [
        {"name": "ring", "schedule": "ring_allreduce", "size": "64KB"}]}
    cfg = from_dict(d)
    assert cfg.parameters.settle_s == 5e-6 and cfg.parameters.sample_period_s == 20e-6
    assert cfg.workloads[0].rto_ms == 0.05
    emu = dilate(cfg, TDF)
    assert emu.parameters.settle_s == pytest.approx(0.01)   # not 0.3 s × 2000


def test_tdf_needs_a_fabric_block_and_a_sane_value() -> None:
    plain = {k: v for k, v in FULL.items() if k != "fabric"}
    with pytest.raises(ConfigError, match="parameters.tdf: time dilation needs a fabric"):
        from_dict(plain)
    with pytest.raises(ConfigError, match="parameters.tdf"):
        from_dict({**FULL, "parameters": {"tdf": 0.5}})
    with pytest.raises(ConfigError, match="topology.bw_mbps: the fabric block states"):
        from_dict({**FULL, "topology": {"kind": "fattree", "k": 4, "bw_mbps": 10}})
    with pytest.raises(ConfigError, match="fabric.link_rate"):
        from_dict({**FULL, "fabric": {"link_rate": "fast"}})
    assert from_dict({**FULL, "parameters": {"tdf": "auto"}}).parameters.tdf == "auto"


def test_rates_round_trip_and_results_come_back_in_fabric_seconds() -> None:
    for bps in (100e9, 2.5e6, 1500.0, 12345678.0):
        assert parse_rate(format_rate(bps)) == pytest.approx(bps, rel=1e-6)
    rec = {"rank": 3, "collectives": [{"start": 10.0, "finish": 30.0, "cct": 20.0}],
           "flows": [{"fct": 4.0, "bytes": 1000, "posted": 12.0}], "totals": {"packets_sent": 7}}
    got = to_fabric_time(rec, 1000)
    assert got["collectives"][0] == {"start": 0.01, "finish": 0.03, "cct": 0.02}
    assert got["flows"][0] == {"fct": 0.004, "bytes": 1000, "posted": 0.012}
    assert got["rank"] == 3 and got["totals"] == {"packets_sent": 7}


class Recording(Backend):
    """Records what the runner hands it; each run 'takes' 2 s of wall time per rank record."""

    name = "recording"
    made: list[Recording] = []

    def __init__(self, cfg, spec) -> None:  # noqa: ANN001
        super().__init__(cfg, spec)
        self.schemes: list = []
        self.workloads: list = []
        Recording.made.append(self)

    def up(self, scheme) -> None:  # noqa: ANN001
        self.schemes.append(scheme)

    def set_scheme(self, scheme) -> None:  # noqa: ANN001
        self.schemes.append(scheme)

    def run(self, schedule, hosts, w, out: Path) -> RunSamples:  # noqa: ANN001
        self.workloads.append(w)
        d = out / "traffic"
        d.mkdir(parents=True, exist_ok=True)
        for r in range(schedule.ranks):
            (d / f"rank{r}.json").write_text(json.dumps({
                "rank": r, "host": f"h{r}", "job": 0, "schedule": schedule.name,
                "completed": True, "error": None, "flows": [], "received": [],
                "steps": [], "collectives": [{"collective": 0, "name": "c", "start": 100.0,
                                               "finish": 102.0, "cct": 2.0}],
                "totals": {"retransmissions": 0, "reordered": 0, "packets_sent": 0}}))
        return RunSamples(queues=pd.DataFrame([{"switch": "edge1", "port": 1, "qdepth_max": 3,
                                                "t": 101.0}]))

    def down(self) -> None:
        pass


def test_the_backend_runs_the_dilated_experiment_and_results_are_in_fabric_units(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(backends.BACKENDS, "mininet", Recording)
    monkeypatch.setattr(runner, "BACKENDS", backends.BACKENDS)
    Recording.made.clear()
    d = {**FULL, "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "64KB",
                                "rto_ms": 0.5}], "schemes": ["flowlet"]}
    run = runner.run_experiment(from_dict(d), tmp_path, report=False)
    (be,) = Recording.made
    assert be.cfg.parameters.control_period_s == pytest.approx(10e-6 * TDF)  # the WAM loop
    assert be.cfg.parameters.sample_period_s == pytest.approx(20e-6 * TDF)   # the sampler
    assert be.schemes[0].params == {"timeout_us": 50 * int(TDF)}
    assert be.workloads[0].rto_ms == pytest.approx(0.5 * TDF)
    assert parse_rate(be.workloads[0].rate) == pytest.approx(100e9 / TDF)
    assert be.spec.links[0].bw_mbps == pytest.approx(100e3 / TDF)
    ccts = pd.read_csv(run.root / "ccts.csv")
    assert ccts["cct"].iloc[0] == pytest.approx(2.0 / TDF)
    runs = pd.read_csv(run.root / "runs.csv")
    assert runs["cct"].iloc[0] == pytest.approx(2.0 / TDF) and runs["tdf"].iloc[0] == TDF
    assert pd.read_csv(run.root / "queues.csv")["t"].iloc[0] == pytest.approx(101.0 / TDF)
    assert run.meta["tdf"] == TDF and run.meta["fabric"]["link_rate"] == "100G"
    assert run.meta["dilated"]["schemes[0].params.timeout_us"] == [50, 50 * int(TDF)]


def test_the_simulator_runs_a_fabric_file_at_tdf_1(tmp_path: Path) -> None:
    d = {**FULL, "backend": "sim", "schemes": ["ecmp"],
         "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "16KB",
                        "rto_ms": 1}], "parameters": {"tdf": TDF, "seed": 1}}
    run = runner.run_experiment(from_dict(d), tmp_path, report=False)
    runs = pd.read_csv(run.root / "runs.csv")
    assert runs["tdf"].iloc[0] == 1 and runs["ok"].all()
    # 100 Gb/s links: a 16 KB ring on 16 ranks takes microseconds, not the ms of 10 Mb/s
    assert runs["cct"].iloc[0] < 1e-3
