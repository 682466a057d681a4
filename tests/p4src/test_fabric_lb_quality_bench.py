"""bench/lb_quality.py: its metrics on hand-made sequences, and a tiny end-to-end run (no timing
asserts: the benchmark prints figures)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.netutil import load_bench

lbq = load_bench("lb_quality")


def test_reordered_counts_packets_overtaken_by_later_ones_of_their_flow() -> None:
    lat = [0.0, 10.0]  # member 1 is 10 us slower
    # flow 0: sent at 0 (slow), 1 (fast), 2 (fast): packet 0 arrives at 10, after 1 and 2
    members = np.array([1, 0, 0])
    flows = np.array([0, 0, 0])
    assert lbq.reordered(members, flows, lat) == 1
    # the overtaking packet belongs to another flow: no reordering
    assert lbq.reordered(members, np.array([0, 1, 1]), lat) == 0
    # same member throughout: a FIFO never reorders
    assert lbq.reordered(np.array([1, 1, 1, 1]), np.zeros(4, dtype=np.int64), lat) == 0
    # the gap exceeds the latency difference: in order
    members = np.array([1] + [0] * 20)
    sent_flows = np.array([0] + [1] * 9 + [0] * 11)
    assert lbq.reordered(members, sent_flows, lat) == 0
    # two slow packets, each overtaken
    assert lbq.reordered(np.array([1, 1, 0]), np.zeros(3, dtype=np.int64), lat) == 2


def test_max_window_deviation_by_hand() -> None:
    seq = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    assert lbq.max_window_deviation(seq, [0.5, 0.5], 8) == 0.5
    seq = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    assert lbq.max_window_deviation(seq, [0.5, 0.5], 8) == 2.0
    assert lbq.max_window_deviation(seq, [0.5, 0.5], 1) == 0.5
    assert lbq.max_window_deviation(np.array([0, 0, 1]), [2 / 3, 1 / 3], 3) == pytest.approx(
        2 / 3)


def test_wam_balls_and_member_slots() -> None:
    assert lbq.wam_balls([5, 2, 1], 8) == [5, 2, 1]
    assert lbq.wam_balls([1, 1, 1], 64) == [22, 21, 21]
    assert lbq.member_slots([2, 0, 1]) == [0, 0, 2]


def test_small_end_to_end_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert lbq.main(["--packets", "300", "--schemes", "ecmp,wam", "--log2-m", "4"]) == 0
    out = capsys.readouterr().out
    assert "reordered" in out
    rows = {cells[0]: cells for line in out.splitlines()
            if (cells := [c.strip() for c in line.strip("│ ").split("│")]) and len(cells) == 6}
    assert {"ecmp", "wam"} <= set(rows)
    # WaM with 4 equal members and m = 16: every window within log2 m = 4 of its share
    assert float(rows["wam"][3]) <= 4.0
    assert float(rows["wam"][2]) == pytest.approx(1.0, abs=0.02)


def test_bad_arguments_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        lbq.main(["--schemes", "nope"])
    assert exc.value.code == 2
    assert "unknown scheme 'nope'" in capsys.readouterr().err
