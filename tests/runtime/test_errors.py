"""Bad requests get the P4Runtime spec's status codes and leave the state as it was; plus
arbitration, batches/atomicity, registers, pipeline-config actions and wildcard reads."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2
from runtime_client import RawClient, sample_bundle_bytes

from p4switch import device_config
from p4switch.pipeline import api

U = p4runtime_pb2.Update
W = p4runtime_pb2.WriteRequest
SetReq = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetReq = p4runtime_pb2.GetForwardingPipelineConfigRequest


def ids(p4info):
    out = {}
    for kind in ("tables", "actions", "counters", "registers", "meters", "action_profiles",
                 "digests", "direct_counters"):
        for o in getattr(p4info, kind):
            out[o.preamble.name.split(".")[-1]] = o.preamble.id
    return out


def per_update_codes(err: grpc.RpcError) -> list[int]:
    assert err.code() == grpc.StatusCode.UNKNOWN, err
    md = dict(err.trailing_metadata())
    st = status_pb2.Status.FromString(md["grpc-status-details-bin"])
    out = []
    for d in st.details:
        e = p4runtime_pb2.Error()
        d.Unpack(e)
        out.append(e.canonical_code)
    return out


def write_codes(client: RawClient, *updates, **kw) -> list[int]:
    try:
        client.write(*updates, **kw)
    except grpc.RpcError as e:
        return per_update_codes(e)
    return [code_pb2.OK] * len(updates)


def lpm_update(i, utype=U.INSERT, value=b"\x0a\x00\x00\x00", plen=8, port=b"\x01"):
    upd = U(type=utype)
    te = upd.entity.table_entry
    te.table_id = i["ipv4_lpm"]
    m = te.match.add(field_id=1)
    m.lpm.value, m.lpm.prefix_len = value, plen
    te.action.action.action_id = i["set_nhop"]
    te.action.action.params.add(param_id=1, value=b"\x01")
    te.action.action.params.add(param_id=2, value=port)
    return upd


def acl_update(i, *, ternary=(b"\x08\x00", b"\xff\x00"), priority=5, action="forward"):
    upd = U(type=U.INSERT)
    te = upd.entity.table_entry
    te.table_id = i["acl"]
    te.priority = priority
    if ternary is not None:
        m = te.match.add(field_id=1)
        m.ternary.value, m.ternary.mask = ternary
    te.match.add(field_id=2).exact.value = b"\x01"
    te.action.action.action_id = i[action]
    if action == "forward":
        te.action.action.params.add(param_id=1, value=b"\x02")
    return upd


def register_update(i, index, value: bytes):
    upd = U(type=U.MODIFY)
    r = upd.entity.register_entry
    r.register_id = i["flowlet_ts"]
    r.index.index = index
    r.data.bitstring = value
    return upd


@pytest.fixture
def i(sample_p4info):
    return ids(sample_p4info)


# ---------------------------------------------------------------------------------------------
# No pipeline, arbitration
# ---------------------------------------------------------------------------------------------


def test_write_and_read_before_any_pipeline_fail_with_failed_precondition(env, client, i):
    with pytest.raises(grpc.RpcError) as ei:
        client.write(lpm_update(i))
    assert ei.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.RpcError) as ei:
        client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
    assert ei.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_arbitration_primary_backup_and_failover(env, sample_p4info, i):
    a = RawClient(env.addr, (0, 5))
    b = RawClient(env.addr, (0, 3))
    try:
        assert a.arbitrate().arbitration.status.code == code_pb2.OK
        rb = b.arbitrate().arbitration
        assert rb.status.code == code_pb2.ALREADY_EXISTS
        assert (rb.election_id.high, rb.election_id.low) == (0, 5)  # the primary's id
        a.set_pipeline(sample_p4info, sample_bundle_bytes())
        # the backup may not write or set the pipeline
        with pytest.raises(grpc.RpcError) as ei:
            b.write(lpm_update(i))
        assert ei.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.RpcError) as ei:
            b.set_pipeline(sample_p4info, sample_bundle_bytes())
        assert ei.value.code() == grpc.StatusCode.PERMISSION_DENIED
        # pretending to be the primary (its election id) from elsewhere works only with that id
        with pytest.raises(grpc.RpcError) as ei:
            b.write(lpm_update(i), election_id=(0, 4))
        assert ei.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert env.pipeline.table_entries("MyIngress.ipv4_lpm") == []
        # a backup that raises its election id above the primary's takes over
        assert b.arbitrate((0, 9)).arbitration.status.code == code_pb2.OK
        assert a.next_message("arbitration").arbitration.status.code == code_pb2.ALREADY_EXISTS
        b.write(lpm_update(i))
        # primary goes away: nobody is promoted (spec 1.1+); the rest are told there is none
        b.close()
        assert a.next_message("arbitration").arbitration.status.code == code_pb2.NOT_FOUND
    finally:
        a.close()
        b.close()


def test_duplicate_election_id_and_wrong_device_are_rejected(env, client):
    dup = RawClient(env.addr, (0, 1))
    try:
        err = dup.arbitrate()
        assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        dup.close()
    other = RawClient(env.addr, (0, 7), device_id=99)
    try:
        err = other.arbitrate()
        assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.NOT_FOUND
    finally:
        other.close()


# ---------------------------------------------------------------------------------------------
# Table entries: each bad request gets its code and changes nothing
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mutate, code",
    [
        ("unknown_table", code_pb2.NOT_FOUND),
        ("wrong_bitwidth", code_pb2.INVALID_ARGUMENT),
        ("empty_bytes", code_pb2.INVALID_ARGUMENT),
        ("lpm_bits_beyond_prefix", code_pb2.INVALID_ARGUMENT),
        ("lpm_prefix_zero", code_pb2.INVALID_ARGUMENT),
        ("unknown_field", code_pb2.INVALID_ARGUMENT),
        ("wrong_match_kind", code_pb2.INVALID_ARGUMENT),
        ("missing_param", code_pb2.INVALID_ARGUMENT),
        ("action_not_in_table", code_pb2.INVALID_ARGUMENT),
        ("defaultonly_action", code_pb2.PERMISSION_DENIED),
        ("priority_on_lpm", code_pb2.INVALID_ARGUMENT),
        ("is_const", code_pb2.INVALID_ARGUMENT),
    ],
)
def test_bad_lpm_entries(loaded, client, i, mutate, code):
    upd = lpm_update(i)
    te = upd.entity.table_entry
    if mutate == "unknown_table":
        te.table_id = 0x02FFFFFF
    elif mutate == "wrong_bitwidth":
        te.action.action.params[1].value = b"\x02\x00"  # 512 does not fit bit<9>
    elif mutate == "empty_bytes":
        te.action.action.params[1].value = b""
    elif mutate == "lpm_bits_beyond_prefix":
        te.match[0].lpm.value = b"\x0a\x01\x00\x00"
    elif mutate == "lpm_prefix_zero":
        te.match[0].lpm.prefix_len = 0
    elif mutate == "unknown_field":
        te.match[0].field_id = 9
    elif mutate == "wrong_match_kind":
        te.match[0].exact.value = b"\x01"
    elif mutate == "missing_param":
        del te.action.action.params[1]
    elif mutate == "action_not_in_table":
        te.action.action.action_id = i["forward"]
    elif mutate == "defaultonly_action":
        te.action.action.action_id = i["NoAction"]
        del te.action.action.params[:]
    elif mutate == "priority_on_lpm":
        te.priority = 3
    elif mutate == "is_const":
        te.is_const = True
    ops = loaded.pipeline.ops
    assert write_codes(client, upd) == [code]
    assert loaded.pipeline.table_entries("MyIngress.ipv4_lpm") == []
    assert loaded.pipeline.ops == ops


def test_padded_values_are_accepted_and_read_back_canonical(loaded, client, i):
    client.write(lpm_update(i, port=b"\x00\x00\x00\x03"))
    (e,) = client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=i["ipv4_lpm"])))
    assert e.table_entry.action.action.params[1].value == b"\x03"


def test_duplicate_insert_and_missing_delete_leave_state_unchanged(loaded, client, i):
    client.write(lpm_update(i, port=b"\x01"))
    assert write_codes(client, lpm_update(i, port=b"\x02")) == [code_pb2.ALREADY_EXISTS]
    (e,) = loaded.pipeline.table_entries("MyIngress.ipv4_lpm")
    assert e.params["port"] == 1
    missing = lpm_update(i, U.DELETE, value=b"\x0b\x00\x00\x00")
    assert write_codes(client, missing) == [code_pb2.NOT_FOUND]
    assert write_codes(client, lpm_update(i, U.MODIFY, value=b"\x0b\x00\x00\x00")) == [
        code_pb2.NOT_FOUND]
    assert len(loaded.pipeline.table_entries("MyIngress.ipv4_lpm")) == 1


@pytest.mark.parametrize(
    "kw, code",
    [
        ({"ternary": (b"\x08\x01", b"\xff\x00")}, code_pb2.INVALID_ARGUMENT),  # outside mask
        ({"ternary": (b"\x00", b"\x00")}, code_pb2.INVALID_ARGUMENT),  # present don't-care
        ({"priority": 0}, code_pb2.INVALID_ARGUMENT),  # ternary table needs a priority
    ],
)
def test_bad_ternary_entries(loaded, client, i, kw, code):
    assert write_codes(client, acl_update(i, **kw)) == [code]
    assert loaded.pipeline.table_entries("MyIngress.acl") == []


def test_omitted_ternary_is_a_wildcard_and_missing_exact_is_invalid(loaded, client, i):
    client.write(acl_update(i, ternary=None))
    (e,) = loaded.pipeline.table_entries("MyIngress.acl")
    assert set(e.match) == {"standard_metadata.ingress_port"}
    bad = acl_update(i, priority=6)
    del bad.entity.table_entry.match[1]  # the exact field
    assert write_codes(client, bad) == [code_pb2.INVALID_ARGUMENT]


def test_const_table_and_const_default(loaded, client, i):
    upd = U(type=U.INSERT)
    te = upd.entity.table_entry
    te.table_id = i["ether_filter"]
    te.match.add(field_id=1).exact.value = b"\x08\x00"
    te.action.action.action_id = i["drop"]
    assert write_codes(client, upd) == [code_pb2.PERMISSION_DENIED]
    upd = U(type=U.MODIFY)
    te = upd.entity.table_entry
    te.table_id = i["ether_filter"]
    te.is_default_action = True
    te.action.action.action_id = i["drop"]
    assert write_codes(client, upd) == [code_pb2.PERMISSION_DENIED]
    upd.type = U.INSERT  # INSERT of a default entry is invalid whatever the table
    te.table_id = i["ipv4_lpm"]
    assert write_codes(client, upd) == [code_pb2.INVALID_ARGUMENT]
    # the const entry is readable and flagged
    (e,) = client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=i["ether_filter"])))
    assert e.table_entry.is_const


def test_wildcard_read_over_all_tables(loaded, client, i):
    client.write(lpm_update(i), acl_update(i))
    got = client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
    tables = sorted(e.table_entry.table_id for e in got)
    assert tables == sorted([i["ipv4_lpm"], i["acl"], i["ether_filter"]])
    # exact-match read of one entry, and a read filtered by a match that is absent
    one = client.read(p4runtime_pb2.Entity(table_entry=lpm_update(i).entity.table_entry))
    assert len(one) == 1
    other = lpm_update(i, value=b"\x0c\x00\x00\x00").entity.table_entry
    assert client.read(p4runtime_pb2.Entity(table_entry=other)) == []


def test_cookies_are_stored_and_read_back(loaded, client, i):
    upd = lpm_update(i)
    upd.entity.table_entry.controller_metadata = 42
    upd.entity.table_entry.metadata = b"note"
    client.write(upd)
    (e,) = client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=i["ipv4_lpm"])))
    assert (e.table_entry.controller_metadata, e.table_entry.metadata) == (42, b"note")


# ---------------------------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------------------------


def test_continue_on_error_applies_the_good_updates(loaded, client, i):
    good1 = lpm_update(i, value=b"\x0a\x00\x00\x00")
    bad = lpm_update(i, value=b"\x0b\x01\x00\x00")  # bits beyond /8
    good2 = lpm_update(i, value=b"\x0c\x00\x00\x00")
    assert write_codes(client, good1, bad, good2) == [
        code_pb2.OK, code_pb2.INVALID_ARGUMENT, code_pb2.OK]
    assert len(loaded.pipeline.table_entries("MyIngress.ipv4_lpm")) == 2


@pytest.mark.parametrize("atomicity", [W.ROLLBACK_ON_ERROR, W.DATAPLANE_ATOMIC])
def test_rollback_on_error_restores_everything(loaded, client, i, atomicity):
    client.write(lpm_update(i, value=b"\x0d\x00\x00\x00"), register_update(i, 1, b"\x07"))
    before = (loaded.pipeline.table_entries("MyIngress.ipv4_lpm"),
              loaded.pipeline.registers["MyIngress.flowlet_ts"][:])
    batch = [
        lpm_update(i, value=b"\x0a\x00\x00\x00"),
        lpm_update(i, U.DELETE, value=b"\x0d\x00\x00\x00"),
        register_update(i, 1, b"\x09"),
        lpm_update(i, U.MODIFY, value=b"\x0e\x00\x00\x00"),  # NOT_FOUND
        register_update(i, 2, b"\x01"),
    ]
    codes = write_codes(client, *batch, atomicity=atomicity)
    assert codes[3] == code_pb2.NOT_FOUND
    assert all(c == code_pb2.ABORTED for k, c in enumerate(codes) if k != 3)
    after = (loaded.pipeline.table_entries("MyIngress.ipv4_lpm"),
             loaded.pipeline.registers["MyIngress.flowlet_ts"][:])
    assert after == before


def test_writes_are_atomic_with_respect_to_packets(loaded, client, i):
    """Each Write inserts two entries; the packet path (switch loop thread) must never see an
    odd number of entries."""
    seen: list[int] = []
    pipe = loaded.pipeline
    orig = pipe.ingress

    def ingress(data, port, now):
        seen.append(len(pipe.tables["MyIngress.ipv4_lpm"].entries))
        time.sleep(0.0002)  # widen the window a racy implementation would need
        return orig(data, port, now)

    pipe.ingress = ingress
    stop = threading.Event()

    def blast():
        while not stop.is_set():
            loaded.switch.inject(1, b"\x00" * 60)
            time.sleep(0.0005)

    t = threading.Thread(target=blast)
    t.start()
    try:
        for k in range(100):
            a = lpm_update(i, value=bytes([10, k, 0, 0]), plen=16)
            b = lpm_update(i, value=bytes([11, k, 0, 0]), plen=16)
            client.write(a, b)
    finally:
        stop.set()
        t.join()
    loaded.switch.wait_idle()
    assert seen and all(n % 2 == 0 for n in seen)
    assert len(pipe.tables["MyIngress.ipv4_lpm"].entries) == 200


# ---------------------------------------------------------------------------------------------
# Registers, counters, meters, profiles, PRE, digests
# ---------------------------------------------------------------------------------------------


def test_register_read_write_and_out_of_range(loaded, client, i):
    client.write(register_update(i, 3, (0xABCDEF012345).to_bytes(6, "big")))
    (e,) = client.read(p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry(
        register_id=i["flowlet_ts"], index=p4runtime_pb2.Index(index=3))))
    assert e.register_entry.data.bitstring == (0xABCDEF012345).to_bytes(6, "big")
    every = client.read(p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry(
        register_id=i["flowlet_ts"])))
    assert len(every) == 16
    all_regs = client.read(p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry()))
    assert len(all_regs) == 16
    assert write_codes(client, register_update(i, 16, b"\x01")) == [code_pb2.OUT_OF_RANGE]
    assert write_codes(client, register_update(i, 0, b"\x01" + b"\x00" * 6)) == [
        code_pb2.INVALID_ARGUMENT]  # 49 bits into bit<48>
    ins = register_update(i, 0, b"\x01")
    ins.type = U.INSERT
    assert write_codes(client, ins) == [code_pb2.INVALID_ARGUMENT]
    assert loaded.pipeline.registers["MyIngress.flowlet_ts"][0] == 0
    with pytest.raises(grpc.RpcError) as ei:
        client.read(p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry(
            register_id=i["flowlet_ts"], index=p4runtime_pb2.Index(index=99))))
    assert ei.value.code() == grpc.StatusCode.OUT_OF_RANGE


def test_counter_and_meter_entries(loaded, client, i):
    upd = U(type=U.MODIFY)
    c = upd.entity.counter_entry
    c.counter_id = i["port_counter"]
    c.index.index = 8
    assert write_codes(client, upd) == [code_pb2.OUT_OF_RANGE]
    upd = U(type=U.MODIFY)
    m = upd.entity.meter_entry
    m.meter_id = i["port_meter"]
    m.index.index = 2
    m.config.cir, m.config.cburst, m.config.pir, m.config.pburst = 100, 10, 200, 20
    client.write(upd)
    assert loaded.pipeline.meters["MyIngress.port_meter"][2] == api.MeterConfig(100, 10, 200, 20)
    (e,) = client.read(p4runtime_pb2.Entity(meter_entry=p4runtime_pb2.MeterEntry(
        meter_id=i["port_meter"], index=p4runtime_pb2.Index(index=2))))
    assert e.meter_entry.config.pir == 200


def test_profile_and_pre_errors(loaded, client, i):
    upd = U(type=U.INSERT)
    g = upd.entity.action_profile_group
    g.action_profile_id = i["ecmp_sel"]
    g.group_id = 1
    g.members.add(member_id=5, weight=1)
    assert write_codes(client, upd) == [code_pb2.NOT_FOUND]  # member 5 does not exist
    upd = U(type=U.INSERT)
    te = upd.entity.table_entry
    te.table_id = i["ecmp"]
    te.match.add(field_id=7).exact.value = b"\x01"
    te.action.action.action_id = i["set_nhop"]  # a direct action on an indirect table
    assert write_codes(client, upd) == [code_pb2.INVALID_ARGUMENT]
    upd = U(type=U.DELETE)
    upd.entity.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 3
    assert write_codes(client, upd) == [code_pb2.NOT_FOUND]
    upd.type = U.INSERT
    upd.entity.packet_replication_engine_entry.multicast_group_entry.replicas.add(
        egress_port=1, instance=0)
    client.write(upd)
    assert write_codes(client, upd) == [code_pb2.ALREADY_EXISTS]
    cs = U(type=U.INSERT)
    cs.entity.packet_replication_engine_entry.clone_session_entry.session_id = 0
    assert write_codes(client, cs) == [code_pb2.INVALID_ARGUMENT]


def test_digest_entries(loaded, client, i):
    upd = U(type=U.MODIFY)
    upd.entity.digest_entry.digest_id = i["mac_learn_t"]
    assert write_codes(client, upd) == [code_pb2.NOT_FOUND]
    upd.type = U.INSERT
    upd.entity.digest_entry.config.max_list_size = 1
    client.write(upd)
    (e,) = client.read(p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry()))
    assert e.digest_entry.digest_id == i["mac_learn_t"]
    upd.entity.digest_entry.digest_id = 0x17FFFFFF
    assert write_codes(client, upd) == [code_pb2.NOT_FOUND]


# ---------------------------------------------------------------------------------------------
# Pipeline config
# ---------------------------------------------------------------------------------------------


def test_compile_error_is_invalid_argument_with_location(env, client, sample_p4info):
    bundle = device_config.Bundle("prog.p4", {"prog.p4": "// ok\n\nsyntax error here\n"})
    with pytest.raises(grpc.RpcError) as ei:
        client.set_pipeline(sample_p4info, bundle.to_bytes())
    assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "prog.p4:3:1" in ei.value.details()
    assert env.switch.pipeline is None


@pytest.mark.parametrize("blob", [b"\x00\x01binary", b'{"format": "other"}',
                                  b'{"format": "p4switch-bundle-1", "main": "x.p4", '
                                  b'"files": {"../x.p4": ""}}'])
def test_bad_device_config_is_invalid_argument(env, client, sample_p4info, blob):
    with pytest.raises(grpc.RpcError) as ei:
        client.set_pipeline(sample_p4info, blob)
    assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_p4info_must_match_the_program(env, client, sample_p4info):
    bad = type(sample_p4info)()
    bad.CopyFrom(sample_p4info)
    bad.tables[0].match_fields[0].bitwidth += 1
    with pytest.raises(grpc.RpcError) as ei:
        client.set_pipeline(bad, sample_bundle_bytes())
    assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    bad.CopyFrom(sample_p4info)
    bad.actions[1].preamble.id = bad.actions[0].preamble.id
    with pytest.raises(grpc.RpcError) as ei:
        client.set_pipeline(bad, sample_bundle_bytes())
    assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_foreign_ids_are_spoken_when_names_match(env, client, sample_p4info, i):
    """A P4Info from another compiler (different ids, same names) is accepted as is."""
    foreign = type(sample_p4info)()
    foreign.CopyFrom(sample_p4info)
    remap = {}
    for t in foreign.tables:
        remap[t.preamble.id] = t.preamble.id + 1000
        t.preamble.id += 1000
    for ap in foreign.action_profiles:
        ap.table_ids[:] = [remap.get(x, x) for x in ap.table_ids]
    for dc in foreign.direct_counters:
        dc.direct_table_id = remap.get(dc.direct_table_id, dc.direct_table_id)
    client.set_pipeline(foreign, sample_bundle_bytes())
    upd = lpm_update(i)
    upd.entity.table_entry.table_id = i["ipv4_lpm"] + 1000
    client.write(upd)
    assert len(env.pipeline.table_entries("MyIngress.ipv4_lpm")) == 1
    assert write_codes(client, lpm_update(i, value=b"\x0b\x00\x00\x00")) == [code_pb2.NOT_FOUND]


def test_pipeline_actions_verify_save_commit_and_get(env, client, sample_p4info):
    cfg = p4runtime_pb2.ForwardingPipelineConfig(p4info=sample_p4info,
                                                 p4_device_config=sample_bundle_bytes())
    cfg.cookie.cookie = 77

    def set_(action, with_cfg=True):
        req = SetReq(device_id=1, action=action)
        req.election_id.low = 1
        if with_cfg:
            req.config.CopyFrom(cfg)
        return client.stub.SetForwardingPipelineConfig(req)

    set_(SetReq.VERIFY)
    assert env.switch.pipeline is None
    with pytest.raises(grpc.RpcError) as ei:
        set_(SetReq.COMMIT, with_cfg=False)
    assert ei.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    set_(SetReq.VERIFY_AND_SAVE)
    assert env.switch.pipeline is None
    set_(SetReq.COMMIT, with_cfg=False)
    assert env.switch.pipeline is not None

    got = client.stub.GetForwardingPipelineConfig(GetReq(device_id=1, response_type=GetReq.ALL))
    assert got.config.p4info == sample_p4info
    assert got.config.p4_device_config == sample_bundle_bytes()
    assert got.config.cookie.cookie == 77
    cookie = client.stub.GetForwardingPipelineConfig(
        GetReq(device_id=1, response_type=GetReq.COOKIE_ONLY))
    assert not cookie.config.HasField("p4info") and cookie.config.cookie.cookie == 77
    only = client.stub.GetForwardingPipelineConfig(
        GetReq(device_id=1, response_type=GetReq.P4INFO_AND_COOKIE))
    assert only.config.p4info == sample_p4info and not only.config.p4_device_config

    # RECONCILE_AND_COMMIT with the same program keeps the forwarding state
    client.write(lpm_update(ids(sample_p4info)))
    pipe = env.switch.pipeline
    set_(SetReq.RECONCILE_AND_COMMIT)
    assert env.switch.pipeline is pipe and len(pipe.table_entries("MyIngress.ipv4_lpm")) == 1
    # VERIFY_AND_COMMIT reloads: state is reset
    set_(SetReq.VERIFY_AND_COMMIT)
    assert env.switch.pipeline is not pipe
    assert env.switch.pipeline.table_entries("MyIngress.ipv4_lpm") == []

    with pytest.raises(grpc.RpcError) as ei:
        client.stub.GetForwardingPipelineConfig(GetReq(device_id=5))
    assert ei.value.code() == grpc.StatusCode.NOT_FOUND


def test_capabilities(env, client):
    resp = client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
    assert resp.p4runtime_api_version == "1.4.1"


def test_packet_out_errors_come_back_on_the_stream(loaded, client):
    req = p4runtime_pb2.StreamMessageRequest()
    req.packet.payload = b"x"
    req.packet.metadata.add(metadata_id=1, value=b"\x02\x00")  # 512 does not fit bit<9>
    client.send(req)
    err = client.next_message("error")
    assert err.error.canonical_code == code_pb2.INVALID_ARGUMENT
    assert err.error.packet_out.packet_out.payload == b"x"


def test_packet_out_from_a_backup_is_refused_and_unconfigured_digests_are_not_sent(loaded,
                                                                                   client):
    backup = RawClient(loaded.addr, (0, 0))
    try:
        assert backup.arbitrate().arbitration.status.code == code_pb2.ALREADY_EXISTS
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = b"\xaa" * 6
        backup.send(req)
        err = backup.next_message("error")
        assert err.error.canonical_code == code_pb2.PERMISSION_DENIED
        assert loaded.switch.counters.packet_out == 0
        # the primary's packet-out loops back as a packet-in, but its digest is not configured
        client.send(req)
        pin = client.next_message("packet")
        assert pin.packet.payload == b"\xaa" * 6  # the server added, the fake stripped, the header
        assert loaded.service.counters.digests_unconfigured >= 1
    finally:
        backup.close()


def _member(i, utype, mid, port=b"\x01"):
    upd = U(type=utype)
    m = upd.entity.action_profile_member
    m.action_profile_id, m.member_id = i["ecmp_sel"], mid
    m.action.action_id = i["set_nhop"]
    m.action.params.add(param_id=1, value=b"\x00\x00\x00\x00\x00\x01")
    m.action.params.add(param_id=2, value=port)
    return upd


def _group(i, utype, gid, *members):
    upd = U(type=utype)
    g = upd.entity.action_profile_group
    g.action_profile_id, g.group_id = i["ecmp_sel"], gid
    for mid in members:
        g.members.add(member_id=mid, weight=1)
    return upd


def test_profile_members_and_groups_modify_delete_and_roll_back(loaded, client, i):
    pipe = loaded.pipeline

    def state():
        by_id = {m.member_id: m for m in pipe.act_prof_members("MyIngress.ecmp_sel")}
        return sorted(by_id.items()), pipe.act_prof_groups("MyIngress.ecmp_sel")

    assert write_codes(client, _member(i, U.MODIFY, 1), _member(i, U.DELETE, 1),
                       _group(i, U.MODIFY, 9), _group(i, U.DELETE, 9),
                       atomicity=W.CONTINUE_ON_ERROR) == [code_pb2.NOT_FOUND] * 4
    client.write(_member(i, U.INSERT, 1), _member(i, U.INSERT, 2), _group(i, U.INSERT, 9, 1))
    client.write(_member(i, U.MODIFY, 1, b"\x04"), _group(i, U.MODIFY, 9, 1, 2))
    members, groups = state()
    assert members[0][1].params["port"] == 4
    assert groups[0].members == [(1, 1), (2, 1)]
    before = state()
    batch = [_member(i, U.MODIFY, 2, b"\x05"), _group(i, U.DELETE, 9), _member(i, U.DELETE, 1),
             _member(i, U.INSERT, 3), _member(i, U.DELETE, 7)]  # the last: NOT_FOUND
    codes = write_codes(client, *batch, atomicity=W.ROLLBACK_ON_ERROR)
    assert codes[-1] == code_pb2.NOT_FOUND
    assert state() == before
    client.write(_group(i, U.DELETE, 9), _member(i, U.DELETE, 1))
    assert [mid for mid, _ in state()[0]] == [2] and state()[1] == []


def _pre(utype, kind, key, *ports):
    upd = U(type=utype)
    e = getattr(upd.entity.packet_replication_engine_entry, kind)
    setattr(e, "multicast_group_id" if kind == "multicast_group_entry" else "session_id", key)
    for p in ports:
        e.replicas.add(egress_port=p, instance=0)
    return upd


@pytest.mark.parametrize("kind", ["multicast_group_entry", "clone_session_entry"])
def test_replication_entries_modify_delete_and_roll_back(loaded, client, kind):
    pipe = loaded.pipeline
    table = pipe.mcast_groups if kind == "multicast_group_entry" else pipe.clone_sessions

    def ports():
        return {k: [r.egress_port for r in v] for k, v in table().items()}

    assert write_codes(client, _pre(U.MODIFY, kind, 5, 1), _pre(U.DELETE, kind, 5),
                       atomicity=W.CONTINUE_ON_ERROR) == [code_pb2.NOT_FOUND] * 2
    client.write(_pre(U.INSERT, kind, 5, 1), _pre(U.INSERT, kind, 6, 2))
    assert write_codes(client, _pre(U.INSERT, kind, 5, 3)) == [code_pb2.ALREADY_EXISTS]
    client.write(_pre(U.MODIFY, kind, 5, 1, 2))
    assert ports() == {5: [1, 2], 6: [2]}
    codes = write_codes(client, _pre(U.MODIFY, kind, 5, 3), _pre(U.DELETE, kind, 6),
                        _pre(U.INSERT, kind, 7, 1), _pre(U.DELETE, kind, 8),
                        atomicity=W.ROLLBACK_ON_ERROR)
    assert codes[-1] == code_pb2.NOT_FOUND
    assert ports() == {5: [1, 2], 6: [2]}
    client.write(_pre(U.DELETE, kind, 5))
    assert ports() == {6: [2]}


def test_counter_data_in_table_writes_sets_the_direct_counter(loaded, client, i):
    """INSERT and MODIFY with counter_data set the entry's direct counter; a rolled-back MODIFY
    restores the old counts."""

    def counts():
        (e,) = loaded.pipeline.table_entries("MyIngress.acl")
        return e.packets, e.bytes

    upd = acl_update(i)
    upd.entity.table_entry.counter_data.packet_count = 3
    upd.entity.table_entry.counter_data.byte_count = 300
    client.write(upd)
    assert counts() == (3, 300)
    mod = acl_update(i)
    mod.type = U.MODIFY
    mod.entity.table_entry.counter_data.packet_count = 7
    mod.entity.table_entry.counter_data.byte_count = 700
    client.write(mod)
    assert counts() == (7, 700)
    mod.entity.table_entry.counter_data.packet_count = 9
    codes = write_codes(client, mod, lpm_update(i, U.DELETE), atomicity=W.ROLLBACK_ON_ERROR)
    assert codes == [code_pb2.ABORTED, code_pb2.NOT_FOUND]
    assert counts() == (7, 700)
