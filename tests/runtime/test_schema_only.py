"""The schema-only P4Runtime server (p4switch/runtime/schema_only.py) with the TNA program's
P4Info: writes are checked against it with the spec's status codes (ids, widths, action scopes,
action-profile references, sizes), accepted state is read back, pipeline pushes follow the
spec (a device config resets, a P4Info-only update keeps), and ``p4switch --schema-only``
serves it from the command line."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2
from runtime_client import RawClient
from test_errors import write_codes

from p4switch import P4InfoIndex
from p4switch.runtime.schema_only import SchemaPipeline, start_schema_server
from tests.netutil import free_port
from tests.p4src import p4contract as pc

ROOT = Path(__file__).resolve().parents[2]
U = p4runtime_pb2.Update
C = code_pb2


@pytest.fixture(scope="module")
def info() -> p4info_pb2.P4Info:
    return pc.to_p4info(pc.from_tna_source(ROOT / "p4src" / "tna" / "fabric.p4"))


@pytest.fixture
def server(info) -> Iterator[tuple[object, RawClient]]:
    addr = f"127.0.0.1:{free_port()}"
    srv = start_schema_server(info, addr, device_id=1, max_workers=4)
    client = RawClient(addr)
    assert client.arbitrate().arbitration.status.code == C.OK
    yield srv, client
    client.close()
    srv.stop(0).wait()


class Ids:
    def __init__(self, info: p4info_pb2.P4Info) -> None:
        self.ix = P4InfoIndex.of(info)

    def table(self, name: str) -> int:
        return self.ix.by_name["tables"][f"MyIngress.{name}"].id

    def action(self, name: str) -> int:
        return self.ix.by_name["actions"][f"MyIngress.{name}"].id

    @property
    def selector(self) -> int:
        return self.ix.by_name["action_profiles"]["MyIngress.lb_selector"].id


def member(ids: Ids, mid: int, port: bytes = b"\x05", action: str = "set_member",
           utype: int = U.INSERT) -> U:
    u = U(type=utype)
    m = u.entity.action_profile_member
    m.action_profile_id, m.member_id = ids.selector, mid
    m.action.action_id = ids.action(action)
    if action == "set_member":
        m.action.params.add(param_id=1, value=port)          # port: 9 bits
        m.action.params.add(param_id=2, value=b"\x02\x00\x00\x00\x00\x01")
    return u


def group(ids: Ids, gid: int, members: list[int], utype: int = U.INSERT) -> U:
    u = U(type=utype)
    g = u.entity.action_profile_group
    g.action_profile_id, g.group_id, g.max_size = ids.selector, gid, 64
    for mid in members:
        g.members.add(member_id=mid, weight=1)
    return u


def select(ids: Ids, gid: int, key: int = 1, utype: int = U.INSERT) -> U:
    u = U(type=utype)
    te = u.entity.table_entry
    te.table_id = ids.table("lb_select")
    te.match.add(field_id=1).exact.value = bytes([key])
    te.action.action_profile_group_id = gid
    return u


def test_action_profile_semantics_with_the_specs_codes(server, info):
    srv, client = server
    ids = Ids(info)
    assert write_codes(client, member(ids, 1, port=b"\x02\x00")) == [C.INVALID_ARGUMENT]  # 512
    assert write_codes(client, member(ids, 1, action="set_nhop")) == [C.INVALID_ARGUMENT]
    assert write_codes(client, member(ids, 1, action="lb_member_miss")) == [C.INVALID_ARGUMENT]
    assert write_codes(client, group(ids, 1, [1])) == [C.NOT_FOUND]
    assert write_codes(client, select(ids, 1)) == [C.NOT_FOUND]
    assert write_codes(client, member(ids, 1), member(ids, 2), group(ids, 1, [1, 2]),
                       select(ids, 1)) == [C.OK] * 4
    assert write_codes(client, member(ids, 1)) == [C.ALREADY_EXISTS]
    assert write_codes(client, member(ids, 2, utype=U.DELETE)) == [C.FAILED_PRECONDITION]
    assert write_codes(client, group(ids, 1, [1], utype=U.DELETE)) == [C.FAILED_PRECONDITION]
    direct = select(ids, 0, key=2)
    direct.entity.table_entry.action.action.action_id = ids.action("set_member")
    assert write_codes(client, direct) == [C.INVALID_ARGUMENT]  # an indirect table
    # shrink the group, then the member can go; state is what was accepted
    assert write_codes(client, group(ids, 1, [1], utype=U.MODIFY),
                       member(ids, 2, utype=U.DELETE)) == [C.OK, C.OK]
    ent = p4runtime_pb2.Entity()
    ent.action_profile_member.action_profile_id = ids.selector
    assert [e.action_profile_member.member_id for e in client.read(ent)] == [1]
    ent = p4runtime_pb2.Entity()
    ent.action_profile_group.action_profile_id = ids.selector
    [g] = client.read(ent)
    assert [m.member_id for m in g.action_profile_group.members] == [1]
    ent = p4runtime_pb2.Entity()
    ent.table_entry.table_id = ids.table("lb_select")
    [e] = client.read(ent)
    assert e.table_entry.action.action_profile_group_id == 1
    pipe = srv.p4runtime.switch.pipeline
    assert isinstance(pipe, SchemaPipeline)
    assert set(pipe.profiles["MyIngress.lb_selector"].members) == {1}


def test_tables_counters_and_registers(server, info):
    _srv, client = server
    ids = Ids(info)

    def lb_group(gid: int) -> U:
        u = U(type=U.INSERT)
        te = u.entity.table_entry
        te.table_id = ids.table("lb_group")
        te.match.add(field_id=1).exact.value = gid.to_bytes(2, "big")
        te.action.action.action_id = ids.action("lb_ecmp")
        te.action.action.params.add(param_id=1, value=b"\x07")
        return u

    assert write_codes(client, *(lb_group(g) for g in range(256))) == [C.OK] * 256
    assert write_codes(client, lb_group(256)) == [C.RESOURCE_EXHAUSTED]  # size 256
    miss = lb_group(0)
    miss.type = U.MODIFY
    del miss.entity.table_entry.action.action.params[:]
    miss.entity.table_entry.action.action.action_id = ids.action("lb_group_miss")
    assert write_codes(client, miss) == [C.PERMISSION_DENIED]  # @defaultonly
    bad = lb_group(300)
    bad.entity.table_entry.table_id = 0x02FFFFFF
    assert write_codes(client, bad) == [C.NOT_FOUND]
    reg = ids.ix.by_name["registers"]["MyIngress.flowlet_id"]  # bit<16>
    u = U(type=U.MODIFY)
    u.entity.register_entry.register_id = reg.id
    u.entity.register_entry.index.index = 3
    u.entity.register_entry.data.bitstring = b"\x01\x00\x00"
    assert write_codes(client, u) == [C.INVALID_ARGUMENT]
    u.entity.register_entry.data.bitstring = b"\xbe\xef"
    assert write_codes(client, u) == [C.OK]
    ent = p4runtime_pb2.Entity()
    ent.register_entry.register_id, ent.register_entry.index.index = reg.id, 3
    assert client.read(ent)[0].register_entry.data.bitstring == b"\xbe\xef"
    ctr = ids.ix.by_name["counters"]["MyIngress.drop_ctr"]
    ent = p4runtime_pb2.Entity()
    ent.counter_entry.counter_id, ent.counter_entry.index.index = ctr.id, ctr.size
    with pytest.raises(grpc.RpcError) as e:
        client.read(ent)
    assert e.value.code() == grpc.StatusCode.OUT_OF_RANGE


def test_pipeline_config_follows_the_spec(server, info):
    _srv, client = server
    ids = Ids(info)
    assert write_codes(client, member(ids, 1)) == [C.OK]
    client.set_pipeline(info, b"")              # P4Info only: the running device, state kept
    ent = p4runtime_pb2.Entity()
    ent.action_profile_member.action_profile_id = ids.selector
    assert len(client.read(ent)) == 1
    client.set_pipeline(info, b"tofino binary")  # a device config: forwarding state cleared
    assert client.read(ent) == []
    other = p4info_pb2.P4Info()
    other.CopyFrom(info)
    other.tables[0].match_fields[0].bitwidth += 1
    with pytest.raises(grpc.RpcError) as e:
        client.set_pipeline(other, b"x")
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_packet_out_is_checked_then_dropped(server, info):
    srv, client = server
    ix = P4InfoIndex.of(info)
    port = next(m for m in ix.packet_out if m.name == "egress_port")
    req = p4runtime_pb2.StreamMessageRequest()
    req.packet.payload = b"\x00" * 60
    req.packet.metadata.add(metadata_id=port.id, value=b"\x05")
    client.send(req)
    bad = p4runtime_pb2.StreamMessageRequest()
    bad.packet.payload = b"\x00" * 60
    bad.packet.metadata.add(metadata_id=99, value=b"\x05")
    client.send(bad)
    err = client.next_message("error")
    assert err.error.canonical_code == C.INVALID_ARGUMENT
    assert srv.p4runtime.switch.packets_out == 1


def test_cli_serves_a_p4info(info, tmp_path):
    path = tmp_path / "p4info.txtpb"
    path.write_text(text_format.MessageToString(info))
    addr = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "p4switch", "--schema-only", str(path),
                             "--grpc-server-addr", addr, "--device-id", "1"],
                            stderr=subprocess.PIPE, text=True)
    try:
        ids = Ids(info)
        deadline = time.monotonic() + 60
        while True:  # up once a channel to it is ready
            with grpc.insecure_channel(addr) as ch:
                try:
                    grpc.channel_ready_future(ch).result(timeout=2)
                    break
                except grpc.FutureTimeoutError:
                    assert proc.poll() is None and time.monotonic() < deadline, "no server"
        client = RawClient(addr)
        assert client.arbitrate().arbitration.status.code == C.OK
        assert write_codes(client, member(ids, 3)) == [C.OK]
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    bad = subprocess.run([sys.executable, "-m", "p4switch", "--schema-only",
                          str(tmp_path / "none.txtpb")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "cannot read P4Info" in bad.stderr
