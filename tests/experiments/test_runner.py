"""The runner end to end on the simulator backend (no root), its interruption handling with a
scripted backend, and the CLI's one-line errors."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from experiments import run as run_cli
from experiments import runner, stats
from experiments.backends import Backend, RunSamples
from experiments.config import from_dict
from experiments.runs import RunRow
from topo.guard import GuardRow

TINY = {"name": "tiny", "backend": "sim", "topology": {"kind": "fattree", "k": 4, "bw_mbps": 10},
        "schemes": ["ecmp", "random"],
        "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "8KB",
                       "placement": "random", "timeout_s": 20}],
        "parameters": {"seed": 1}}


def test_sim_experiment_end_to_end(tmp_path: Path) -> None:
    run = runner.run_experiment(from_dict(TINY), tmp_path)
    root = run.root
    assert root.parent == tmp_path / "tiny" and run.meta["interrupted"] is None
    meta = json.loads((root / "experiment.json").read_text())
    assert meta["versions"]["python"] and "pandas" in meta["versions"]["packages"]
    assert meta["phases"]["total"] > 0 and "report" in meta["phases"]
    runs = pd.read_csv(root / "runs.csv")
    assert list(runs["scheme"]) == ["ecmp", "random"]
    assert runs["ok"].all() and runs["bytes_conserved"].all()
    sent = runs["bytes_sent"].iloc[0]
    assert sent == 16 * 30 * 500            # 16 ranks, 2(N-1) chunks of 8000/16 bytes
    ccts = pd.read_csv(root / "ccts.csv")
    assert len(ccts) == 2 and (ccts["cct"] > 0).all()
    ideal = pd.read_csv(root / "ideal.csv")
    assert (ccts["cct"] >= ideal["ideal_s"].iloc[0]).all()   # nothing beats the bound
    assert (root / "plots" / "cct.png").read_bytes()[:4] == b"\x89PNG"
    assert "| ring | ecmp |" in (root / "report.md").read_text()
    assert (root / "config.yaml").exists()
    assert len(list((root / "runs" / "ring").rglob("rank*.json"))) == 2 * 16


def test_sim_experiment_split_over_two_processes_gives_the_same_runs(tmp_path: Path) -> None:
    got = {}
    for w in (1, 2):
        d = {**TINY, "parameters": {"seed": 1, "sim_workers": w}}
        root = runner.run_experiment(from_dict(d), tmp_path / str(w)).root
        got[w] = pd.read_csv(root / "ccts.csv")["cct"].tolist()
    assert got[1] == got[2] and len(got[1]) == 2


@pytest.mark.parametrize("skew_s", [0.0, None])   # None: the default (SIM_START_SKEW_S)
def test_each_simulated_repetition_draws_the_hosts_start_skew(tmp_path: Path,
                                                               skew_s: float | None) -> None:
    params = {"seed": 1} if skew_s is None else {"seed": 1, "sim_start_skew_s": skew_s}
    d = {**TINY, "schemes": ["ecmp"], "repetitions": 3, "parameters": params}
    ccts = [pd.read_csv(runner.run_experiment(from_dict(d), tmp_path / str(i), report=False)
                        .root / "ccts.csv")["cct"].tolist() for i in range(2)]
    assert ccts[0] == ccts[1]                        # a seed is one run
    assert len(set(ccts[0])) == (1 if skew_s == 0 else 3)


@pytest.mark.parametrize(("skew_s", "runs"), [(0.0, 2), (0.05, 5)])
def test_the_simulators_reference_runs_until_its_own_mean_is_tight(
        tmp_path: Path, skew_s: float, runs: int) -> None:
    """A scheme that repeats itself needs no more runs; one that varies with the hosts' start
    skew (here up to 50 ms on a ~0.1 s ring) gets them, up to the cap, and says it stayed wide."""
    d = {**TINY, "schemes": ["ecmp"], "repetitions": 2, "max_repetitions": 5,
         "parameters": {"seed": 1, "sim_start_skew_s": skew_s}}
    run = runner.run_experiment(from_dict(d), tmp_path, report=False, reference_tight=0.05)
    assert len(run.runs) == runs
    adaptive = json.loads((run.root / "experiment.json").read_text())["adaptive"]
    assert adaptive["reference_tight"] == 0.05
    assert adaptive["reference_wide"] == {"ring": [] if runs == 2 else ["ecmp"]}


class Scripted(Backend):
    """A backend that writes nothing and interrupts on its second run."""

    name = "scripted"

    def __init__(self, cfg, spec) -> None:  # noqa: ANN001
        super().__init__(cfg, spec)
        self.calls: list[str] = []

    def up(self, scheme) -> None:  # noqa: ANN001
        self.calls.append("up")

    def set_scheme(self, scheme) -> None:  # noqa: ANN001
        self.calls.append(f"set {scheme.name}")

    def run(self, schedule, hosts, w, out) -> RunSamples:  # noqa: ANN001
        self.calls.append("run")
        if self.calls.count("run") == 2:
            raise KeyboardInterrupt
        return RunSamples()

    def down(self) -> None:
        self.calls.append("down")


def test_interrupt_tears_down_and_keeps_what_was_measured(tmp_path: Path) -> None:
    cfg = from_dict(TINY)
    be = Scripted(cfg, cfg.spec())
    run = runner.run_experiment(cfg, tmp_path, backend=be)
    assert be.calls == ["up", "run", "set random", "run", "down"]
    assert "interrupted" in run.meta["interrupted"]
    runs = pd.read_csv(run.root / "runs.csv")
    assert len(runs) == 1 and not runs["ok"].iloc[0]   # the first run, recorded (no ranks)
    assert json.loads((run.root / "experiment.json").read_text())["interrupted"]
    assert (run.root / "report.md").read_text().count("Incomplete run") == 1


def test_failure_is_recorded_and_teardown_still_runs(tmp_path: Path) -> None:
    cfg = from_dict(TINY)
    be = Scripted(cfg, cfg.spec())
    be.up = lambda scheme: (_ for _ in ()).throw(RuntimeError("switch edge3 did not start"))
    run = runner.run_experiment(cfg, tmp_path, backend=be)
    assert be.calls == ["down"]
    assert run.meta["interrupted"] == "failed: RuntimeError: switch edge3 did not start"
    assert "Traceback" in (run.root / "error.txt").read_text()


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntopology: {kind: fattree}\nschemes: [ecmp]\n"
                   "workloads: [{schedule: ring_allreduce, size: 12XB}]\n")
    with pytest.raises(SystemExit) as e:
        run_cli.main([str(bad)])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and "workloads[0].size: '12XB' is not a size" in err[-1]
    good = tmp_path / "good.yaml"
    good.write_text(json.dumps({**TINY, "backend": "mininet"}))
    with pytest.raises(SystemExit):
        run_cli.main([str(good), "--schemes", "ecmp,wam"])
    assert "--schemes: 'wam' is not in" in capsys.readouterr().err
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert run_cli.main([str(good)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs root" in err[0] and "make demo-batch" in err[0]


def test_lb_bsp_evens_out_compute_on_the_simulator(tmp_path: Path) -> None:
    cfg = from_dict({**TINY, "schemes": ["ecmp"], "workloads": [{
        "name": "bsp", "schedule": "ring_allreduce", "size": "4KB", "timeout_s": 20,
        "bsp": {"iterations": 2, "compute_us": 20000, "stragglers": [3],
                "straggler_factor": 3.0, "lb_bsp": True}}]})
    run = runner.run_experiment(cfg, tmp_path, report=False)
    runs = pd.read_csv(run.root / "runs.csv")
    assert list(runs["iteration"]) == [0, 1] and runs["ok"].all()
    first, second = (json.loads(s) for s in runs["batch_shares"])
    assert first == [1 / 16] * 16 or max(first) == min(first)
    assert second[3] < min(s for i, s in enumerate(second) if i != 3)   # the straggler
    assert sum(second) == pytest.approx(1.0, abs=1e-3)
    ccts = pd.read_csv(run.root / "ccts.csv")
    # the straggler's 3x compute no longer holds the iteration back
    assert ccts["iteration_s"].iloc[1] < ccts["iteration_s"].iloc[0]


def test_cli_narrows_schemes_workloads_and_repetitions(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(json.dumps({**TINY, "schemes": ["ecmp", {"name": "flowlet",
                                                           "params": {"timeout_us": 100}}]}))
    p = run_cli.parser()
    a = p.parse_args([str(good), "--schemes", "flowlet,ecmp,flowlet", "--repetitions", "3",
                      "--workloads", "ring", "--backend", "sim"])
    cfg = run_cli.narrow(run_cli.config_mod.load(good), a, p)
    assert [s.label for s in cfg.schemes] == ["flowlet(timeout_us=100)", "ecmp"]
    assert cfg.repetitions == 3 and cfg.backend == "sim" and len(cfg.workloads) == 1


def test_a_close_call_gets_more_repetitions_up_to_the_cap(tmp_path: Path) -> None:
    cfg = from_dict({**TINY, "repetitions": 3, "max_repetitions": 5})
    w = cfg.workloads[0]
    a, b = (s.label for s in cfg.schemes[:2])

    def rows(ccts: dict[str, list[float]]) -> list[RunRow]:
        blank = {f.name: None for f in dataclasses.fields(RunRow)}
        return [RunRow(**{**blank, "workload": w.name, "scheme": s, "ok": True,
                          "cct": c, "guard": GuardRow.unmeasured()})
                for s, cs in ccts.items() for c in cs]

    run = runner.ExperimentRun(cfg, tmp_path)
    # 6 apart with half-widths of ~2.5 each: 1.3 standard errors from flipping
    run.runs = rows({a: [100.0, 101.0, 99.0], b: [106.0, 107.0, 105.0]})
    assert runner._settle_close_calls(run, cfg, w, {a: 3, b: 3}) == [a, b]
    assert runner._settle_close_calls(run, cfg, w, {a: 5, b: 5}) == []     # the cap
    run.runs = rows({a: [100.0, 101.0, 99.0], b: [150.0, 151.0, 149.0]})
    assert runner._settle_close_calls(run, cfg, w, {a: 3, b: 3}) == []     # robust
    # invalid runs do not count: b's one valid run has no interval, so no close call
    run.runs = rows({a: [100.0, 101.0, 99.0], b: [106.0, 107.0, 105.0]})
    run.runs[-1].guard = run.runs[-2].guard = GuardRow(False, "hidden queue", measured=False)
    assert runner._settle_close_calls(run, cfg, w, {a: 3, b: 3}) == []
    # an unresolved overlap (means 12 % apart, wide intervals) gets runs; one whose estimate
    # needs far more than the cap does not
    run.runs = rows({a: [56.0, 53.5, 58.5], b: [63.3, 60.8, 65.8]})
    assert runner._settle_close_calls(run, cfg, w, {a: 3, b: 3}) == [a, b]
    run.runs = rows({a: [100.0, 103.0, 97.0], b: [106.0, 109.0, 103.0]})
    beyond: dict[str, list[str]] = {}
    assert runner._settle_close_calls(run, cfg, w, {a: 3, b: 3}, beyond) == []
    assert len(beyond[w.name]) == 1 and beyond[w.name][0].startswith(f"{a} vs {b} (~")
    assert from_dict(TINY).max_repetitions is None


class Quiet(Backend):
    """A backend whose runs return nothing (not ok), recording what was asked of it."""

    name = "quiet"

    def __init__(self, cfg, spec) -> None:  # noqa: ANN001
        super().__init__(cfg, spec)
        self.calls: list[str] = []

    def up(self, scheme) -> None:  # noqa: ANN001
        self.calls.append("up")

    def set_scheme(self, scheme) -> None:  # noqa: ANN001
        self.calls.append(f"set {scheme.name}")

    def run(self, schedule, hosts, w, out) -> RunSamples:  # noqa: ANN001
        self.calls.append("run")
        return RunSamples()

    def down(self) -> None:
        self.calls.append("down")


@pytest.mark.parametrize("budget", [None, 1e-3])
def test_adaptive_repetitions_stop_at_the_cap_or_the_wall_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: float | None) -> None:
    params = {"seed": 1, **({"wall_budget_s": budget} if budget else {})}
    cfg = from_dict({**TINY, "repetitions": 2, "max_repetitions": 4, "parameters": params,
                     "workloads": [{**TINY["workloads"][0], "name": "a"},
                                   {**TINY["workloads"][0], "name": "b"}]})
    a, b = (s.label for s in cfg.schemes)
    # every pair is a close call until the cap (the statistics are tested above)
    monkeypatch.setattr(runner, "_settle_close_calls", lambda run, cfg, w, reps, beyond_cap=None: [
        s for s in (a, b) if reps[s] < (cfg.max_repetitions or 0)])
    be = Quiet(cfg, cfg.spec())
    done: list[runner.Eta] = []
    run = runner.run_experiment(cfg, tmp_path, report=False, backend=be,
                                progress=runner.Progress(done=lambda w, r, e: done.append(e)))
    runs = pd.read_csv(run.root / "runs.csv")
    due = runs[runs["repetition"] < 2]
    assert len(due) == 8   # the repetitions always run: 2 workloads x 2 schemes x 2
    # every workload's due runs come before any adaptive one
    assert list(runs["repetition"][:8]) == [0, 1] * 4
    meta = run.meta["adaptive"]
    if budget is None:
        assert len(runs) == 16 and meta["left_by_budget"] == {}
        assert meta["added"] == {"a": {a: 2, b: 2}, "b": {a: 2, b: 2}}
        # the rounds alternate between the workloads
        assert list(runs["workload"][8:]) == ["a", "a", "b", "b"] * 2
    else:
        assert len(runs) == 8 and meta["added"] == {}
        assert meta["left_by_budget"] == {"a": [a, b], "b": [a, b]}
        from experiments.report import write_report
        write_report(run.root)   # the report says what the budget left
        assert "the budget left close calls unsettled: a: " in (run.root / "report.md").read_text()
    assert all(e.adaptive and e.elapsed_s > 0 for e in done) and done[7].remaining_s >= 0


def test_calibration_runs_on_the_experiments_own_fabric(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from experiments import calibrate
    from experiments.backends import MininetBackend

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cfg = from_dict({**TINY, "backend": "mininet", "fabric": {"link_rate": "100G"},
                     "topology": {"kind": "fattree", "k": 4}, "schemes": ["ecmp"],
                     "parameters": {"tdf": "auto"}})
    calls: list[str] = []

    class Fabric(MininetBackend):
        def up(self, scheme) -> None:  # noqa: ANN001
            calls.append("up")

        def adopt(self, cfg, scheme) -> None:  # noqa: ANN001
            calls.append(f"adopt {cfg.topology.bw_mbps:g}")

        def seed_data_plane(self, seed: int) -> None:
            pass

        def run(self, schedule, hosts, w, out) -> RunSamples:  # noqa: ANN001
            calls.append("run")
            return RunSamples()

        def down(self) -> None:
            calls.append("down")

    fabric = Fabric(cfg, cfg.spec())
    monkeypatch.setattr(calibrate, "ramp_backend", lambda c: fabric)

    def calibrated(c, log, backend):  # noqa: ANN001
        assert backend is fabric
        calls.append("ramp")
        return 100_000.0

    monkeypatch.setattr(calibrate, "calibrated_tdf", calibrated)
    assert runner.needs_calibration(cfg)
    run = runner.run_experiment(cfg, tmp_path, report=False)
    # one fabric: the ramp's, taken over at the calibrated rate (100 Gb/s / 100,000 = 1 Mb/s)
    assert calls == ["ramp", "adopt 1", "run", "down"]
    assert run.meta["interrupted"] is None
    assert run.meta["tdf"] == 100_000.0 and "calibration" in run.meta["phases"]


def test_a_calibration_that_finds_no_rate_is_a_one_line_error(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    from experiments.calibrate import CalibrationError

    def fail(*a, **k):  # noqa: ANN002, ANN003
        raise CalibrationError("calibration: no emulated rate down to 0.5 Mb/s completed a run")

    good = tmp_path / "good.yaml"
    good.write_text(json.dumps(TINY))
    monkeypatch.setattr(run_cli, "run_experiment", fail)
    assert run_cli.main([str(good), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["experiments.run: calibration: no emulated rate down to 0.5 Mb/s completed "
                   "a run"]


def test_the_wall_budget_counts_from_since(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    cfg = from_dict({**TINY, "repetitions": 2, "max_repetitions": 4,
                     "parameters": {"seed": 1, "wall_budget_s": 3600}})
    a, b = (s.label for s in cfg.schemes)
    monkeypatch.setattr(runner, "_settle_close_calls", lambda run, cfg, w, reps, beyond_cap=None: [
        s for s in (a, b) if reps[s] < (cfg.max_repetitions or 0)])
    # an hour of the budget went before the runner (make demo's set-up, say): nothing is added
    run = runner.run_experiment(cfg, tmp_path, report=False, backend=Quiet(cfg, cfg.spec()),
                                since=time.time() - 3600)
    assert len(pd.read_csv(run.root / "runs.csv")) == 4
    assert run.meta["adaptive"]["left_by_budget"] == {"ring": [a, b]}
    assert run.meta["adaptive"]["before_runner_s"] >= 3600


def _rows(w: str, ccts: dict[str, list[float]]) -> list[RunRow]:
    blank = {f.name: None for f in dataclasses.fields(RunRow)}
    return [RunRow(**{**blank, "workload": w, "scheme": s, "ok": True, "cct": c,
                      "guard": GuardRow.unmeasured()})
            for s, cs in ccts.items() for c in cs]


def test_a_wide_emulated_simulated_ratio_gets_more_repetitions_up_to_the_cap(
        tmp_path: Path) -> None:
    from experiments.eta import AdaptiveLog

    cfg = from_dict({**TINY, "repetitions": 3, "max_repetitions": 6})
    w = cfg.workloads[0]
    a, b = (s.label for s in cfg.schemes[:2])
    ref = {(w.name, a): 133.6, (w.name, b): 134.0}
    run = runner.ExperimentRun(cfg, tmp_path)
    log = AdaptiveLog(6, ratio_tight=0.05)
    # a: one run that retransmitted (163.2 against ~145): 1.13 ± 0.19; b: 1.02 ± 0.02
    run.runs = _rows(w.name, {a: [145.7, 144.2, 163.2], b: [137.0, 134.9, 137.0]})
    assert runner._tighten_ratios(run, cfg, w, {a: 3, b: 3}, ref, log) == [a]
    assert log.ratio_wide == {w.name: [a]}
    r, half = log.ratio[w.name][a]
    assert r == pytest.approx(151.03 / 133.6, abs=1e-3) and half > 0.05
    assert runner._tighten_ratios(run, cfg, w, {a: 6, b: 3}, ref, log) == []   # the cap
    assert log.ratio_wide == {w.name: [a]}   # still wide: the report says so
    # tight once the runs agree; invalid runs do not count; no reference, no request
    run.runs = _rows(w.name, {a: [145.7, 144.2, 145.9, 146.0], b: [137.0, 134.9, 137.0]})
    assert runner._tighten_ratios(run, cfg, w, {a: 4, b: 3}, ref, log) == []
    assert log.ratio_wide == {w.name: []}
    run.runs[-1].guard = GuardRow(False, "hidden queue", measured=False)
    run.runs[-2].guard = GuardRow(False, "hidden queue", measured=False)
    assert runner._tighten_ratios(run, cfg, w, {a: 4, b: 3}, ref, log) == [b]   # one valid
    assert runner._tighten_ratios(run, cfg, w, {a: 4, b: 3}, {}, log) == []


def test_the_reference_is_known_when_its_runs_agree_or_enough_are_tight(
        tmp_path: Path) -> None:
    from experiments.eta import AdaptiveLog

    cfg = from_dict({**TINY, "schemes": ["ecmp", "random", "rotate"], "repetitions": 3,
                     "max_repetitions": 12})
    w = cfg.workloads[0]
    run = runner.ExperimentRun(cfg, tmp_path)
    log = AdaptiveLog(12, reference_tight=0.05)
    # rotate: within 1 % (the skew's own share); ecmp: three draws that look tight (± 3.5 %)
    # from a 6 %-per-run spread; random: wide
    run.runs = _rows(w.name, {"ecmp": [265.0, 271.8, 271.1], "random": [230.0, 290.0, 250.0],
                              "rotate": [133.8, 133.9, 134.1]})
    assert runner._tighten_reference(run, cfg, w, {"ecmp": 3, "random": 3, "rotate": 3},
                                     0.05, log) == ["ecmp", "random"]
    run.runs += _rows(w.name, {"ecmp": [240.0, 262.0, 255.0], "random": [300.0, 220.0, 280.0]})
    assert runner._tighten_reference(run, cfg, w, {"ecmp": 6, "random": 6, "rotate": 3},
                                     0.05, log) == ["random"]          # ecmp: ± 4.8 % of 6
    assert runner._tighten_reference(run, cfg, w, {"ecmp": 6, "random": 12, "rotate": 3},
                                     0.05, log) == []                  # the cap
    assert log.reference_wide == {w.name: ["random"]}


def test_the_runner_adds_runs_until_the_ratio_is_tight_and_records_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = from_dict({**TINY, "repetitions": 3, "max_repetitions": 6})
    a, b = (s.label for s in cfg.schemes)
    # a's third run is an outlier (1.02 ± 0.08); a fourth that agrees makes it tight
    # (± 0.044); b alternates 125/145 against 135: wide until the cap
    script = {a: iter([100.0, 101.0, 106.0, 100.5]),
              b: iter([125.0, 145.0, 125.0, 145.0, 125.0, 145.0])}
    monkeypatch.setattr(runner, "_settle_close_calls",
                        lambda run, cfg, w, reps, beyond_cap=None: [])

    def fake(run, be, rec, spec, w, scheme, rep, progress, *rest):  # noqa: ANN001
        row = _rows(w.name, {scheme.label: [next(script[scheme.label]) * 1e-6]})[0]
        row.repetition = rep
        run.runs.append(row)
        return [row]

    monkeypatch.setattr(runner, "_run_workload", fake)
    ref = {("ring", a): 100e-6, ("ring", b): 135e-6}
    run = runner.run_experiment(cfg, tmp_path, report=False, backend=Quiet(cfg, cfg.spec()),
                                reference=ref)
    meta = json.loads((run.root / "experiment.json").read_text())["adaptive"]
    assert meta["added"] == {"ring": {a: 1, b: 3}}
    assert meta["ratio_tight"] == 0.05 and meta["ratio_wide"] == {"ring": [b]}
    assert meta["ratio"]["ring"][b][0] == pytest.approx(1.0)
    assert meta["ratio"]["ring"][a][1] <= 0.05
    from experiments.eta import AdaptiveLog, adaptive_text
    text = adaptive_text(AdaptiveLog.from_dict(meta))
    assert text.endswith(f"the emulated/simulated ratio's 95 % interval (tight at ± 0.05) "
                         f"stayed wide for ring: {b} (1.00 ± 0.09)")
    # without a reference (no simulator beside it) the ratio asks for nothing
    script = {a: iter([100.0, 101.0, 106.0]), b: iter([125.0, 145.0, 125.0])}
    run = runner.run_experiment(cfg, tmp_path, report=False, backend=Quiet(cfg, cfg.spec()))
    assert run.meta["adaptive"]["added"] == {} and "ratio" not in run.meta["adaptive"]


def test_beside_sim_runs_the_simulator_first_and_hands_its_means_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, object]] = []
    tight: list[tuple[object, int | None]] = []
    real = runner.run_experiment

    def spy(cfg, out_root="results", **kw):  # noqa: ANN001, ANN003
        calls.append((cfg.backend, kw.get("reference")))
        tight.append((kw.get("reference_tight"), cfg.max_repetitions))
        return real(dataclasses.replace(cfg, backend="sim"), out_root, **kw)

    monkeypatch.setattr(run_cli, "run_experiment", spy)
    monkeypatch.setattr(run_cli, "check_root", lambda backend: None)
    f = tmp_path / "emu.yaml"
    f.write_text(json.dumps({**TINY, "backend": "mininet", "schemes": ["ecmp"]}))
    assert run_cli.main([str(f), "--beside-sim", "--quiet", "--no-report",
                         "--out", str(tmp_path / "out")]) == 0
    assert [c[0] for c in calls] == ["sim", "mininet"]
    # the simulator's side runs until its own means are tight; the emulation as the file says
    assert tight == [(stats.REFERENCE_TIGHT, stats.REFERENCE_MAX_REPETITIONS), (None, None)]
    ref = calls[1][1]
    assert isinstance(ref, dict) and set(ref) == {("ring", "ecmp")} and ref[("ring", "ecmp")] > 0
    (root,) = (tmp_path / "out" / "tiny").iterdir()
    assert (root / "sim" / "runs.csv").exists() and (root / "runs.csv").exists()
