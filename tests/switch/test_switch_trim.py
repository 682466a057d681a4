"""A p4switch process with ``trim_bytes`` (``--trim-bytes``): a burst into a small, slow egress
queue is trimmed instead of dropped, and the trimmed frames leave cut to that many bytes.
An account, not timing: how many are trimmed depends on when the queue serves; that each one
is cut, counted and nothing is dropped does not."""

from __future__ import annotations

import pytest
from switch_fakes import FakePipeline, frame

from p4switch import MemoryPort, Switch

BURST, DEPTH, CUT = 12, 8, 60


@pytest.mark.parametrize("trim", [CUT, None])
def test_a_burst_into_a_full_queue_is_trimmed_not_dropped(trim: int | None) -> None:
    sw = Switch(queue_depth=DEPTH, trim_bytes=trim)
    p1, p2 = MemoryPort(1), MemoryPort(2)
    sw.add_port(p1)
    sw.add_port(p2)
    sw.set_port_rate(2, 1e6)    # a 1000-byte frame every 8 ms
    sw.set_pipeline(FakePipeline())
    sw.start()
    try:
        p1.feed([frame(2, size=1000, seq=i) for i in range(BURST)])
        stats = sw.queues.get(2).stats
        want = BURST if trim else DEPTH + 1
        sent = p2.wait_sent(want, timeout=30.0)
    finally:
        sw.stop(log_stats=False)
    cut = [f for f in sent if len(f) == CUT]
    if trim is None:
        assert stats.trimmed == 0 and stats.tail_drops > 0 and not cut
        return
    assert stats.trimmed > 0 and stats.tail_drops == 0
    assert len(sent) == BURST and len(cut) == stats.trimmed
    assert all(len(f) == 1000 for f in sent if f not in cut)
