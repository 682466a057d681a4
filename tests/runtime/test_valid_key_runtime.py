"""A validity key over P4Runtime, end to end: its P4Info name is ``hdr.g.$valid$`` (as p4c's),
and an entry written by that name (p4runtime-shell resolves it to the match-field id) is what
the real pipeline matches on; an error key takes the error's code."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2
from p4runtime_sh import shell as sh

PROGRAM = Path(__file__).resolve().parents[1] / "stf" / "programs" / "any_type_keys.p4"


@pytest.fixture
def switch(tmp_path):
    from conftest import shell_switch

    with shell_switch(PROGRAM, tmp_path, (0, 1), cpu_port=255) as (_sw, ports, _addr, info):
        yield ports, info


def test_entries_by_valid_and_error_keys_drive_the_pipeline(switch):
    ports, info = switch
    flags = next(t for t in info.tables if t.preamble.name == "MyIngress.by_flags")
    assert [m.name for m in flags.match_fields] == ["meta.two", "hdr.g.$valid$"]
    te = sh.TableEntry("MyIngress.by_flags")(action="MyIngress.set_r2")
    te.match["meta.two"] = "0"
    te.match["hdr.g.$valid$"] = "1"
    te.action["v"] = "0x42"
    te.insert()
    # the error key has no P4Info bitwidth: written by id with the code of BadTag (7)
    by_err = next(t for t in info.tables if t.preamble.name == "MyIngress.by_error_cp")
    set_r3 = next(a for a in info.actions if a.preamble.name == "MyIngress.set_r3")
    upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    e = upd.entity.table_entry
    e.table_id = by_err.preamble.id
    fm = e.match.add(field_id=by_err.match_fields[0].id)
    fm.exact.value = b"\x07"
    e.action.action.action_id = set_r3.preamble.id
    e.action.action.params.add(param_id=1, value=b"\x77")
    sh.client.write_update(upd)

    pad = bytes(12)  # ports take Ethernet-sized frames (>= 14 bytes); the program ignores it
    ports[0].feed(bytes.fromhex("01aaaaaa55") + pad)  # tag 1: g valid, not two
    ports[0].feed(bytes.fromhex("03aaaaaa66") + pad)  # tag 3: g invalid
    ports[0].feed(bytes.fromhex("ffaaaaaa66") + pad)  # verify fails: BadTag
    sent = ports[1].wait_sent(3, timeout=60)
    assert sent == [bytes.fromhex("0100420055") + pad, bytes.fromhex("0300000066") + pad,
                    bytes.fromhex("ff00007766") + pad]
