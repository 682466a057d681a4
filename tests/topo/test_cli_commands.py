"""topo.cli.FabricCLI without a fabric: its commands driven on a FabricSession that was never
started (no root), over a fake controller. What a user reads back is in fabric units (µs since
the fabric came up, ÷ TDF), and a bad command line is one line of error, never a traceback."""

from __future__ import annotations

import cmd
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
