"""Pipeline.resolve caches its answers (a table write resolves its table and action): the cache
keeps the api.py semantics — full names, unambiguous dot-suffixes, control-plane action names,
kinds kept apart, failures never cached — and every instance has its own."""

from __future__ import annotations

import pytest

from p4switch.pipeline import Pipeline
from p4switch.pipeline.api import ExactMatch, StateCode, StateError, TableEntry
from sim.network import CPU_PORT, DROP_PORT, fabric_program


def _fabric() -> Pipeline:
    return Pipeline(fabric_program(), drop_port=DROP_PORT, cpu_port=CPU_PORT)


def test_cached_answers_keep_the_name_rules() -> None:
    p = _fabric()
    for _ in range(2):  # the second round is answered from the cache
        assert p.resolve("table", "lb_member") == "MyIngress.lb_member"
        assert p.resolve("table", "MyIngress.lb_member") == "MyIngress.lb_member"
        assert p.resolve("register", "port_qdepth_max") == "MyEgress.port_qdepth_max"
        full = p.resolve("action", "MyIngress.set_member")
        assert p.resolve("action", "set_member") == full
    # a name of one kind is not an answer for another kind, cached or not
    with pytest.raises(StateError) as e:
        p.resolve("table", "set_member")
    assert e.value.code == StateCode.NOT_FOUND
    for _ in range(2):  # a miss is not cached as anything
        with pytest.raises(StateError):
            p.resolve("counter", "no_such_counter")
    with pytest.raises(StateError) as e:
        p.resolve("nonsense", "lb_member")
    assert e.value.code == StateCode.INVALID_ARGUMENT


def test_writes_by_suffix_use_the_cache_and_reach_the_table() -> None:
    p = _fabric()
    for i in range(3):
        p.table_add("lb_member", TableEntry(
            match={"meta.lb.group_id": ExactMatch(1), "meta.lb.member_idx": ExactMatch(i)},
            action="set_member", params={"port": 10 + i, "dmac": 2}))
    got = {e.match["meta.lb.member_idx"].value: e.params["port"]
           for e in p.table_entries("MyIngress.lb_member")}
    assert got == {0: 10, 1: 11, 2: 12}
    assert p._resolved[("table", "lb_member")] == "MyIngress.lb_member"


def test_each_instance_has_its_own_cache() -> None:
    p = _fabric()
    p.resolve("table", "ipv4_lpm")
    q = p.new_instance()
    assert q._resolved == {}
    assert q.resolve("table", "ipv4_lpm") == "MyIngress.ipv4_lpm"
    p._names_changed()
    assert p._resolved == {} and p.resolve("table", "ipv4_lpm") == "MyIngress.ipv4_lpm"
