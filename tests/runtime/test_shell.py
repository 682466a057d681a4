"""p4runtime-shell itself (unmodified) against p4switch's P4Runtime server: push a pipeline,
insert/read/modify/delete table entries, counters, action profiles, multicast, packet I/O and
digests, and arbitration with a second (backup) client."""

from __future__ import annotations

import time

import pytest
from p4runtime_sh import shell as sh
from p4runtime_sh.p4runtime import P4RuntimeClient, P4RuntimeException, P4RuntimeWriteException

from p4switch.pipeline import api

DEVICE_ID = 1


@pytest.fixture
def shell(env, config_files):
    """p4runtime-shell connected as primary, after pushing the sample pipeline."""
    sh.setup(device_id=DEVICE_ID, grpc_addr=env.addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(*config_files), verbose=False)
    try:
        yield sh
    finally:
        sh.teardown()


def entries(table):
    return list(sh.TableEntry(table).read())


def test_shell_pushes_pipeline_and_manages_table_entries(env, shell):
    assert env.pipeline is not None
    assert shell.APIVersion() == "1.4.1"

    te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.set_nhop")
    te.match["hdr.ipv4.dstAddr"] = "10.1.0.0/16"
    te.action["dmac"] = "00:11:22:33:44:55"
    te.action["port"] = "3"
    te.insert()
    got = env.pipeline.table_entries("MyIngress.ipv4_lpm")
    assert got[0].match == {"hdr.ipv4.dstAddr": api.LpmMatch(0x0A010000, 16)}
    assert got[0].action == "MyIngress.set_nhop"
    assert got[0].params == {"dmac": 0x001122334455, "port": 3}

    (back,) = entries("MyIngress.ipv4_lpm")
    assert back.match["hdr.ipv4.dstAddr"].lpm.prefix_len == 16
    assert back.match["hdr.ipv4.dstAddr"].lpm.value == b"\x0a\x01\x00\x00"
    assert back.action["port"].value == b"\x03"  # canonical bytestring

    te.action["port"] = "7"
    te.modify()
    assert env.pipeline.table_entries("MyIngress.ipv4_lpm")[0].params["port"] == 7

    with pytest.raises(P4RuntimeWriteException, match="ALREADY_EXISTS"):
        te.insert()
    te.delete()
    assert entries("MyIngress.ipv4_lpm") == []
    with pytest.raises(P4RuntimeWriteException, match="NOT_FOUND"):
        te.delete()


def test_shell_ternary_table_with_direct_counter_and_default_entry(env, shell):
    te = sh.TableEntry("MyIngress.acl")(action="MyIngress.forward", priority=10)
    te.match["hdr.ethernet.etherType"] = "0x0800&&&0xff00"
    te.match["standard_metadata.ingress_port"] = "1"
    te.action["port"] = "2"
    te.insert()
    # the data plane counted some packets on that entry
    (e,) = env.pipeline.table_entries("MyIngress.acl")
    env.pipeline.direct_counter_write("MyIngress.acl", e.match, 10, 5, 640)
    dce = sh.DirectCounterEntry("MyIngress.acl_counter")
    (c,) = list(dce.read())
    assert (c.packet_count, c.byte_count) == (5, 640)

    (read_back,) = entries("MyIngress.acl")
    assert read_back.priority == 10
    assert "meta.l4_sport" not in read_back.match._mk  # wildcard stays omitted

    default = sh.TableEntry("MyIngress.acl")(action="MyIngress.drop")
    default.is_default = True
    default.modify()
    assert env.pipeline.table_get_default("MyIngress.acl").action == "MyIngress.drop"
    reset = sh.TableEntry("MyIngress.acl")
    reset.is_default = True
    reset.modify()  # no action: back to the program's default
    assert env.pipeline.table_get_default("MyIngress.acl").action == "NoAction"


def test_shell_reads_counters(env, shell):
    env.pipeline.counter_write("MyIngress.port_counter", 2, 11, 1100)
    c = sh.CounterEntry("MyIngress.port_counter")
    c.index = 2
    (one,) = list(c.read())
    assert (one.packet_count, one.byte_count) == (11, 1100)
    c.index = None  # wildcard: every index
    every = list(c.read())
    assert len(every) == 8 and sum(x.packet_count for x in every) == 11
    w = sh.CounterEntry("MyIngress.port_counter")
    w.index = 3
    w.packet_count = 9
    w.byte_count = 90
    w.modify()
    assert env.pipeline.counter_read("MyIngress.port_counter", 3) == (9, 90)


def test_shell_action_selector_members_groups_and_multicast(env, shell):
    for mid, port in ((1, 1), (2, 2)):
        m = sh.ActionProfileMember("MyIngress.ecmp_sel")(member_id=mid,
                                                          action="MyIngress.set_nhop")
        m.action["dmac"] = "0x1"
        m.action["port"] = str(port)
        m.insert()
    g = sh.ActionProfileGroup("MyIngress.ecmp_sel")(group_id=10)
    g.add(1).add(2, weight=3)
    g.insert()
    te = sh.TableEntry("MyIngress.ecmp")(group_id=10)
    te.match["meta.group"] = "5"
    te.insert()
    assert env.pipeline.table_entries("MyIngress.ecmp")[0].group_id == 10
    (grp,) = list(sh.ActionProfileGroup("MyIngress.ecmp_sel").read())
    assert sorted((m.member_id, m.weight) for m in grp.msg().members) == [(1, 1), (2, 3)]

    mc = sh.MulticastGroupEntry(7).add(1, 0).add(2, 0)
    mc.insert()
    assert [r.egress_port for r in env.pipeline.mcast_groups()[7]] == [1, 2]
    (back,) = list(sh.MulticastGroupEntry(7).read())
    assert len(back.msg().multicast_group_entry.replicas) == 2


def test_shell_packet_out_packet_in_and_digest(env, shell):
    de = sh.DigestEntry("mac_learn_t")
    de.max_timeout_ns = 0
    de.max_list_size = 1
    de.ack_timeout_ns = 0
    de.insert()
    pin = sh.PacketIn()
    digests = sh.DigestList()
    payload = bytes.fromhex("aabbccddeeff") + b"hello"
    sh.PacketOut(payload, egress_port="5", mcast="0").send()
    got = list(pin.sniff(timeout=1))
    assert len(got) == 1
    msg = got[0].packet
    assert msg.payload == payload
    # one value per P4Info metadata entry (the spec's rule), the @padding field (2) too, zero
    assert [(m.metadata_id, m.value) for m in msg.metadata] == [(1, b"\x05"), (2, b"\x00")]
    dl = list(digests.sniff(timeout=1))
    assert len(dl) == 1
    members = dl[0].digest.data[0].struct.members
    assert members[0].bitstring == bytes.fromhex("aabbccddeeff")
    assert members[1].bitstring == b"\x05"


def test_backup_client_cannot_write(env, shell):
    """A second client with a lower election id is a backup: reads work, writes do not."""
    backup = P4RuntimeClient(DEVICE_ID, env.addr, (0, 0x0))
    try:
        arb = [s for s in env.service.streams if s.election_id == (0, 0)]
        assert arb, "backup did not arbitrate"
        te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.drop")
        te.match["hdr.ipv4.dstAddr"] = "10.0.0.0/8"
        from p4.v1 import p4runtime_pb2

        update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
        update.entity.table_entry.CopyFrom(te.msg())
        with pytest.raises(Exception) as ei:
            backup.write_update(update)
        assert "PERMISSION_DENIED" in str(ei.value) or ei.value.code().name == "PERMISSION_DENIED"
        assert env.pipeline.table_entries("MyIngress.ipv4_lpm") == []
        # the backup can still read (no arbitration needed for Read)
        entity = p4runtime_pb2.Entity()
        entity.table_entry.table_id = te.id
        assert [list(r.entities) for r in backup.read_one(entity)] == [[]]
    finally:
        backup.tear_down()


def test_shell_without_pipeline_push_reads_current_config(env, config_files):
    sh.setup(device_id=DEVICE_ID, grpc_addr=env.addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(*config_files), verbose=False)
    sh.teardown()
    time.sleep(0.1)
    # a second shell session just fetches the P4Info the switch runs
    sh.setup(device_id=DEVICE_ID, grpc_addr=env.addr, election_id=(0, 2), verbose=False)
    try:
        assert sh.context.get_table_id("ipv4_lpm")
    finally:
        sh.teardown()


def test_get_pipeline_without_config_fails_cleanly(env):
    c = P4RuntimeClient(DEVICE_ID, env.addr, (0, 1))
    try:
        with pytest.raises(P4RuntimeException, match="FAILED_PRECONDITION"):
            c.get_p4info()
    finally:
        c.tear_down()
