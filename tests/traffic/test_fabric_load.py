"""bench/fabric_load.py (fabric_bench's load generator): the sink's distinct-sequence counter on
hand-made batches, and a sender -> sink run over loopback in both sender modes (UDP GSO and
sendmmsg): every datagram counted once, the sender's report names its mode. No timing
asserts: the benchmark prints figures."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.netutil import load_bench

fl = load_bench("fabric_load")


def test_counter_counts_distinct_sequence_numbers_per_source() -> None:
    c = fl.SeqCounter()
    a, b = fl.source_key("10.0.0.1", 45000), fl.source_key("10.0.0.2", 45000)
    assert a != b
    keys = np.array([a, a, b, a, b], dtype=np.int64)
    c.add_batch(keys, np.array([0, 1, 0, 1, 7], dtype=np.int64))   # a's 1 twice
    assert c.total() == 4
    c.add_batch(np.array([a] * 3, dtype=np.int64), np.array([1, 2, 2], dtype=np.int64))
    assert c.total() == 5
    big = 5 * (1 << 16) + 3        # beyond the first bitmap: it grows, keeping what it had
    c.add(b, np.array([big], dtype=np.int64))
    assert c.total() == 6 and bool(c.seen[b][7]) and bool(c.seen[b][big])
    c.add_batch(np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    assert c.total() == 6


def test_gso_segments_fit_one_ip_datagram() -> None:
    assert fl.gso_segments(1400) == 46          # 46 x 1400 = 64,400 <= 65,507
    assert fl.gso_segments(100) == fl.GSO_MAX_SEGMENTS
    assert fl.gso_segments(70000) == 1


@pytest.mark.parametrize("mode", ["gso", "mmsg"])
def test_sender_to_sink_over_loopback(mode: str) -> None:
    sink = subprocess.Popen([sys.executable, fl.__file__, "sink", "1.0", "20"], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert sink.stdout is not None
        assert sink.stdout.readline().strip() == "ready"
        count = 300
        snd = subprocess.run([sys.executable, fl.__file__, "send", "127.0.0.1", "0", str(count),
                              "100", "3000", str(time.time()), mode, "5"],
                             capture_output=True, text=True, timeout=60, check=True)
        rep = json.loads(snd.stdout.strip().splitlines()[-1])
        assert rep["mode"] == mode and rep["errors"] == 0
        assert rep["segments"] == (fl.gso_segments(100) if mode == "gso" else 0)
        assert rep["batch"] == 15          # 3000/s x 5 ms
        out, _err = sink.communicate(timeout=60)
        res = json.loads(out.strip().splitlines()[-1])
        assert res["got"] == count
        assert res["first"] is not None and res["last"] >= res["first"]
    finally:
        if sink.poll() is None:
            sink.kill()
            sink.wait(5)
