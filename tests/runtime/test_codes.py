"""The last status-code deviations of issue 12 (each answered wrongly before): pipeline-config
actions without/with a config, a bool written to a bit<W> register, negative indexes; and
wildcard (index unset) MODIFY of counters, meters and registers, which the spec allows."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from runtime_client import sample_bundle_bytes
from test_errors import ids, register_update, write_codes

from p4switch.pipeline import api

U = p4runtime_pb2.Update
W = p4runtime_pb2.WriteRequest
SetReq = p4runtime_pb2.SetForwardingPipelineConfigRequest
REG = "MyIngress.flowlet_ts"


@pytest.fixture
def i(sample_p4info):
    return ids(sample_p4info)


def set_config(client, action, cfg=None):
    req = SetReq(device_id=1, action=action)
    req.election_id.low = 1
    if cfg is not None:
        req.config.CopyFrom(cfg)
    try:
        client.stub.SetForwardingPipelineConfig(req)
        return grpc.StatusCode.OK
    except grpc.RpcError as e:
        return e.code()


@pytest.mark.parametrize("action", [SetReq.VERIFY, SetReq.VERIFY_AND_SAVE,
                                    SetReq.VERIFY_AND_COMMIT, SetReq.RECONCILE_AND_COMMIT])
@pytest.mark.parametrize("cfg", ["unset", "empty"])
def test_verify_and_reconcile_need_a_config(loaded, client, action, cfg):
    pipe = loaded.switch.pipeline
    empty = p4runtime_pb2.ForwardingPipelineConfig() if cfg == "empty" else None
    assert set_config(client, action, empty) == grpc.StatusCode.INVALID_ARGUMENT
    assert loaded.switch.pipeline is pipe and loaded.service.saved is None


def test_commit_takes_no_config(loaded, client, sample_p4info):
    cfg = p4runtime_pb2.ForwardingPipelineConfig(p4info=sample_p4info,
                                                 p4_device_config=sample_bundle_bytes())
    assert set_config(client, SetReq.VERIFY_AND_SAVE, cfg) == grpc.StatusCode.OK
    pipe = loaded.switch.pipeline
    assert set_config(client, SetReq.COMMIT, cfg) == grpc.StatusCode.INVALID_ARGUMENT
    assert loaded.switch.pipeline is pipe
    assert set_config(client, SetReq.COMMIT) == grpc.StatusCode.OK
    assert loaded.switch.pipeline is not pipe


def test_bool_into_a_bit_register_is_invalid(loaded, client, i):
    upd = register_update(i, 3, b"\x01")
    upd.entity.register_entry.data.ClearField("bitstring")
    upd.entity.register_entry.data.bool = True
    assert write_codes(client, upd) == [code_pb2.INVALID_ARGUMENT]
    assert loaded.pipeline.registers[REG][3] == 0


def test_negative_index_is_invalid_and_past_the_end_out_of_range(loaded, client, i):
    assert write_codes(client, register_update(i, -1, b"\x01")) == [code_pb2.INVALID_ARGUMENT]
    assert write_codes(client, register_update(i, 16, b"\x01")) == [code_pb2.OUT_OF_RANGE]
    cnt = U(type=U.MODIFY)
    cnt.entity.counter_entry.counter_id = i["port_counter"]
    cnt.entity.counter_entry.index.index = -3
    assert write_codes(client, cnt) == [code_pb2.INVALID_ARGUMENT]
    with pytest.raises(grpc.RpcError) as ei:
        client.read(p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry(
            register_id=i["flowlet_ts"], index=p4runtime_pb2.Index(index=-1))))
    assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def wildcard(upd: p4runtime_pb2.Update, kind: str) -> p4runtime_pb2.Update:
    getattr(upd.entity, kind).ClearField("index")
    return upd


def test_wildcard_register_counter_and_meter_writes_set_every_cell(loaded, client, i):
    pipe = loaded.pipeline
    client.write(wildcard(register_update(i, 0, b"\x2a"), "register_entry"))
    assert pipe.registers[REG] == [0x2A] * 16
    cnt = U(type=U.MODIFY)
    cnt.entity.counter_entry.counter_id = i["port_counter"]
    cnt.entity.counter_entry.data.packet_count = 7
    cnt.entity.counter_entry.data.byte_count = 700
    client.write(cnt)
    assert set(pipe.counters["MyIngress.port_counter"]) == {(7, 700)}
    met = U(type=U.MODIFY)
    met.entity.meter_entry.meter_id = i["port_meter"]
    c = met.entity.meter_entry.config
    c.cir, c.cburst, c.pir, c.pburst = 1, 2, 3, 4
    client.write(met)
    assert pipe.meters["MyIngress.port_meter"] == [api.MeterConfig(1, 2, 3, 4)] * 16
    cells = client.read(p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry(
        register_id=i["flowlet_ts"])))
    assert [e.register_entry.data.bitstring for e in cells] == [b"\x2a"] * 16


@pytest.mark.parametrize("atomicity", [W.ROLLBACK_ON_ERROR, W.DATAPLANE_ATOMIC])
def test_a_failed_batch_undoes_a_wildcard_write(loaded, client, i, atomicity):
    client.write(register_update(i, 5, b"\x05"))
    before = loaded.pipeline.registers[REG][:]
    codes = write_codes(client, wildcard(register_update(i, 0, b"\x09"), "register_entry"),
                        register_update(i, 16, b"\x01"), atomicity=atomicity)
    assert codes == [code_pb2.ABORTED, code_pb2.OUT_OF_RANGE]
    assert loaded.pipeline.registers[REG] == before
