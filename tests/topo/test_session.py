"""topo.session.FabricSession: a fabric in its own units, dilated by one TDF on every entry
point. The unit tests need no fabric; the last one runs one small collective three ways (the
CLI of ``python -m topo``, a script through the session, the experiment runner) and checks that
each ran the same dilated flowlet gap, RTO, pacing, loops and TDF and reported fabric µs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from model.dilation import dilate
from topo import __main__ as topo_cli
from topo.session import FabricSession, HostSettings, scheme_time_params

TDF = 2000.0
HOSTS = ["h1", "h2", "h3", "h4"]
SMALL = ["--topo", "leafspine", "--leaves", "2", "--spines", "2", "--hosts-per-leaf", "2"]


def _session(**kw: Any) -> FabricSession:
    return FabricSession("leafspine", leaves=2, spines=2, hosts_per_leaf=2, tdf=TDF, **kw)


def test_scheme_time_parameters_are_stated_and_dilated() -> None:
    s = _session()
    assert s.emulated_scheme("flowlet").timeout_us == 50 * TDF       # the fabric's gap
    assert s.emulated_scheme("flowlet", {"timeout_us": 20}).timeout_us == 20 * TDF
    assert scheme_time_params("flowlet", {}, None) == {"timeout_us": 100}   # its own default
    assert scheme_time_params("ecmp", {"seed": 3}, 50) == {"seed": 3}
    assert {lk.bw_mbps for lk in s.emu_spec.links} == {100e3 / TDF}
    assert {lk.bw_mbps for lk in s.spec.links} == {100e3}


def test_the_hosts_flags_are_the_fabric_units_dilated() -> None:
    s = _session()
    kw = s.agent_args(dilate(HostSettings(), TDF))
    assert kw["rto_ms"] == pytest.approx(0.05 * TDF)             # 50 µs initial RTO
    assert kw["min_rto_ms"] == pytest.approx(0.2 * TDF)          # 200 µs floor
    assert kw["rate"] == "50M"                                   # paced at the link rate
    assert kw["pace_credit_ms"] == pytest.approx(1e-3 * TDF)
    assert s.emu.control_period_s == pytest.approx(20e-6 * TDF)


def test_auto_loops_add_whack_a_mole_when_a_group_uses_it() -> None:
    s = _session()
    assert s.loop_names == ("failure", "reconcile") and s.auto_loops
    assert s._loops_for(s.emulated_scheme("wam")) == ("failure", "reconcile", "wam")
    assert _session(scheme="wam")._loops_for("wam")[-1] == "wam"
    fixed = _session(loops=["reconcile"])
    assert fixed._loops_for("wam") == ("reconcile",)   # a list given runs exactly that
    with pytest.raises(ValueError, match="unknown loop"):
        _session(loops=["bogus"])


def test_tdf_auto_is_the_calibrated_one_or_a_stated_default(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) \
        -> None:
    from topo import calibration

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    s = FabricSession(k=4, tdf="auto")
    assert s.tdf == 100_000 and "nothing calibrated" in s.tdf_source
    calibration.store(calibration.cache_key("fattree-k4", "p4switch", "100G"),
                      calibration.CalibrationEntry(20_000.0, measured=1.0))
    s = FabricSession(k=4, tdf="auto")
    assert (s.tdf, s.tdf_source) == (20_000.0, "calibrated")
    assert "TDF 20000" in next(s.describe())
    for bad in (0.5, "fast"):
        with pytest.raises(ValueError, match="tdf must be"):
            FabricSession(k=4, tdf=bad)


@pytest.mark.parametrize("args, message", [
    (["--tdf", "0.1"], "argument --tdf: expected auto or a number >= 1"),
    (["--loops", "bogus"], "argument --loops: unknown loop(s) bogus"),
    (["--link-rate", "fast"], "argument --link-rate: expected a rate"),
    (["--bw", "2", "--tdf", "10"], "give --bw or --tdf, not both"),
    (["--link-rate", "1K", "--tdf", "100000"], "below the 10Kb/s a switch can emulate"),
])
def test_bad_fabric_arguments_are_one_line(capsys: pytest.CaptureFixture, args: list[str],
                                           message: str) -> None:
    with pytest.raises(SystemExit) as e:
        topo_cli.main(args)
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and message in err[-1] and len(err) <= 2, err


def test_the_cli_arguments_describe_the_same_session_as_a_script() -> None:
    a = topo_cli.parser().parse_args([*SMALL, "--tdf", str(TDF), "--scheme", "flowlet"])
    cli = topo_cli.session_of(a)
    script = _session(scheme="flowlet")
    assert cli.emu == script.emu and cli.tdf == script.tdf
    assert cli.emulated_scheme("flowlet") == script.emulated_scheme("flowlet")
    h = dilate(HostSettings(), TDF)
    assert cli.agent_args(h) == script.agent_args(h)
    bw = topo_cli.session_of(topo_cli.parser().parse_args([*SMALL, "--bw", "2"]))
    assert bw.tdf == 50_000                                    # 100G / 2M


def test_cli_parameters_in_fabric_units() -> None:
    from topo.cli import CliError, scheme_params, time_us

    assert scheme_params(["gap=50us"]) == {"timeout_us": 50}
    assert scheme_params(["timeout=0.2ms", "seed=7"]) == {"timeout_us": 200, "seed": 7}
    assert time_us("50") == 50 and time_us("1s") == 1e6
    with pytest.raises(CliError):
        scheme_params(["gap=soon"])


# ---- one collective, three ways (root, Mininet) ---------------------------------------------------
def _runner_config() -> dict[str, Any]:
    return {"name": "three_ways", "backend": "mininet",
            "fabric": {"link_rate": "100G", "prop_delay_us": 1.0, "flowlet_gap_us": 50},
            "topology": {"kind": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
            "schemes": ["flowlet"],
            "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "16KB",
                           "hosts": HOSTS, "timeout_s": 60}],
            "parameters": {"tdf": TDF, "loops": ["failure", "reconcile"], "start_margin_s": 1,
                           "lock_timeout_s": 600, "socket_buffer": 262144}}


def _same(applied: dict[str, Any]) -> dict[str, Any]:
    """What must agree between the entry points."""
    a = applied["agent_args"]
    return {"tdf": applied["tdf"], "loops": applied["loops"],
            "control_period_s": round(applied["control_period_s"], 9),
            "scheme": applied["scheme"],
            **{k: a.get(k) for k in ("rto_ms", "min_rto_ms", "max_rto_ms", "rate",
                                     "pace_credit_ms", "ack_delay_ms", "tick_ms", "cc",
                                     "base_rtt_us", "window", "mss")}}


@pytest.mark.root
@pytest.mark.mininet
@pytest.mark.slow
def test_one_collective_three_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture) -> None:
    from experiments import runner
    from experiments.backends import MininetBackend
    from experiments.config import from_dict

    seen: list[dict[str, Any]] = []
    run_schedule = FabricSession.run_schedule

    def recording(self: FabricSession, *a: Any, **k: Any) -> Any:
        out = run_schedule(self, *a, **k)
        seen.append(self.applied())   # what this run ran with
        return out

    monkeypatch.setattr(FabricSession, "run_schedule", recording)
    seeds: list[int] = []
    seed_data_plane = FabricSession.seed_data_plane

    def seeding(self: FabricSession, seed: int) -> None:
        seeds.append(seed)
        seed_data_plane(self, seed)

    monkeypatch.setattr(FabricSession, "seed_data_plane", seeding)

    # 1. the CLI of `python -m topo`, its commands on stdin
    cmds = tmp_path / "commands.txt"     # Mininet's CLI polls a real file's descriptor
    cmds.write_text(f"collective ring_allreduce 16KB hosts={','.join(HOSTS)}\nloops\n"
                    "lb flowlet gap=20us\nlb wam\nevents 3\n")
    monkeypatch.setattr("sys.stdin", cmds.open())
    code = topo_cli.main([*SMALL, "--tdf", str(TDF), "--scheme", "flowlet", "--lock-wait",
                          "600", "--run-dir", str(tmp_path / "cli")])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "fabric time, TDF 2000" in out and ("valid" in out or "INVALID" in out), out
    assert "loops: failure, reconcile (auto" in out
    assert "timeout_us 20 µs fabric = 40000 µs written" in out       # lb flowlet gap=20us
    assert "loops: failure, reconcile, wam" in out                  # lb wam starts its loop
    assert re.search(r"^[0-9.]+ µs \w+ ", out, re.M), out            # events at fabric µs

    # 2. a script through the public session API
    with _session(scheme="flowlet", lock_timeout_s=600, run_dir=tmp_path / "script") as s:
        r = s.collective("ring_allreduce", "16KB", hosts=HOSTS)
    assert r.ok and r.cct_us is not None and r.cct_us > 0, r.summary()
    assert isinstance(r.valid, bool) and (r.valid or r.reasons)

    # 3. the experiment runner (its backend is the session)
    cfg = from_dict(_runner_config())
    emu = dilate(cfg, TDF)
    run = runner.run_experiment(cfg, tmp_path / "results", report=False,
                                backend=MininetBackend(emu, emu.spec(), TDF))
    assert run.meta["interrupted"] is None, run.meta
    runs = pd.read_csv(run.root / "runs.csv")
    assert bool(runs["ok"].iloc[0]) and runs["tdf"].iloc[0] == TDF
    assert 0 < runs["cct"].iloc[0] * 1e6 < 1e5       # fabric µs (wall would be ~TDF x more)

    assert len(seen) == 3, seen
    assert seeds == [0, 0, 0]     # the runner's seed 0 run and the default collective's
    cli, script, exp = (_same(x) for x in seen)
    assert cli == script == exp, (cli, script, exp)
    assert cli["scheme"]["timeout_us"] == 50 * TDF
    assert cli["rto_ms"] == pytest.approx(0.05 * TDF) and cli["rate"] == "50M"
    assert cli["loops"] == ("failure", "reconcile")


def test_over_wraps_a_fabric_started_by_hand() -> None:
    class Net:
        spec = _session().emu_spec
        target = "p4switch"
        priority = {"none": 4}

    s = FabricSession.over(Net(), None)
    assert (s.tdf, s.loop_names, s.units) == (1.0, (), None)
    assert s.emulated_scheme("flowlet").timeout_us == 100   # TDF 1: as the scheme states


def test_the_controllers_automatic_loops() -> None:
    from controller.fabric import auto_loops

    assert auto_loops("ecmp") == ("failure", "reconcile")
    assert auto_loops("ecmp", "wam") == ("failure", "reconcile", "wam")
    assert auto_loops("wam", have=("reconcile",)) == ("reconcile", "wam")
    assert auto_loops("wam", have=("reconcile", "wam")) == ("reconcile", "wam")
