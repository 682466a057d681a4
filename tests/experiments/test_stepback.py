"""The runner's step back of the TDF when an experiment's runs turn invalid at the calibrated
rate: the pure policy, the guard reasons it counts, and the runner on a scripted backend that
cannot pace at the faster rates (no root)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from common.histogram import LogHistogram
from experiments import runner
from experiments.backends import Backend, RunSamples
from experiments.calibrate import ramp_tdfs
from experiments.config import from_dict
from experiments.stepback import StepBack, capacity_reason
from topo.guard import Measures, judge

PACE = "hosts cannot pace: send lag p99 40.00 ms > 4 frame times (24.22 ms)"
LADDER = ramp_tdfs(100e9)   # 12,500 ... 200,000 for 100 Gb/s links


def bad(why: str = PACE) -> dict:
    return {"valid": False, "invalid_reason": why}


def test_capacity_reasons_are_the_guards_own() -> None:
    link = 2e6   # frame time 6.06 ms
    lag = LogHistogram()
    lag.add_many([100_000] * 100)
    hidden = Measures(frames_switched=1000, ingress_lag_us=lag,
                      egress_delay_us=LogHistogram.of([10] * 100))
    cases = {
        "pace": Measures(send_lag_us=lag),
        "hidden queue": hidden,
        "cpu": Measures(switch_cpu={"s1": 0.99}),
        "socket": Measures(host_stack={"udp_rcvbuf": 3}),
        "drops": Measures(frames_switched=1000, socket_drops=50),
        "loop": Measures(false_link_downs=["a-b"]),
    }
    for name, m in cases.items():
        row = judge(m, link).row
        assert row.valid is False, name
        assert capacity_reason(row.valid, row.invalid_reason) == row.invalid_reason, name
    # loss that no counter saw is a gap in the accounting, not the rate's doing
    row = judge(Measures(data_sent=1000, data_arrived=900), link).row
    assert row.valid is False and capacity_reason(False, row.invalid_reason) is None
    assert capacity_reason(True, None) is None
    assert capacity_reason(False, "did not complete") is None


def test_the_policy_steps_on_k_of_the_last_n_along_the_ladder() -> None:
    p = StepBack(LADDER, 50_000, invalid=2, window=4)
    assert p.next_tdf() == 100_000
    assert p.add("a", PACE) is None                 # one invalid run: a neighbour's burst
    for k in "bcd":
        assert p.add(k, None) is None
    assert p.add("e", PACE) is None                 # "a" left the window of 4
    step = p.add("f", PACE)
    assert step is not None and (step.from_tdf, step.to_tdf) == (50_000, 100_000)
    assert step.rerun == ("e", "f") and step.reason == PACE and p.tdf == 100_000
    assert p.add("g", PACE) is None                 # the window starts again at the new rate
    step = p.add("h", PACE)
    assert step is not None and step.to_tdf == 200_000
    # the slowest rate of the ramp: no step, the reason kept once
    assert p.add("i", PACE) is None and p.stuck is None
    assert p.add("j", "hidden queue: x") is None and p.stuck == "hidden queue: x"
    assert p.add("k", PACE) is None and p.stuck == "hidden queue: x" and p.tdf == 200_000
    # a TDF between two rates steps to the next slower one; a valid stream never steps
    assert StepBack(LADDER, 30_000).next_tdf() == 50_000
    calm = StepBack(LADDER, 50_000, invalid=1, window=1)
    assert all(calm.add(i, None) is None for i in range(50)) and calm.tdf == 50_000
    assert calm.add("x", PACE) is not None          # K = 1: the first invalid run steps


CFG = {"name": "steps", "backend": "mininet", "fabric": {"link_rate": "100G"},
       "topology": {"kind": "fattree", "k": 4}, "schemes": ["ecmp", "random"],
       "repetitions": 3,
       "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "8KB",
                      "placement": "random", "timeout_s": 20}],
       "parameters": {"seed": 1, "tdf": "auto"}}


class Slow(Backend):
    """A fabric whose hosts cannot pace ``scheme`` below TDF ``keeps_up_at`` (a send lag p99
    of 500 ms: 4 frame times are 24 ms at TDF 50,000, 97 ms at 200,000), recording what the
    runner asked of it."""

    name = "slow"
    retunable = True

    def __init__(self, cfg, spec, scheme: str = "random",  # noqa: ANN001
                 keeps_up_at: float = 100_000) -> None:
        super().__init__(cfg, spec)
        self.calls: list[str] = []
        self.seeds: list[int] = []
        self.scheme, self.lagging, self.keeps_up_at = "", scheme, keeps_up_at

    def up(self, scheme) -> None:  # noqa: ANN001
        self.calls.append("up")
        self.scheme = scheme.name

    def set_scheme(self, scheme) -> None:  # noqa: ANN001
        self.calls.append(f"set {scheme.name}")
        self.scheme = scheme.name

    def adopt(self, cfg, scheme, tdf=None) -> None:  # noqa: ANN001
        self.calls.append(f"adopt {tdf:g} {scheme.name} {cfg.topology.bw_mbps:g}")
        self.cfg, self.tdf, self.scheme = cfg, tdf, scheme.name

    def run(self, schedule, hosts, w, out) -> RunSamples:  # noqa: ANN001
        self.calls.append(f"run {self.scheme} {self.tdf:g}")
        lag = LogHistogram()
        if self.scheme == self.lagging and self.tdf < self.keeps_up_at:
            lag.add_many([500_000] * 100)
        else:
            lag.add_many([2_000] * 100)
        return RunSamples(measures=Measures(send_lag_us=lag))

    def seed_data_plane(self, seed: int) -> None:
        self.seeds.append(seed)

    def down(self) -> None:
        self.calls.append("down")


def run_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, be_kw: dict,
             cfg_d: dict = CFG) -> tuple[runner.ExperimentRun, Slow, list[str]]:
    cfg = from_dict(cfg_d)
    monkeypatch.setattr(runner, "emulation_tdf", lambda c: 50_000.0)   # "calibrated"
    be = Slow(runner.dilate(cfg, 50_000.0), cfg.spec(), **be_kw)
    said: list[str] = []
    run = runner.run_experiment(cfg, tmp_path, backend=be,
                                progress=runner.Progress(log=said.append))
    return run, be, said


def test_invalid_runs_step_the_rate_back_and_run_again(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    run, be, said = run_with(tmp_path, monkeypatch, {})
    # ecmp's three runs at 50,000; random's first two cannot pace: the second steps back to
    # the ramp's next rate (100 Gb/s / 100,000 = 1 Mb/s), both run again there as reps 3, 4
    assert be.calls == ["up", "run ecmp 50000", "run ecmp 50000", "run ecmp 50000",
                        "set random", "run random 50000", "run random 50000",
                        "adopt 100000 random 1", "run random 100000", "run random 100000",
                        "run random 100000", "down"]
    # a re-run draws what the repetition it replaces drew (parameters.seed 1 + 1000·rep)
    assert be.seeds == [1, 1001, 2001, 1, 1001, 1, 1001, 2001]
    runs = pd.read_csv(run.root / "runs.csv")
    rnd = runs[runs["scheme"] == "random"]
    assert list(rnd["dir"]) == [f"runs/ring/random/rep{k}" for k in (0, 1, 3, 4, 2)]
    assert list(rnd["repetition"]) == [0, 1, 3, 4, 2]
    assert list(rnd["tdf"]) == [50_000, 50_000, 100_000, 100_000, 100_000]
    assert list(rnd["valid"]) == [False, False, True, True, True]
    assert list(rnd["rerun_of"].fillna(-1)) == [-1, -1, 0, 1, -1]
    assert runs[runs["scheme"] == "ecmp"]["valid"].all()
    meta = json.loads((run.root / "experiment.json").read_text())
    assert meta["tdf"] == 50_000
    (step,) = meta["step_back"]["steps"]
    assert step["from_tdf"] == 50_000 and step["to_tdf"] == 100_000
    assert step["after_runs"] == 5 and (step["scheme"], step["repetition"]) == ("random", 1)
    assert step["reason"].startswith("hosts cannot pace")
    assert step["rerun"] == [{"workload": "ring", "scheme": "random", "repetition": 0, "as": 3},
                             {"workload": "ring", "scheme": "random", "repetition": 1, "as": 4}]
    assert any("stepping back to TDF 100000" in line for line in said)
    report = (run.root / "report.md").read_text()
    assert "TDF 50000 → 100000;" in report
    assert "TDF 50000 → **100000**, hosts cannot pace" in report
    assert "ring/random rep 0 as rep 3, ring/random rep 1 as rep 4" in report
    assert "| re-run of rep |" in report


def test_a_valid_experiment_never_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, be, said = run_with(tmp_path, monkeypatch, {"keeps_up_at": 0})
    assert not any(c.startswith("adopt") for c in be.calls) and not said
    assert run.meta["step_back"]["steps"] == [] and run.meta["tdf"] == 50_000
    runs = pd.read_csv(run.root / "runs.csv")
    assert len(runs) == 6 and runs["valid"].all() and "rerun_of" not in runs
    assert "→" not in (run.root / "report.md").read_text()


def test_a_tdf_the_file_states_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg_d = {**CFG, "parameters": {"seed": 1, "tdf": 50_000}}
    run, be, _ = run_with(tmp_path, monkeypatch, {}, cfg_d)
    assert not any(c.startswith("adopt") for c in be.calls) and "step_back" not in run.meta
    assert (pd.read_csv(run.root / "runs.csv")["valid"] == False).sum() == 3  # noqa: E712


def test_at_the_slowest_rate_the_runner_says_so(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    run, be, said = run_with(tmp_path, monkeypatch, {"keeps_up_at": 1e9})
    # 50,000 -> 100,000 -> 200,000 (0.5 Mb/s, the ramp's slowest), then no further
    adopts = [c for c in be.calls if c.startswith("adopt")]
    assert adopts == ["adopt 100000 random 1", "adopt 200000 random 0.5"]
    assert run.meta["step_back"]["stuck"].startswith("hosts cannot pace")
    assert any("not stepping back further" in line for line in said)
    assert "the slowest rate of the ramp" in (run.root / "report.md").read_text()


def test_the_cli_says_the_rate_stepped_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture) -> None:
    from experiments import run as run_cli

    cfg = from_dict(CFG)
    be = Slow(runner.dilate(cfg, 50_000.0), cfg.spec())
    monkeypatch.setattr(runner, "emulation_tdf", lambda c: 50_000.0)
    monkeypatch.setattr(run_cli, "check_root", lambda backend: None)
    monkeypatch.setattr(run_cli, "run_experiment",
                        lambda c, out, **kw: runner.run_experiment(c, out, backend=be, **kw))
    f = tmp_path / "steps.yaml"
    f.write_text(json.dumps(CFG))
    run_cli.main([str(f), "--out", str(tmp_path / "out"), "--quiet"])
    out = " ".join(capsys.readouterr().out.split())   # as said, whatever the console wraps
    assert "stepping back to TDF 100000" in out
    assert "TDF stepped back, runs invalid at the calibrated rate: 50000 → 100000" in out


def test_a_step_back_updates_the_calibration_cache(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The next experiment (the next ``make demo``) starts at the rate this one stepped back
    to, not again at the one whose runs turned invalid; a valid experiment leaves the cache
    as calibration wrote it."""
    from experiments import calibrate
    from topo import calibration
    from topo.calibration import CalibrationEntry

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cfg = from_dict(CFG)
    key = calibrate.cache_key(cfg)
    calibration.store(key, CalibrationEntry(50_000.0, fabric_rate="100G", emulated_mbps=2.0,
                                            measured=1.0, ramp=[{"tdf": 50_000.0}]))
    run_with(tmp_path / "valid", monkeypatch, {"keeps_up_at": 0})
    assert calibration.entry(key) == CalibrationEntry(
        50_000.0, fabric_rate="100G", emulated_mbps=2.0, measured=1.0, ramp=[{"tdf": 50_000.0}])
    _, _, said = run_with(tmp_path / "steps", monkeypatch, {})
    e = calibration.entry(key)
    assert e is not None and e.tdf == 100_000 and e.emulated_mbps == pytest.approx(1.0)
    assert e.stepped_back is not None and e.stepped_back.startswith(
        "TDF 50000 -> 100000: hosts cannot pace")
    assert e.ramp == [{"tdf": 50_000.0}] and e.fabric_rate == "100G"
    assert any("calibration cache: TDF 100000" in line for line in said)
    # read back as stored, and never made faster by a later step from a slower start
    assert CalibrationEntry.from_dict(e.to_dict()) == e
    assert calibrate.step_back_cache(cfg, 25_000, 50_000, "x") is None
