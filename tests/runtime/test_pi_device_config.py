"""PI's ``p4.tmp.P4DeviceConfig`` wrapper: unwrapped, ``reassign`` honoured, and never confused
with the JSON device configs (a p4switch bundle, BMv2 JSON); malformed wrappers are refused
with INVALID_ARGUMENT and leave the running pipeline and its entries alone."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from runtime_client import sample_bundle_bytes
from test_errors import ids, lpm_update

from p4switch import pi_device_config as pi

PI_MODULE = Path("/opt/p4tools/lib/python3.11/site-packages/p4/tmp/p4config_pb2.py")
BMV2_JSON = json.dumps({"header_types": [], "headers": [], "parsers": [], "pipelines": [],
                        "program": "x.p4"}).encode()


def _table_entries(client, table_id: int) -> list:
    e = p4runtime_pb2.Entity()
    e.table_entry.table_id = table_id
    return client.read(e)


def test_json_configs_are_never_taken_for_a_wrapper():
    for data in (sample_bundle_bytes(), BMV2_JSON, b"\n  " + BMV2_JSON, b""):
        u = pi.unwrap(data)
        assert (u.data, u.wrapped) == (data, False)


def test_wrap_unwrap_round_trip_with_extras():
    u = pi.unwrap(pi.wrap(b'{"x": 1}', reassign=False, extras={"port": "9090"}))
    assert (u.data, u.wrapped, u.reassign, u.extras) == (b'{"x": 1}', True, False,
                                                         {"port": "9090"})


@pytest.mark.skipif(not PI_MODULE.is_file(), reason="PI's generated p4config_pb2 not installed")
def test_wire_format_matches_pis_generated_module():
    spec = importlib.util.spec_from_file_location("pi_p4config_pb2", PI_MODULE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    theirs = mod.P4DeviceConfig(reassign=True, device_data=b"{}")
    theirs.extras.kv["a"] = "b"
    assert pi.unwrap(theirs.SerializeToString()) == pi.Unwrapped(b"{}", True, True, {"a": "b"})
    back = mod.P4DeviceConfig.FromString(pi.wrap(b"{}", True, {"a": "b"}))
    assert (back.reassign, back.device_data, dict(back.extras.kv)) == (True, b"{}", {"a": "b"})


@pytest.mark.parametrize("bad, says", [
    (b"\x1a\x40short", "Truncated"),                        # device_data shorter than its length
    (b"\x08\x01\x20\x05", "unknown field number(s) [4]"),   # not PI's message
    (b"\x00garbage", "P4DeviceConfig"),
])
def test_malformed_wrapper_is_invalid_argument_and_state_unchanged(loaded, client,
                                                                   sample_p4info, bad, says):
    i = ids(sample_p4info)
    client.write(lpm_update(i))
    before = loaded.service.config
    with pytest.raises(grpc.RpcError) as e:
        client.set_pipeline(sample_p4info, bad)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert says in e.value.details()
    assert loaded.service.config is before
    assert len(_table_entries(client, i["ipv4_lpm"])) == 1


def test_wrapper_around_bad_bundle_names_the_wrapper(loaded, client, sample_p4info):
    with pytest.raises(grpc.RpcError) as e:
        client.set_pipeline(sample_p4info, pi.wrap(b'{"format": "nope"}'))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.details().startswith("p4.tmp.P4DeviceConfig.device_data: ")


def test_wrapped_bundle_is_committed_and_served_unwrapped(env, client, sample_p4info):
    client.set_pipeline(sample_p4info, pi.wrap(sample_bundle_bytes()))
    assert env.service.config is not None
    req = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=client.device_id)
    got = client.stub.GetForwardingPipelineConfig(req)
    assert got.config.p4_device_config == sample_bundle_bytes()


@pytest.mark.parametrize("reassign, kept", [(False, 1), (True, 0)])
def test_reassign_drops_forwarding_state_as_pi_does(loaded, client, sample_p4info,
                                                     reassign, kept):
    """A wrapper with no device_data describes the running program (like an empty config);
    with ``reassign`` PI removes and re-assigns the device, so the entries go."""
    i = ids(sample_p4info)
    client.write(lpm_update(i))
    client.set_pipeline(sample_p4info, pi.wrap(b"", reassign=reassign))
    assert len(_table_entries(client, i["ipv4_lpm"])) == kept


def test_reassign_in_reconcile_does_not_keep_state(loaded, client, sample_p4info):
    i = ids(sample_p4info)
    client.write(lpm_update(i))
    A = p4runtime_pb2.SetForwardingPipelineConfigRequest
    client.set_pipeline(sample_p4info, pi.wrap(sample_bundle_bytes(), reassign=False),
                        action=A.RECONCILE_AND_COMMIT)
    assert len(_table_entries(client, i["ipv4_lpm"])) == 1
    client.set_pipeline(sample_p4info, pi.wrap(sample_bundle_bytes(), reassign=True),
                        action=A.RECONCILE_AND_COMMIT)
    assert _table_entries(client, i["ipv4_lpm"]) == []
