"""A BMv2 user's pipeline push: p4c-bm2-ss's JSON inside PI's P4DeviceConfig with p4c's
P4Info, as the P4 tutorials' client sends it, to a real p4switch (memory ports); entries
written with p4c's ids forward packets; a bad JSON is refused, state unchanged. Skips without
p4c-bm2-ss."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2
from runtime_client import RawClient

from p4switch import pi_device_config, programs
from p4switch.ports import MemoryPort
from p4switch.switch import Switch
from tests.netutil import serve_free

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "stf" / "programs" / "ipv4_lpm.p4"
P4C = shutil.which("p4c-bm2-ss")

pytestmark = pytest.mark.skipif(P4C is None, reason="p4c-bm2-ss not on PATH")


@pytest.fixture(scope="module")
def p4c_output(tmp_path_factory) -> tuple[bytes, p4info_pb2.P4Info]:
    out = tmp_path_factory.mktemp("p4c")
    env = dict(os.environ)
    inc = Path(P4C).resolve().parents[1] / "share" / "p4c" / "p4include"
    env.setdefault("P4C_16_INCLUDE_PATH", str(inc))
    subprocess.run([P4C, "--p4runtime-files", str(out / "p.p4info.txtpb"), "-o",
                    str(out / "p.json"), str(PROGRAM)], check=True, env=env,
                   capture_output=True, timeout=180)
    info = text_format.Parse((out / "p.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    return (out / "p.json").read_bytes(), info


@pytest.fixture
def switch():
    sw = Switch(device_id=1, cpu_port=None)
    ports = {n: sw.add_port(MemoryPort(n)) for n in (1, 2)}
    server, addr = serve_free(sw)
    sw.start()
    client = RawClient(addr)
    client.arbitrate()
    try:
        yield sw, ports, client
    finally:
        client.close()
        server.stop(0).wait()
        sw.stop(log_stats=False)


def _ipv4(dst: bytes, ttl: int = 64) -> bytes:
    hdr = bytearray(bytes.fromhex("45000014000100004011") + b"\x00\x00" + bytes(4) + dst)
    hdr[8] = ttl
    s = sum(int.from_bytes(hdr[i:i + 2], "big") for i in range(0, 20, 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    hdr[10:12] = (~s & 0xFFFF).to_bytes(2, "big")
    return bytes(6) + bytes.fromhex("000000000001") + b"\x08\x00" + bytes(hdr)


def _lpm_entry(info: p4info_pb2.P4Info, port: int) -> p4runtime_pb2.Update:
    table = next(t for t in info.tables if t.preamble.name == "MyIngress.ipv4_lpm")
    action = next(a for a in info.actions if a.preamble.name == "MyIngress.forward")
    upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = upd.entity.table_entry
    te.table_id = table.preamble.id  # p4c's ids, as the client has them
    m = te.match.add(field_id=table.match_fields[0].id)
    m.lpm.value, m.lpm.prefix_len = bytes([10, 0, 0, 0]), 8
    te.action.action.action_id = action.preamble.id
    by_name = {p.name: p.id for p in action.params}
    for name, value in (("dmac", b"\x02" * 6), ("smac", b"\x04" * 6),
                        ("port", port.to_bytes(2, "big"))):
        te.action.action.params.add(param_id=by_name[name], value=value)
    return upd


def test_wrapped_bmv2_json_with_p4c_p4info_forwards(switch, p4c_output):
    sw, ports, client = switch
    data, info = p4c_output
    client.set_pipeline(info, pi_device_config.wrap(data))  # what the tutorials' utils send
    assert {t.cp_name for t in sw.program.all_tables()} >= {"MyIngress.ipv4_lpm"}
    client.write(_lpm_entry(info, 2))
    ports[1].feed(_ipv4(bytes([10, 1, 2, 3])))
    out = ports[2].wait_sent(1)
    assert len(out) == 1 and out[0][:6] == b"\x02" * 6 and out[0][22] == 63  # TTL - 1


def test_raw_bmv2_json_is_accepted_too_and_p4info_read_back(switch, p4c_output):
    sw, _, client = switch
    data, info = p4c_output
    client.set_pipeline(info, data)  # simple_switch_grpc's own form: the JSON bytes
    got = client.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1))
    assert got.config.p4info == info and got.config.p4_device_config == data


def test_bad_json_is_invalid_argument_and_keeps_the_running_program(switch, p4c_output):
    sw, _, client = switch
    data, info = p4c_output
    client.set_pipeline(info, data)
    client.write(_lpm_entry(info, 2))
    running = sw.program
    broken = data.replace(b'"mark_to_drop"', b'"teleport"')
    with pytest.raises(grpc.RpcError) as e:
        client.set_pipeline(info, pi_device_config.wrap(broken))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "p4.tmp.P4DeviceConfig.device_data: bmv2.json: actions[" in e.value.details()
    assert "'teleport' is not supported" in e.value.details()
    assert sw.program is running
    read = p4runtime_pb2.Entity()
    read.table_entry.table_id = next(t.preamble.id for t in info.tables)
    assert len(client.read(read)) == 1


def test_cli_program_file_may_be_the_json(tmp_path, p4c_output):
    f = tmp_path / "prog.json"
    f.write_bytes(p4c_output[0])
    assert "MyIngress.ipv4_lpm" in {t.cp_name for t in programs.load_program(f).all_tables()}
