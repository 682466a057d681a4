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
