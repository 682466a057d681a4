"""bench/agent_bench.py's in-process loops time whole flows: a loop the window stopped early
reported a few packets' CPU as the whole flow's (it printed ~1e9 pkt/s per path policy once
the transport's default algorithm became DCTCP, whose first window is 16 packets)."""

from __future__ import annotations

import pytest

from tests.netutil import load_bench
from traffic.frames import FrameCache

bench = load_bench("agent_bench")


def _frames_built(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the frames the loop builds (one per packet it sends), independently of what it
    reports."""
    built = [0]
    frame = FrameCache.frame

    def counting(self: FrameCache, *a: object, **kw: object) -> bytes:
        built[0] += 1
        return frame(self, *a, **kw)

    monkeypatch.setattr(FrameCache, "frame", counting)
    return built


@pytest.mark.parametrize("policy", bench.POLICIES)
def test_sender_loop_sends_every_packet_of_the_flow(policy: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    built = _frames_built(monkeypatch)
    r = bench.sender_loop(policy, 300)
    assert built[0] == r["packets"] == 300
    assert r["pps"] > 0


@pytest.mark.parametrize("cc", bench.CCS)
def test_cc_loop_sends_every_packet_of_the_flow(cc: str, monkeypatch: pytest.MonkeyPatch) -> None:
    built = _frames_built(monkeypatch)
    r = bench.cc_loop(cc, 300)
    assert built[0] == r["packets"] == 300
    assert r["pps"] > 0


@pytest.mark.parametrize("cc", bench.CCS)
def test_cc_bottleneck_loop_runs_at_the_bottleneck_rate(cc: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every algorithm ends up sending at the bottleneck's rate (the figure compares work per
    packet at one packet rate); only ECN-capable senders are marked, DCTCP's queue draws
    marks and holds the window below the cap."""
    built = _frames_built(monkeypatch)
    r = bench.cc_bottleneck_loop(cc, 3000)
    assert built[0] == r["packets"] == 3000
    assert 0.85 <= r["share"] <= 1.0 + 1e-9, r
    if cc == "none":
        assert r["ce"] == 0
    if cc == "dctcp":
        assert r["ce"] > 0 and r["mean_window"] < 256


def test_cc_loops_take_either_marking() -> None:
    for marking in bench.CC_LOOPS:
        rows = bench.cc_loops(200, rounds=1, marking=marking)
        assert [r["cc"] for r in rows] == list(bench.CCS)
        # the bottleneck loop reports its queue's figures; the fixed one has none
        assert all(("share" in r) is (marking == "bottleneck") for r in rows)
