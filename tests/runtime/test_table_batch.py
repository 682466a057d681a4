"""``Pipeline.table_batch`` on the real pipeline (p4src/fabric.p4): staged writes are validated
against the table plus the batch's earlier writes, the packet path sees nothing until commit,
and entries are found by match + priority without scans."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.pipeline import api

try:
    from p4switch.frontend import compile_file
    from p4switch.pipeline import Pipeline
except ImportError:  # pragma: no cover
    pytest.skip("front end / pipeline not available", allow_module_level=True)

FABRIC = Path(__file__).resolve().parents[2] / "p4src" / "fabric.p4"
E, M = api.ExactMatch, api.RangeMatch
MEMBER = "MyIngress.lb_member"
SLOTS = "MyIngress.wam_slot_to_member"
LPM = "MyIngress.ipv4_lpm"


@pytest.fixture(scope="module")
def program():
    return compile_file(str(FABRIC))


@pytest.fixture
def pipe(program):
    return Pipeline(program)


def member(g: int, i: int, port: int = 1) -> api.TableEntry:
    return api.TableEntry({"meta.lb.group_id": E(g), "meta.lb.member_idx": E(i)},
                          action="set_member", params={"port": port, "dmac": 0xA0 + i})


def hit_port(pipe, g: int, i: int):
    """What the packet path's lookup of lb_member answers: the port argument, or None (miss)."""
    action, _, args, es = pipe.tables[MEMBER].lookup((g, i))
    return None if es is None else args[0]


def test_staged_writes_are_invisible_until_commit(pipe):
    pipe.table_add(MEMBER, member(1, 0, port=3))
    b = pipe.table_batch()
    b.add(MEMBER, member(1, 1, port=4))
    b.modify(MEMBER, member(1, 0, port=5))
    assert hit_port(pipe, 1, 1) is None and hit_port(pipe, 1, 0) == 3
    assert len(pipe.table_entries(MEMBER)) == 1
    assert b.get(MEMBER, member(1, 0).match).params["port"] == 5
    b.commit()
    assert (hit_port(pipe, 1, 0), hit_port(pipe, 1, 1)) == (5, 4)
    b2 = pipe.table_batch()
    b2.delete(MEMBER, member(1, 0).match)
    assert hit_port(pipe, 1, 0) == 5
    b2.commit()
    assert hit_port(pipe, 1, 0) is None
    assert pipe.table_get(MEMBER, member(1, 0).match) is None
    assert pipe.table_get(MEMBER, member(1, 1).match).params["port"] == 4


def test_writes_see_the_batch_so_far_and_a_failed_write_stages_nothing(pipe):
    b = pipe.table_batch()
    b.add(MEMBER, member(2, 0))
    with pytest.raises(api.StateError) as e:
        b.add(MEMBER, member(2, 0))
    assert e.value.code is api.StateCode.ALREADY_EXISTS
    b.delete(MEMBER, member(2, 0).match)
    with pytest.raises(api.StateError) as e:
        b.modify(MEMBER, member(2, 0))
    assert e.value.code is api.StateCode.NOT_FOUND
    b.add(MEMBER, member(2, 0, port=7))  # delete then re-insert in one batch
    with pytest.raises(api.StateError) as e:
        b.add(MEMBER, api.TableEntry(member(2, 1).match, action="set_member",
                                     params={"port": 1 << 9, "dmac": 0}))
    assert e.value.code is api.StateCode.INVALID_ARGUMENT
    b.commit()
    assert [x.match for x in pipe.table_entries(MEMBER)] == [member(2, 0).match]
    assert hit_port(pipe, 2, 0) == 7 and hit_port(pipe, 2, 1) is None


def test_table_size_counts_staged_inserts_and_deletes(pipe):
    size = pipe.tables["MyIngress.lb_group"].table.size
    b = pipe.table_batch()
    for g in range(size):
        b.add("lb_group", api.TableEntry({"meta.lb.group_id": E(g)}, action="lb_random",
                                         params={"n_members": 1}))
    with pytest.raises(api.StateError) as e:
        b.add("lb_group", api.TableEntry({"meta.lb.group_id": E(size)}, action="lb_random",
                                         params={"n_members": 1}))
    assert e.value.code is api.StateCode.RESOURCE_EXHAUSTED
    b.delete("lb_group", {"meta.lb.group_id": E(0)})
    b.add("lb_group", api.TableEntry({"meta.lb.group_id": E(size)}, action="lb_random",
                                     params={"n_members": 1}))
    b.commit()
    assert len(pipe.table_entries("lb_group")) == size


def test_modify_keeps_the_direct_counter_unless_counters_are_given(pipe):
    route = api.TableEntry({"hdr.ipv4.dstAddr": api.LpmMatch(0x0A000000, 8)},
                           action="set_nhop", params={"port": 1, "dmac": 1})
    b = pipe.table_batch()
    b.add(LPM, route, counters=(5, 500))
    b.commit()
    b = pipe.table_batch()
    b.modify(LPM, api.TableEntry(route.match, action="drop_route"))
    b.commit()
    e = pipe.table_get(LPM, route.match)
    assert (e.action, e.packets, e.bytes) == ("MyIngress.drop_route", 5, 500)
    b = pipe.table_batch()
    b.modify(LPM, api.TableEntry(route.match, action="send_to_cpu"), counters=(0, 0))
    b.commit()
    assert pipe.table_get(LPM, route.match).packets == 0
    assert pipe.tables[LPM].lookup(0x0A010203)[0] == "MyIngress.send_to_cpu"


def test_range_table_commit_keeps_priority_order(pipe):
    """wam_slot_to_member has a range key (the general, ordered-list lookup)."""
    def slot(lo, hi, prio, idx):
        return api.TableEntry({"meta.lb.group_id": E(1), "meta.lb.wam_slot": M(lo, hi)},
                              action="wam_set_member", params={"member_idx": idx},
                              priority=prio)
    b = pipe.table_batch()
    b.add(SLOTS, slot(0, 9, 1, 1))
    b.add(SLOTS, slot(5, 9, 2, 2))
    b.commit()
    look = pipe.tables[SLOTS].lookup
    assert (look((1, 3))[2], look((1, 7))[2]) == ((1,), (2,))
    b = pipe.table_batch()
    b.delete(SLOTS, slot(5, 9, 2, 2).match, 2)
    b.add(SLOTS, slot(0, 4, 3, 3))
    b.commit()
    assert (look := pipe.tables[SLOTS].lookup)((1, 3))[2] == (3,)
    assert look((1, 7))[2] == (1,)
