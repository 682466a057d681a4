"""Client arbitration as P4Runtime 1.1+ specifies it (§5.3-5.4 of the 1.4 spec): no automatic
promotion, and a client is primary only with an election id >= the highest ever seen for its
(device, role). Issue 12: p4switch promoted the highest remaining client (pre-1.1 model)."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2
from runtime_client import RawClient, sample_bundle_bytes
from test_errors import ids, lpm_update

OK, BACKUP, NO_PRIMARY = code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.NOT_FOUND


@pytest.fixture
def i(sample_p4info):
    return ids(sample_p4info)


@pytest.fixture
def clients(env):
    made: list[RawClient] = []

    def make(eid):
        c = RawClient(env.addr, eid)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def status(msg) -> tuple[int, tuple[int, int] | None]:
    a = msg.arbitration
    eid = (a.election_id.high, a.election_id.low) if a.HasField("election_id") else None
    return a.status.code, eid


def can_write(c: RawClient, i) -> grpc.StatusCode:
    try:
        c.write(lpm_update(i, value=bytes([10, c.election_id[1], 0, 0]), plen=16))
        return grpc.StatusCode.OK
    except grpc.RpcError as e:
        return e.code()


def test_primary_leaves_and_the_backup_stays_backup_until_it_claims_a_higher_id(
        env, clients, sample_p4info, i):
    a, b = clients((0, 5)), clients((0, 3))
    assert status(a.arbitrate()) == (OK, (0, 5))
    assert status(b.arbitrate()) == (BACKUP, (0, 5))
    a.set_pipeline(sample_p4info, sample_bundle_bytes())
    assert can_write(b, i) == grpc.StatusCode.PERMISSION_DENIED
    # the primary disconnects: the backup is told there is no primary, and is not promoted
    a.close()
    assert status(b.next_message("arbitration")) == (NO_PRIMARY, (0, 5))
    assert can_write(b, i) == grpc.StatusCode.PERMISSION_DENIED
    # re-arbitrating below the highest id ever seen (5) does not make it primary
    assert status(b.arbitrate((0, 4))) == (NO_PRIMARY, (0, 5))
    assert can_write(b, i) == grpc.StatusCode.PERMISSION_DENIED
    # claiming an id >= 5 does
    assert status(b.arbitrate((0, 6))) == (OK, (0, 6))
    assert can_write(b, i) == grpc.StatusCode.OK
    # a newcomer below the highest id is a backup, told the primary's id
    c = clients((0, 5))
    assert status(c.arbitrate()) == (BACKUP, (0, 6))
    assert can_write(c, i) == grpc.StatusCode.PERMISSION_DENIED


def test_a_primary_that_steps_down_promotes_nobody(env, clients, i):
    a, b = clients((0, 7)), clients((0, 6))
    assert status(a.arbitrate())[0] == OK
    assert status(b.arbitrate())[0] == BACKUP
    # a lowers its id below b's: no primary at all (b is not promoted), both are told
    assert status(a.arbitrate((0, 2))) == (NO_PRIMARY, (0, 7))
    assert status(b.next_message("arbitration")) == (NO_PRIMARY, (0, 7))
    # b claims 7 (equal to the highest seen: allowed) and becomes primary; a hears of it
    assert status(b.arbitrate((0, 7))) == (OK, (0, 7))
    assert status(a.next_message("arbitration")) == (BACKUP, (0, 7))


def test_a_new_primary_is_announced_to_the_old_one(env, clients):
    a, b = clients((0, 1)), clients((0, 2))
    assert status(a.arbitrate())[0] == OK
    assert status(b.arbitrate()) == (OK, (0, 2))
    assert status(a.next_message("arbitration")) == (BACKUP, (0, 2))


@pytest.mark.parametrize("change", ["device", "role"])
def test_a_stream_cannot_change_device_or_role(env, clients, change):
    a = clients((0, 1))
    assert status(a.arbitrate())[0] == OK
    if change == "device":
        err = a.arbitrate(device_id=a.device_id + 1)
    else:
        err = a.arbitrate(role="other")
    assert isinstance(err, grpc.RpcError)
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_first_update_with_unknown_device_is_not_found(env, clients):
    err = clients((0, 1)).arbitrate(device_id=42)
    assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.NOT_FOUND


def test_write_for_an_unknown_role_is_not_found(loaded, client, i):
    with pytest.raises(grpc.RpcError) as ei:
        client.write(lpm_update(i), role="nobody")
    assert ei.value.code() == grpc.StatusCode.NOT_FOUND
    # a known role whose primary is someone else: PERMISSION_DENIED
    other = RawClient(loaded.addr, (0, 9))
    try:
        assert status(other.arbitrate(role="ops"))[0] == OK
        with pytest.raises(grpc.RpcError) as ei:
            client.write(lpm_update(i), role="ops")
        assert ei.value.code() == grpc.StatusCode.PERMISSION_DENIED
    finally:
        other.close()
