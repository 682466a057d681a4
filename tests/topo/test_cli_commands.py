"""topo.cli.FabricCLI without a fabric: its commands driven on a FabricSession that was never
started (no root), over a fake controller. What a user reads back is in fabric units (µs since
the fabric came up, ÷ TDF), and a bad command line is one line of error, never a traceback."""

from __future__ import annotations

import cmd
from pathlib import Path
from typing import Any

import pytest

from controller.fabric import ControlEvent
from topo.cli import FabricCLI
from topo.session import FabricEvent, FabricSession

TDF = 2000.0


class FakeController:
    """What the CLI's commands reach of a FabricController, with no switch behind it."""

    def __init__(self) -> None:
        self.events: list[ControlEvent] = []
        self.loop_names: tuple[str, ...] = ("failure", "reconcile")
        self.scheme: Any = None
        self.group_schemes: dict[Any, Any] = {}
        self.auto_loops = True

    def set_scheme(self, built: Any, target: Any = None) -> None:
        self.scheme = built

    def set_loops(self, loops: tuple[str, ...]) -> None:
        self.loop_names = loops


@pytest.fixture
def session() -> FabricSession:
    s = FabricSession("leafspine", leaves=2, spines=2, hosts_per_leaf=2, tdf=TDF)
    s.ctl = FakeController()
    return s


def cli_of(session: FabricSession) -> FabricCLI:
    """A FabricCLI whose command loop never runs (Mininet's __init__ would start it)."""
    cli = FabricCLI.__new__(FabricCLI)
    cli.session, cli._last_links, cli.mn = session, None, {}
    cmd.Cmd.__init__(cli)
    return cli


def run(cli: FabricCLI, line: str, capsys: pytest.CaptureFixture) -> list[str]:
    cli.onecmd(line)
    out = capsys.readouterr()
    assert not out.err, out.err
    return out.out.strip().splitlines()


def test_events_are_in_fabric_time_since_the_fabric_came_up(
        session: FabricSession, capsys: pytest.CaptureFixture) -> None:
    session.ctl.events += [ControlEvent(session.t_start + 0.5, "wam", "leaf1", "weights 1:3"),
                           ControlEvent(session.t_start + 2.0, "failure", None, "leaf1-spine2 down")]
    evs = session.events()
    assert evs == [FabricEvent(0.5 / TDF * 1e6, "wam", "leaf1", "weights 1:3"),
                   FabricEvent(2.0 / TDF * 1e6, "failure", None, "leaf1-spine2 down")]
    assert session.events(1) == evs[1:] and session.events(0) == []
    lines = run(cli_of(session), "events", capsys)
    assert lines == ["250.0 µs wam leaf1: weights 1:3", "1000.0 µs failure fabric: leaf1-spine2 down"]
    assert run(cli_of(session), "events 1", capsys) == lines[1:]



@pytest.mark.parametrize("line, message", [
    ("lb nosuch", "unknown scheme 'nosuch'"),
    ("lb flowlet gap=abc", "'abc' is not a time"),
    ("lb flowlet gap=-5us", "'-5us' is not a time"),
    ("lb flowlet =5", "expected name=value"),
    ("lb ecmp seed=abc", "'abc' is not a number"),
    ("lb ecmp leaf9", "no switch 'leaf9'"),
    ("lb ecmp leaf1 x", "group must be a number"),
    ("loops bogus", "unknown loop(s) bogus"),
    ("collective nosuch", "unknown schedule 'nosuch'"),
    ("collective ring_allreduce 12XB", "bad size '12XB'"),
    ("collective ring_allreduce 64KB hosts=h99", "unknown host(s): h99"),
    ("collective ring_allreduce 64KB hosts=h1", "at least 2 distinct hosts"),
    ("collective ring_allreduce 64KB window=x", "'x' is not a number"),
    ("collective ring_allreduce 64KB window=0", "window must be a whole number >= 1"),
    ("collective ring_allreduce 64KB mss=1.5", "mss must be a whole number >= 1"),
    ("collective ring_allreduce 64KB rto=soon", "'soon' is not a time"),
    ("collective ring_allreduce 64KB rto=0", "rto must be > 0"),
    ("collective ring_allreduce 64KB rate=fast", "'fast' is not a rate"),
    ("collective ring_allreduce 64KB seed=x", "'x' is not a number"),
    ("collective ring_allreduce 64KB foo=1", "unknown option 'foo'"),
    ("events x", "'x' is not a number of events"),
    ("counters nosuch", "no switch 'nosuch'"),
])
def test_a_bad_command_is_one_line(session: FabricSession, capsys: pytest.CaptureFixture,
                                   line: str, message: str) -> None:
    out = run(cli_of(session), line, capsys)
    assert len(out) == 1 and out[0].startswith("error: ") and message in out[0], out


def test_lb_writes_the_gap_dilated_and_says_so(session: FabricSession,
                                               capsys: pytest.CaptureFixture) -> None:
    out = run(cli_of(session), "lb flowlet gap=20us", capsys)
    assert session.ctl.scheme.timeout_us == 20 * TDF
    assert out == [f"scheme flowlet set on every group; timeout_us 20 µs fabric = "
                   f"{20 * TDF:g} µs written"]


@pytest.mark.parametrize("command, words", [
    ("collective", ["fabric µs", "hosts=", "window=", "mss=", "rto=", "rate=", "seed="]),
    ("lb", ["fabric units", "gap=50us", "dilated"]),
    ("events", ["fabric time", "TDF"]),
    ("queues", ["fabric µs"]),
    ("links", ["fabric units"]),
    ("loops", ["failure, reconcile, wam"]),
    ("fabric", ["TDF"]),
])
def test_help_explains_the_fabric_units(session: FabricSession, capsys: pytest.CaptureFixture,
                                        command: str, words: list[str]) -> None:
    out = run(cli_of(session), f"help {command}", capsys)
    assert out[0].startswith(command) and not any(x.startswith(" ") for x in out), out
    text = " ".join(out)
    for w in words:
        assert w in text, (w, text)


def test_help_lists_the_fabric_commands_and_their_units(
        session: FabricSession, capsys: pytest.CaptureFixture) -> None:
    text = "\n".join(run(cli_of(session), "help", capsys))
    assert "collective" in text and "events" in text and "pingall" in text   # Mininet's too
    assert "fabric time (wall time / TDF)" in text and "times x TDF" in text


# ---- a collective's seed: the schedule's draws and the switches' random(), as the runner's ----
def test_a_collective_seeds_the_data_plane_before_it_runs(
        session: FabricSession, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture) -> None:
    from topo.session import RunSamples

    calls: list[tuple[str, Any]] = []
    monkeypatch.setattr(session, "seed_data_plane", lambda seed: calls.append(("seed", seed)))
    monkeypatch.setattr(session, "run_schedule",
                        lambda sched, *a, **k: calls.append(("run", sched)) or RunSamples())
    session.collective("moe_alltoall", "16KB", seed=7, out_dir=tmp_path / "a")
    assert [c[0] for c in calls] == ["seed", "run"] and calls[0][1] == 7
    # the schedule drawn from the same seed as the runner's (WorkloadConfig.schedule_for)
    from experiments.config import WorkloadConfig
    from traffic.schedules import parse_size

    w = WorkloadConfig(name="moe", schedule="moe_alltoall", size=parse_size("16KB"))
    assert calls[1][1].programs == w.schedule_for(4, seed=7).programs
    assert calls[1][1].programs != w.schedule_for(4, seed=8).programs   # the seed does draw
    session.net = type("Net", (), {"run_dir": tmp_path})()
    cli_of(session).onecmd("collective ring_allreduce 16KB seed=3")
    assert calls[2] == ("seed", 3), capsys.readouterr().out
    with pytest.raises(ValueError, match="seed must be a whole number"):
        session.collective("ring_allreduce", "16KB", seed=-1)


def test_seed_data_plane_seeds_every_p4switch_from_the_seed_and_its_device_id(
        session: FabricSession, monkeypatch: pytest.MonkeyPatch) -> None:
    import p4switch

    seeded: dict[str, int] = {}

    class P4Switch:   # the name the session looks for; other targets have no seedable random
        def __init__(self, name: str, device_id: int) -> None:
            self.control_socket = f"/run/{name}.sock"
            self.spec = type("Spec", (), {"device_id": device_id})()

    class Client:
        def __init__(self, sock: str) -> None:
            self.sock = sock

        def __enter__(self) -> Client:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def seed_random(self, seed: int) -> bool:
            seeded[self.sock] = seed
            return True

    class Other:
        control_socket = "/run/bmv2.sock"

    monkeypatch.setattr(p4switch, "ControlClient", Client)
    session.net = type("Net", (), {"switches": [P4Switch("s1", 1), P4Switch("s2", 2),
                                                Other()]})()
    session.seed_data_plane(5)
    assert seeded == {"/run/s1.sock": 5001, "/run/s2.sock": 5002}


def test_a_session_over_a_running_fabric_counts_from_the_controllers_start(
        session: FabricSession) -> None:
    ctl = FakeController()
    ctl.events += [ControlEvent(1000.0, "controller", None, "start"),
                   ControlEvent(1001.0, "wam", "leaf1", "weights 1:3")]
    s = FabricSession.over(type("Net", (), {"spec": session.emu_spec})(), ctl, tdf=TDF)
    assert [e.time_us for e in s.events()] == [0.0, 1.0 / TDF * 1e6]


def test_a_runs_summary_states_only_what_was_measured(tmp_path: Path) -> None:
    from topo.session import CollectiveRun

    r = CollectiveRun("ring_allreduce", "64KB", ["h1", "h2"], ok=True, cct_us=812.5,
                      valid=True, reasons=(), tdf=TDF, retransmissions=0, out_dir=tmp_path)
    assert r.summary() == ("ring_allreduce 64KB on 2 hosts: CCT 812.5 µs (fabric time, TDF "
                           "2000; ok; 0 retransmissions)\nvalid: the emulation kept up")
    r.qdepth_max = 12
    assert "; 0 retransmissions; deepest queue 12 packets)" in r.summary()
