"""htsim's connection matrices: export then import keeps the schedule, triggers and barriers
order the flows as htsim's do (checked by running them in the simulator), errors name the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from model.spec import fat_tree
from sim.network import SimConfig, SimNetwork
from traffic.schedules import GENERATORS, ScheduleError
from traffic.schedules.cm import (
    CmError,
    failed_links,
    format_cm,
    from_schedule,
    load_cm,
    parse_cm,
    to_schedule,
)


def flows(s):
    return sorted((r, x.dst, x.bytes, x.flow) for r, _, x in s.sends())


@pytest.mark.parametrize("gen", ["ring_allreduce", "halving_doubling_allreduce", "alltoall",
                                 "allgather", "moe_alltoall"])
def test_export_then_import_keeps_flows_and_dependencies(gen: str) -> None:
    s = GENERATORS[gen](8, 1 << 16)
    text = format_cm(from_schedule(s))
    back = to_schedule(parse_cm(text, "x.cm"))
    assert flows(back) == flows(s)
    # the imported schedule exports to the same matrix: the same triggers on the same events
    assert format_cm(from_schedule(back)) == text
    assert not from_schedule(s).comments


def test_ring_allreduce_round_trip_runs_the_same_in_the_simulator() -> None:
    spec = fat_tree(4)
    s = GENERATORS["ring_allreduce"](4, 64_000)
    back = to_schedule(parse_cm(format_cm(from_schedule(s))))
    cct = [SimNetwork(spec, "ecmp", SimConfig()).run(x).cct_s for x in (s, back)]
    assert cct[0] is not None and cct[0] == pytest.approx(cct[1], rel=1e-9)


def test_lockstep_ring_exports_barriers_on_receive_and_send_done() -> None:
    cm = from_schedule(GENERATORS["ring_allreduce"](3, 3000))
    f0 = [f for f in cm.flows if f.src == 0]
    assert f0[0].start_us == 0.0 and f0[0].trigger is None
    # rank 0's second send waits for its first send's ACKs and the chunk from rank 2
    t = cm.triggers[f0[1].trigger]  # type: ignore[index]  # the second flow has a trigger
    assert t.kind == "barrier" and t.count == 2
    assert f0[0].send_done == t.id
    incoming = next(f for f in cm.flows if f.src == 2 and f.dst == 0 and f.recv_done == t.id)
    assert incoming.start_us == 0.0


HAND = """\
Nodes 16
Connections 7
Triggers 3
# a chain on one sender, a barrier on two receptions, a multishot on two ACKs
0->5 id 1 start 0 size 40000 send_done_trigger 1
0->6 id 2 trigger 1 size 40000
1->3 id 3 start 0 size 40000 recv_done_trigger 2
2->3 id 4 start 5 size 80000 recv_done_trigger 2
3->9 id 5 trigger 2 size 40000
3->10 id 6 trigger 3 size 20000
3->11 id 7 start 0 size 10000 send_done_trigger 3
trigger id 1 oneshot
trigger id 2 barrier count 2
trigger id 3 multishot
"""


def test_triggers_and_barriers_order_flows_in_the_simulator() -> None:
    s = to_schedule(parse_cm(HAND, "hand.cm"))
    res = SimNetwork(fat_tree(4), "ecmp", SimConfig()).run(s)
    assert res.ok
    df = res.flows().set_index("flow")
    sent = res.received().set_index("flow")
    # htsim id N is flow N - 1
    assert df.loc[1, "start"] >= df.loc[0, "finish"]                 # oneshot on send_done
    assert df.loc[4, "start"] >= max(sent.loc[2, "finish"], sent.loc[3, "finish"])  # barrier
    assert df.loc[5, "start"] >= df.loc[6, "finish"]                 # multishot on send_done
    assert df.loc[3, "start"] == pytest.approx(5e-6)                # start time (µs)
    # the gate steps wait at the flow's own node
    gates = [st for st in s.programs[3] if st.label.startswith("trigger")]
    assert sorted(r.flow for r in gates[0].recvs) == [2, 3]


def test_untimed_flows_without_ids_are_numbered_after_the_given_ones() -> None:
    cm = parse_cm("Nodes 4\nConnections 2\n0->1 start 0 size 10\n1->2 id 5 start 0 size 10\n")
    assert [f.id for f in cm.flows] == [6, 5]


@pytest.mark.parametrize("text, where, msg", [
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 10 colour 3\n", ":3:", "unknown token"),
    ("Nodes 4\nConnections 2\n0->1 id 1 start 0 size 10\n", ":2:", "Connections 2, but"),
    ("Nodes 4\n0->9 id 1 start 0 size 10\n", ":2:", "out of range"),
    ("Nodes 4\n\n0->1 id 1 size 10\n", ":3:", "no start time and no trigger"),
    ("Nodes 4\n0->1 id 1 start 0 trigger 1 size 10\n", ":2:", "both a start time"),
    ("Nodes 4\n0->1 id 1 start 0 size x\n", ":2:", "size: expected an integer"),
    ("Nodes 4\n0->1 id 1 start 0 size 5\n1->2 id 1 start 0 size 5\n", ":3:", "already used"),
    ("Nodes 4\nTriggers 1\n0->1 id 1 trigger 7 size 5\ntrigger id 7\n", ":4:",
     "without a type"),
    ("Nodes 4\n0->1 id 1 trigger 7 size 5\n", ":2:", "not defined"),
    ("Nodes 4\nTriggers 1\n0->1 id 1 trigger 7 size 5\ntrigger id 7 oneshot\n", ":4:",
     "never activated"),
    ("Nodes 4\nTriggers 1\n0->1 id 1 start 0 size 5 recv_done_trigger 7\n"
     "2->3 id 2 trigger 7 size 5\ntrigger id 7 oneshot\n", ":4:", "at its own node"),
    ("Nodes 4\nTriggers 1\n0->1 id 1 start 0 size 5 send_done_trigger 7\n"
     "1->2 id 2 start 0 size 5 send_done_trigger 7\n0->2 id 3 trigger 7 size 5\n"
     "trigger id 7 barrier count 3\n", ":6:", "counts 3 activations but 2"),
    ("Nodes 4\nfrobnicate\n", ":2:", "unknown line"),
])
def test_errors_name_file_and_line(text: str, where: str, msg: str) -> None:
    with pytest.raises(CmError) as e:
        to_schedule(parse_cm(text, "bad.cm"), where="bad.cm")
    assert str(e.value).startswith(f"bad.cm{where}") and msg in str(e.value), str(e.value)
    assert isinstance(e.value, ScheduleError)


def test_failures_map_to_aggregation_uplinks(tmp_path: Path) -> None:
    p = tmp_path / "f.cm"
    p.write_text("Nodes 16\nConnections 1\nFailures 1\n0->15 id 1 start 0 size 10\n"
                 "failure switch_type AGG switch_id 3 link_id 1\n")
    s = load_cm(p)
    links = failed_links(s.meta["cm_failures"], 4)
    assert links == [("agg4", "core4")]
    assert fat_tree(4).links_between(*links[0])
    with pytest.raises(ValueError, match="only AGG"):
        failed_links(parse_cm("Nodes 2\nFailures 1\n"
                              "failure switch_type TOR switch_id 0 link_id 0\n").failures, 4)


def test_unreadable_file_is_one_line() -> None:
    with pytest.raises(CmError, match="cannot read"):
        load_cm("/nonexistent/x.cm")
