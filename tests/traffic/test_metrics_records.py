"""A rank record written by the agent (traffic.metrics.RankMetrics.to_json) reads back typed,
merges into the job's summary, and a bad one is refused with one line saying where."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traffic.metrics import (
    CollectiveTime,
    FlowRecord,
    RankMetrics,
    RecordError,
    RecvRecord,
    StepRecord,
    fct_summary,
    merge_ranks,
    summarize,
)


def rank(r: int, got: int = 100) -> RankMetrics:
    """Rank ``r`` of two: one flow of 100 bytes to the other rank, one received (``got``)."""
    return RankMetrics(
        rank=r, host=f"h{r}", job=1, schedule="ring", start=1.0, finish=3.0, completed=True,
        flows=[FlowRecord(flow=r, src=r, dst=1 - r, step=0, collective=0, bytes=100, packets=1,
                          packets_sent=2, posted=1.0, start=1.5, finish=2.0 + r,
                          retransmissions=1, acked_packets=2, ce_acked=1)],
        received=[RecvRecord(flow=1 - r, src=1 - r, dst=r, bytes=got, packets=1,
                             packets_received=1, arrivals=1, duplicates=0, reordered=r,
                             reorder_distance={2: r}, start=1.5, finish=2.5)],
        steps=[StepRecord(r, 0, "s0", 0, 0.5, 1.0 + r, 2.5 + r)],
        collectives=[CollectiveTime(0, "ring", 1.0 + r, 2.5 + r, 1.5)])


def test_a_rank_record_reads_back_as_written(tmp_path: Path) -> None:
    m = rank(1)
    m.write(tmp_path)
    text = (tmp_path / "rank1.json").read_text()
    back = RankMetrics.from_json(json.loads(text))
    assert back == m
    assert json.dumps(back.to_json(), indent=1) == text   # the file's format is kept
    assert json.loads(text)["totals"] == back.totals().to_dict()


def test_ranks_merge_into_the_job_summary(tmp_path: Path) -> None:
    for r in (0, 1):
        rank(r).write(tmp_path)
    s = summarize(tmp_path)
    assert s.completed and s.ranks == 2 and s.bytes_conserved and s.errors == []
    assert s.collectives == [CollectiveTime(0, "ring", 1.0, 3.5, 2.5)]
    assert (s.retransmissions, s.reordered, s.packets_sent) == (2, 1, 4)
    assert s.ce_fraction == 0.5 and s.tcp is None
    assert s.fct == fct_summary([1.0, 2.0]) and s.fct.tail_us == 2e6
    short = merge_ranks([rank(0), rank(1, got=99)])
    assert not short.bytes_conserved and short.flows_mismatched == [0]


def test_fct_summary_columns_keep_their_order() -> None:
    assert list(fct_summary([]).to_dict()) == [
        "flows", "flows_unfinished", "fct_min_us", "fct_tail_us", "fct_spread", "fct_p50_us",
        "fct_p90_us", "fct_p99_us"]
    assert list(fct_summary([1e-6, None]).to_dict()) == [
        "flows", "flows_unfinished", "fct_min_us", "fct_p50_us", "fct_p90_us", "fct_p99_us",
        "fct_tail_us", "fct_spread"]


@pytest.mark.parametrize(("edit", "says"), [
    (lambda d: d.pop("host"), "rank1.json: no 'host'"),
    (lambda d: d["flows"][0].pop("bytes"), "rank1.json: flows[0]: no 'bytes'"),
    (lambda d: d.update(steps={}), "rank1.json: steps is not a list"),
    (lambda d: d["received"][0].update(reorder_distance={"x": 1}),
     "rank1.json: received[0]: reorder_distance is not a histogram"),
])
def test_a_bad_rank_record_is_refused_in_one_line(edit, says: str) -> None:
    d = rank(1).to_json()
    edit(d)
    with pytest.raises(RecordError) as e:
        RankMetrics.from_json(d, "rank1.json")
    assert str(e.value) == says
