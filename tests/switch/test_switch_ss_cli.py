"""``p4switch-ss``: simple_switch_grpc's command line mapped onto p4switch's (no root needed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4switch import ss
from tests.netutil import free_port

REPO = Path(__file__).resolve().parents[2]


def test_entry_point_is_installed_under_its_own_name():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["p4switch-ss"] == "p4switch.ss:main"


def test_tutorial_style_command_line_maps_onto_p4switch():
    """What the P4 tutorials' P4RuntimeSwitch builds (its flags, in its order: the nanomsg
    log always, the Thrift port, then the target options after ``--``)."""
    argv = ["-i", "1@s1-eth1", "-i", "2@s1-eth2", "--pcap", "pcaps", "--nanolog",
            "ipc:///tmp/bm-3-log.ipc", "--device-id", "3", "--no-p4", "--log-console",
            "--thrift-port", "9090", "--", "--grpc-server-addr", "0.0.0.0:50051",
            "--cpu-port", "255", "--priority-queues", "2"]
    out, notes, _ = ss.translate(argv)
    assert out == ["--no-p4", "-i", "1@s1-eth1", "-i", "2@s1-eth2", "--device-id", "3",
                   "--grpc-server-addr", "0.0.0.0:50051", "--cpu-port", "255",
                   "--priority-queues", "2", "--pcap", "pcaps", "--pcap-names", "interface",
                   "--log-level", "trace"]
    assert [n.split(":")[0].split()[0] for n in notes] == ["p4switch", "--nanolog"]
    assert "not Thrift" in notes[0]


@pytest.mark.parametrize("argv, expect", [
    (["prog.json"], ["prog.json", "--device-id", "0", "--grpc-server-addr", "0.0.0.0:9559",
                     "--log-level", "warn"]),
    (["--pcap", "prog.json"], ["prog.json", "--device-id", "0", "--grpc-server-addr",
                               "0.0.0.0:9559", "--pcap", ".", "--pcap-names", "interface",
                               "--log-level", "warn"]),
    (["--no-p4", "--priority-queues", "2", "--log-file", "x.log", "-L", "info"],
     ["--no-p4", "--device-id", "0", "--grpc-server-addr", "0.0.0.0:9559",
      "--priority-queues", "2", "--log-level", "info"]),
    (["--no-p4", "--", "--priority-queues", "3", "--drop-port", "500"],
     ["--no-p4", "--device-id", "0", "--grpc-server-addr", "0.0.0.0:9559",
      "--drop-port", "500", "--priority-queues", "3", "--log-level", "warn"]),
])
def test_mapping(argv, expect):
    assert ss.translate(argv)[0] == expect


@pytest.mark.parametrize("argv, message", [
    ([], "a JSON or P4 program is required"),
    (["prog.json", "--no-p4"], "not both"),
    (["--no-p4", "-i", "x@veth0"], "not an integer"),
    (["--no-p4", "-i", "1@a", "-i", "1@b"], "port 1 given twice"),
    (["--no-p4", "-i", "5@a", "--", "--cpu-port", "5"], "port 5 is the CPU port"),
    (["--no-p4", "--", "--cpu-port", "0"], "out of range 1..511"),
    (["--no-p4", "--use-files", "0"], "--use-files is not supported"),
    (["--no-p4", "--", "--grpc-server-ssl"], "--grpc-server-ssl is not supported"),
    (["--no-p4", "--", "--load-modules", "x.so"], "--load-modules"),
    (["--no-p4", "--bogus"], "unrecognized arguments: --bogus"),
    (["--no-p4", "--", "--bogus"], "unrecognized arguments: --bogus"),
    (["--no-p4", "--log-file", "/nonexistent/dir/x.log"], "--log-file"),
])
def test_bad_arguments_get_one_line_and_status_2(argv, message, capsys):
    assert ss.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("p4switch-ss") and message in err[0]


def test_version_and_json_version(capsys):
    assert ss.main(["--json-version"]) == 0
    assert capsys.readouterr().out.strip() == ss.JSON_VERSION
    assert ss.main(["-v"]) == 0
    assert "p4switch-ss" in capsys.readouterr().out


def test_starts_with_no_p4_serves_p4runtime_and_stops_on_sigterm(tmp_path):
    """The real process: ``--no-p4 ... -- --grpc-server-addr`` serves Capabilities; the
    Thrift note is printed; the log file gets the switch's lines; SIGTERM ends it with 0."""
    port = free_port()
    log = tmp_path / "ss.log"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "p4switch.ss", "--no-p4", "--thrift-port", "9090",
         "--log-file", str(log), "--log-flush", "-L", "info", "--",
         "--grpc-server-addr", f"127.0.0.1:{port}", "--cpu-port", "255"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        deadline = time.monotonic() + 60
        while True:
            try:
                caps = stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=2)
                break
            except grpc.RpcError:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "p4switch-ss did not start serving"
                time.sleep(0.2)
        assert caps.p4runtime_api_version
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "note: p4switch serves P4Runtime only, not Thrift" in err
    assert f"P4Runtime server listening on 127.0.0.1:{port}" in log.read_text()


def test_positional_bmv2_json_program_is_served(tmp_path):
    """``p4switch-ss prog.json``: the JSON (here a hand-written one) is recognised by content
    and its P4Info served at once, as simple_switch_grpc serves a JSON given at start-up."""
    import json

    sys.path.insert(0, str(REPO / "tests" / "bmv2json"))
    from bmv2json_docs import doc

    prog = tmp_path / "prog.json"
    prog.write_text(json.dumps(doc()))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "p4switch.ss", str(prog), "--",
                             "--grpc-server-addr", f"127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=0)
        deadline = time.monotonic() + 60
        while True:
            try:
                got = stub.GetForwardingPipelineConfig(req, timeout=2)
                break
            except grpc.RpcError:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "p4switch-ss did not start serving"
                time.sleep(0.2)
        assert [t.preamble.name for t in got.config.p4info.tables] == ["MyIngress.l2"]
        assert got.config.p4_device_config == prog.read_bytes()  # pushable back as it is
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_bad_json_program_is_one_located_line(tmp_path, capsys):
    prog = tmp_path / "prog.json"
    prog.write_text('{"header_types": [], "headers": [], "pipelines": []}')
    assert ss.main([str(prog), "--", "--grpc-server-addr", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"{prog}: ") and "error: " in err[-1]


def test_pcap_files_are_named_after_the_interfaces_as_bmv2_names_them(tmp_path):
    from p4switch.ports import MemoryPort, PcapNaming
    from p4switch.switch import Switch

    sw = Switch(pcap_dir=tmp_path, pcap_naming=PcapNaming.INTERFACE)
    sw.add_port(MemoryPort(1, "s1-eth1"))
    sw.stop(log_stats=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s1-eth1_in.pcap", "s1-eth1_out.pcap"]
