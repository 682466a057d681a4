"""docs/p4runtime.md's conformance table is what the server answers: every row is run here
(each case in a fresh server), and a row without a case, or a case without a row, fails."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from runtime_client import RawClient, sample_bundle_bytes
from test_errors import ids, lpm_update, register_update, write_codes

DOC = Path(__file__).resolve().parents[2] / "docs" / "p4runtime.md"
U = p4runtime_pb2.Update
W = p4runtime_pb2.WriteRequest
SetReq = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetReq = p4runtime_pb2.GetForwardingPipelineConfigRequest


def documented() -> dict[str, str]:
    """case id -> code name, from the table under '## Conformance'."""
    text = DOC.read_text().split("## Conformance", 1)[1]
    rows = re.findall(r"^\| `([\w-]+)` \|[^|]+\|[^|]+\| `([A-Z_]+)` \|$", text, re.M)
    return dict(rows)


@dataclass
class Ctx:
    env: object
    client: RawClient
    p4info: object
    others: list[RawClient]

    @property
    def i(self) -> dict[str, int]:
        return ids(self.p4info)

    def load(self) -> None:
        self.client.set_pipeline(self.p4info, sample_bundle_bytes())

    def new_client(self, eid, **kw) -> RawClient:
        c = RawClient(self.env.addr, eid, **kw)
        self.others.append(c)
        return c


def rpc_code(fn: Callable[[], object]) -> str:
    try:
        fn()
        return "OK"
    except grpc.RpcError as e:
        return e.code().name


def arb_code(msg) -> str:
    if isinstance(msg, grpc.RpcError):
        return msg.code().name
    return code_pb2.Code.Name(msg.arbitration.status.code)


def update_code(ctx: Ctx, *updates, at: int = 0, **kw) -> str:
    return code_pb2.Code.Name(write_codes(ctx.client, *updates, **kw)[at])


def set_req(ctx: Ctx, action, cfg: bool = True, device_id: int = 1, election=(0, 1)):
    req = SetReq(device_id=device_id, action=action)
    req.election_id.high, req.election_id.low = election
    if cfg:
        req.config.p4info.CopyFrom(ctx.p4info)
        req.config.p4_device_config = sample_bundle_bytes()
    return lambda: ctx.client.stub.SetForwardingPipelineConfig(req)


def _primary_left(ctx: Ctx) -> str:
    b = ctx.new_client((0, 0))
    b.arbitrate()
    ctx.client.close()
    return arb_code(b.next_message("arbitration"))


def _rearbitrate_after_leave(ctx: Ctx, eid) -> str:
    b = ctx.new_client((0, 0))
    b.arbitrate()
    ctx.client.close()
    b.next_message("arbitration")
    return arb_code(b.arbitrate(eid))


def _backup_write(ctx: Ctx) -> str:
    ctx.load()
    b = ctx.new_client((0, 0))
    b.arbitrate()
    return rpc_code(lambda: b.write(lpm_update(ctx.i)))


def _bool_register(ctx: Ctx) -> str:
    upd = register_update(ctx.i, 1, b"\x01")
    upd.entity.register_entry.data.ClearField("bitstring")
    upd.entity.register_entry.data.bool = True
    return update_code(ctx, upd)


def _wildcard(ctx: Ctx, kind: str) -> str:
    upd = U(type=U.MODIFY)
    if kind == "register":
        upd = register_update(ctx.i, 0, b"\x01")
        upd.entity.register_entry.ClearField("index")
    else:
        upd.entity.counter_entry.counter_id = ctx.i["port_counter"]
        upd.entity.counter_entry.data.packet_count = 1
    return update_code(ctx, upd)


def _read(ctx: Ctx, entity: p4runtime_pb2.Entity) -> str:
    return rpc_code(lambda: ctx.client.read(entity))


def _negative_register_read(ctx: Ctx) -> str:
    return _read(ctx, p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry(
        register_id=ctx.i["flowlet_ts"], index=p4runtime_pb2.Index(index=-1))))


def _unknown_table(ctx: Ctx) -> str:
    upd = lpm_update(ctx.i)
    upd.entity.table_entry.table_id = 0x0200FFFF
    return update_code(ctx, upd)


def _too_wide(ctx: Ctx) -> str:
    return update_code(ctx, lpm_update(ctx.i, value=b"\x01\x0a\x00\x00\x00"))


def _commit_with_config(ctx: Ctx) -> str:
    set_req(ctx, SetReq.VERIFY_AND_SAVE)()
    return rpc_code(set_req(ctx, SetReq.COMMIT))


def _bad_bundle(ctx: Ctx) -> str:
    req = SetReq(device_id=1, action=SetReq.VERIFY_AND_COMMIT)
    req.election_id.low = 1
    req.config.p4_device_config = b"\x00garbage"
    return rpc_code(lambda: ctx.client.stub.SetForwardingPipelineConfig(req))


def _aborted(ctx: Ctx) -> str:
    bad = lpm_update(ctx.i, U.MODIFY, value=b"\x0e\x00\x00\x00")
    return update_code(ctx, lpm_update(ctx.i), bad, atomicity=W.ROLLBACK_ON_ERROR)


# case id -> (needs the sample pipeline loaded first, what the server answers)
CASES: dict[str, tuple[bool, Callable[[Ctx], str]]] = {
    "caps": (False, lambda c: rpc_code(
        lambda: c.client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()))),
    "arb-first": (False, lambda c: arb_code(c.new_client((0, 9)).arbitrate())),
    "arb-lower": (False, lambda c: arb_code(c.new_client((0, 0)).arbitrate())),
    "arb-higher": (False, lambda c: arb_code(c.new_client((0, 2)).arbitrate())),
    "arb-primary-left": (False, _primary_left),
    "arb-below-highest": (False, lambda c: _rearbitrate_after_leave(c, (0, 0))),
    "arb-equal-highest": (False, lambda c: _rearbitrate_after_leave(c, (0, 1))),
    "arb-unknown-device": (False, lambda c: arb_code(
        c.new_client((0, 5)).arbitrate(device_id=77))),
    "arb-duplicate-id": (False, lambda c: arb_code(c.new_client((0, 1)).arbitrate())),
    "arb-change-device": (False, lambda c: arb_code(c.client.arbitrate(device_id=2))),
    "arb-change-role": (False, lambda c: arb_code(c.client.arbitrate(role="ops"))),
    "set-backup": (False, lambda c: (c.new_client((0, 0)).arbitrate(), rpc_code(
        set_req(c, SetReq.VERIFY, election=(0, 0))))[1]),
    "set-unknown-device": (False, lambda c: rpc_code(set_req(c, SetReq.VERIFY, device_id=3))),
    "set-verify-no-config": (False, lambda c: rpc_code(set_req(c, SetReq.VERIFY, cfg=False))),
    "set-commit-no-config": (False, lambda c: rpc_code(
        set_req(c, SetReq.VERIFY_AND_COMMIT, cfg=False))),
    "set-commit-with-config": (False, _commit_with_config),
    "set-commit-unsaved": (False, lambda c: rpc_code(set_req(c, SetReq.COMMIT, cfg=False))),
    "set-bad-bundle": (False, _bad_bundle),
    "get-unconfigured": (False, lambda c: rpc_code(
        lambda: c.client.stub.GetForwardingPipelineConfig(GetReq(device_id=1)))),
    "write-unconfigured": (False, lambda c: rpc_code(lambda: c.client.write(lpm_update(c.i)))),
    "write-backup": (False, _backup_write),
    "write-unknown-role": (True, lambda c: rpc_code(
        lambda: c.client.write(lpm_update(c.i), role="nobody"))),
    "write-ok": (True, lambda c: update_code(c, lpm_update(c.i))),
    "write-unknown-table": (True, _unknown_table),
    "write-duplicate": (True, lambda c: update_code(c, lpm_update(c.i), lpm_update(c.i), at=1)),
    "write-modify-missing": (True, lambda c: update_code(c, lpm_update(c.i, U.MODIFY))),
    "write-too-wide": (True, _too_wide),
    "write-aborted": (True, _aborted),
    "write-register-bool": (True, _bool_register),
    "write-register-negative": (True, lambda c: update_code(
        c, register_update(c.i, -1, b"\x01"))),
    "write-register-past-end": (True, lambda c: update_code(
        c, register_update(c.i, 16, b"\x01"))),
    "write-register-wildcard": (True, lambda c: _wildcard(c, "register")),
    "write-counter-wildcard": (True, lambda c: _wildcard(c, "counter")),
    "read-unconfigured": (False, lambda c: _read(c, p4runtime_pb2.Entity(
        table_entry=p4runtime_pb2.TableEntry()))),
    "read-unknown-table": (True, lambda c: _read(c, p4runtime_pb2.Entity(
        table_entry=p4runtime_pb2.TableEntry(table_id=0x0200FFFF)))),
    "read-register-negative": (True, _negative_register_read),
    "read-wildcard": (True, lambda c: _read(c, p4runtime_pb2.Entity(
        table_entry=p4runtime_pb2.TableEntry()))),
}


def test_every_documented_case_is_tested_and_vice_versa():
    doc = documented()
    assert len(doc) >= 30
    assert sorted(doc) == sorted(CASES)


@pytest.mark.parametrize("case", sorted(documented()))
def test_the_server_answers_what_the_table_says(env, client, sample_p4info, case):
    ctx = Ctx(env, client, sample_p4info, [])
    needs_pipeline, run = CASES[case]
    try:
        if needs_pipeline:
            ctx.load()
        assert run(ctx) == documented()[case]
    finally:
        for c in ctx.others:
            c.close()
