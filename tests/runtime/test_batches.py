"""Write batches cost O(1) per update in every atomicity mode (entries are found by match and
priority, never by scanning a table: issue 12 measured 4,000 atomic DELETEs at 24 s), and a
table-entry batch is prepared outside the switch lock, which it holds only to commit."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from runtime_client import WIDE_METADATA, RawClient
from test_errors import lpm_update, per_update_codes, register_update, write_codes

U = p4runtime_pb2.Update
W = p4runtime_pb2.WriteRequest
LPM = "MyIngress.ipv4_lpm"
MODES = [W.CONTINUE_ON_ERROR, W.ROLLBACK_ON_ERROR, W.DATAPLANE_ATOMIC]


@pytest.fixture
def i(sample_p4info):
    from test_errors import ids
    return ids(sample_p4info)


@pytest.fixture
def wide(loaded):
    """The primary from now on (a higher election id), on a channel that accepts the error
    details of big failed batches."""
    c = RawClient(loaded.addr, (0, 2), options=WIDE_METADATA)
    c.arbitrate()
    yield c
    c.close()


def routes(i, n: int, utype=U.INSERT, port=b"\x01"):
    """n distinct /16 routes 10.x.y.0/24-style: (a, b) spread over two bytes."""
    return [lpm_update(i, utype, value=bytes([10 + k // 256, k % 256, 0, 0]), plen=16, port=port)
            for k in range(n)]


@pytest.mark.parametrize("atomicity", MODES)
@pytest.mark.parametrize("n", [100, 300])
def test_batches_never_scan_a_table(loaded, wide, i, atomicity, n):
    """INSERT, MODIFY and DELETE batches, and a failed DELETE batch that must roll back, copy no
    table (scanned stays 0) and look each entry up at most a couple of times."""
    pipe = loaded.pipeline
    pipe.scanned = pipe.lookups = 0
    assert write_codes(wide, *routes(i, n), atomicity=atomicity) == [code_pb2.OK] * n
    assert write_codes(wide, *routes(i, n, U.MODIFY, port=b"\x02"),
                       atomicity=atomicity) == [code_pb2.OK] * n
    bad = lpm_update(i, U.DELETE, value=b"\x0b\x00\x00\x00")  # no such route
    codes = write_codes(wide, *routes(i, n, U.DELETE), bad, atomicity=atomicity)
    assert codes[-1] == code_pb2.NOT_FOUND
    left = len(pipe.table_entries(LPM))
    pipe.scanned -= left  # that read was ours
    assert pipe.scanned == 0
    assert pipe.lookups <= 2 * (2 * n + 1)
    if atomicity == W.CONTINUE_ON_ERROR:
        assert left == 0
    else:
        assert codes[:-1] == [code_pb2.ABORTED] * n and left == n


@pytest.mark.parametrize("atomicity", [W.ROLLBACK_ON_ERROR, W.DATAPLANE_ATOMIC])
def test_mixed_batches_roll_back_without_scans(loaded, wide, i, atomicity):
    """A batch that also writes a register is applied update by update under the lock, with
    undo; finding the entries to undo still needs no scan."""
    n = 200
    wide.write(*routes(i, n))
    pipe = loaded.pipeline
    before = sorted(pipe.table_entries(LPM), key=repr)
    pipe.scanned = 0
    codes = write_codes(wide, *routes(i, n, U.MODIFY, port=b"\x03"), *routes(i, n, U.DELETE),
                        register_update(i, 99, b"\x01"), atomicity=atomicity)
    assert codes[-1] == code_pb2.OUT_OF_RANGE and set(codes[:-1]) == {code_pb2.ABORTED}
    assert pipe.scanned == 0
    assert sorted(pipe.table_entries(LPM), key=repr) == before


class _WatchedLock:
    """The switch lock, recording whether the server holds it (the loop thread captured the
    real lock's methods at start, so it is unaffected)."""

    def __init__(self, real) -> None:
        self.real = real
        self.held = 0

    def __enter__(self):
        self.real.acquire()
        self.held += 1
        return self

    def __exit__(self, *exc) -> None:
        self.held -= 1
        self.real.release()


@pytest.mark.parametrize("atomicity", MODES)
def test_table_batches_hold_the_switch_lock_only_to_commit(loaded, client, i, atomicity):
    pipe = loaded.pipeline
    lock = _WatchedLock(loaded.switch.lock)
    loaded.switch.lock = lock
    seen: list[tuple[str, int]] = []
    make = pipe.table_batch

    def table_batch():
        b = make()
        for name in ("add", "modify", "delete", "get", "commit"):
            fn = getattr(b, name)
            setattr(b, name, lambda *a, _fn=fn, _n=name, **kw: (seen.append((_n, lock.held)),
                                                                 _fn(*a, **kw))[1])
        return b

    pipe.table_batch = table_batch
    try:
        client.write(*routes(i, 50), atomicity=atomicity)
        client.write(*routes(i, 50, U.DELETE), *routes(i, 20, port=b"\x04"),
                     atomicity=atomicity)
    finally:
        loaded.switch.lock = lock.real
    prepared = [held for name, held in seen if name != "commit"]
    commits = [held for name, held in seen if name == "commit"]
    assert len(prepared) == 50 + 2 * 50 + 20 and not any(prepared)  # DELETE: get + delete
    assert commits == [1, 1]
    assert len(pipe.table_entries(LPM)) == 20


def test_failed_batch_details_fit_a_default_client_up_to_150_updates(loaded, client, i):
    """Item 6: the spec's one Error per update, in a compact form (empty for OK, code only for
    ABORTED) so that a default gRPC client reads ~200 of them; beyond its metadata limit a
    client must raise grpc.max_metadata_size, and then gets every update's code."""
    bad = lpm_update(i, U.DELETE, value=b"\x0b\x00\x00\x00")
    codes = write_codes(client, *routes(i, 150), bad, atomicity=W.ROLLBACK_ON_ERROR)
    assert codes == [code_pb2.ABORTED] * 150 + [code_pb2.NOT_FOUND]
    big = [*routes(i, 1000), bad]
    with pytest.raises(Exception) as ei:
        client.write(*big, atomicity=W.ROLLBACK_ON_ERROR)
    assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # the client refused it
    wide = RawClient(loaded.addr, (0, 1), options=WIDE_METADATA)  # same election id: a Write
    try:                                                          # needs no stream
        with pytest.raises(grpc.RpcError) as ei:
            wide.write(*big, atomicity=W.ROLLBACK_ON_ERROR)
        assert per_update_codes(ei.value) == [code_pb2.ABORTED] * 1000 + [code_pb2.NOT_FOUND]
    finally:
        wide.close()
    assert loaded.pipeline.table_entries(LPM) == []


def test_reads_copy_under_the_lock_and_encode_outside_it(loaded, client, i, monkeypatch):
    from p4switch.runtime import entities

    client.write(*routes(i, 30))
    lock = _WatchedLock(loaded.switch.lock)
    loaded.switch.lock = lock
    copies: list[int] = []
    encodes: list[int] = []
    pipe = loaded.pipeline
    real_entries, real_encode = pipe.table_entries, entities.Entities.encode_match
    monkeypatch.setattr(pipe, "table_entries",
                        lambda t: (copies.append(lock.held), real_entries(t))[1])
    monkeypatch.setattr(entities.Entities, "encode_match",
                        lambda self, t, m: (encodes.append(lock.held), real_encode(self, t, m))[1])
    try:
        got = client.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
    finally:
        loaded.switch.lock = lock.real
    assert len(got) >= 30  # ours, plus the sample program's const entries
    assert copies and all(h == 1 for h in copies)
    assert len(encodes) == len(got) and not any(encodes)
