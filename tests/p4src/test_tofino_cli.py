"""``python -m controller.tofino``: one Tofino switch's state computed, encoded with the TNA
P4Info and written through the controller's P4Runtime client (a recording stand-in here: no
Tofino on CI); bad input is one line."""

from __future__ import annotations

from pathlib import Path

import p4contract as pc
import pytest
from google.protobuf import text_format

from controller import tofino as cli

TNA = Path(__file__).resolve().parents[2] / "p4src" / "tna" / "fabric.p4"


@pytest.fixture(scope="module")
def p4info_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tofino") / "p4info.txtpb"
    path.write_text(text_format.MessageToString(pc.to_p4info(pc.from_tna_source(TNA))))
    return path


class Recorder:
    calls: list[tuple[str, object]] = []

    def __init__(self, name: str, addr: str, device_id: int) -> None:
        Recorder.calls = [("new", (name, addr, device_id))]

    def connect(self) -> None:
        Recorder.calls.append(("connect", None))

    def write(self, updates) -> None:
        Recorder.calls.append(("write", list(updates)))

    def close(self) -> None:
        Recorder.calls.append(("close", None))


def test_dry_run_counts_what_it_would_write(p4info_file, capsys):
    assert cli.main(["--switch", "edge1", "--p4info", str(p4info_file), "--scheme", "ecmp",
                     "--dry-run"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("edge1: would write ") and "action_profile_group" in out


def test_writes_through_the_client(p4info_file):
    args = cli.parser().parse_args(["--switch", "agg1", "--p4info", str(p4info_file),
                                    "--addr", "sw:9559", "--device-id", "3", "--scheme", "wam",
                                    "--port-map", "1=128,2=136,3=144,4=152"])
    line = cli.run(args, connect=Recorder)
    assert [c for c, _ in Recorder.calls] == ["new", "connect", "write", "close"]
    assert Recorder.calls[0][1] == ("agg1", "sw:9559", 3)
    updates = Recorder.calls[2][1]
    assert f"wrote {len(updates)} updates" in line
    ports = {p.value for u in updates if u.entity.HasField("table_entry")
             for p in u.entity.table_entry.action.action.params}
    assert updates and ports


@pytest.mark.parametrize(("argv", "needle"), [
    (["--switch", "nope"], "no switch 'nope'"),
    (["--switch", "edge1"], "--addr is needed"),
    (["--switch", "edge1", "--dry-run", "--port-map", "1=128"], "no device port"),
])
def test_bad_input_is_one_line(p4info_file, capsys, argv, needle):
    assert cli.main([*argv, "--p4info", str(p4info_file)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


def test_unreadable_p4info_is_one_line(tmp_path, capsys):
    bad = tmp_path / "x.txtpb"
    bad.write_text("tables { this is not a p4info")
    assert cli.main(["--switch", "edge1", "--p4info", str(bad), "--dry-run"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read P4Info" in err[0]


def test_bad_port_map_is_a_usage_error(p4info_file, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--switch", "edge1", "--p4info", str(p4info_file), "--port-map", "1:128"])
    assert e.value.code == 2
    assert "SPEC_PORT=DEV_PORT" in capsys.readouterr().err
