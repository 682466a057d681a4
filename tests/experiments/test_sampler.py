"""topo.session.Sampler: the first and last samples are the run's before/after
counters (the Mininet backend reads every switch once there, not twice), a failed read is
recorded and returns None (the caller then reads again), and the timeline keeps counters
only on the samples asked to."""

from __future__ import annotations

import pandas as pd

from topo.session import Sampler


class FakeController:
    """Counters that count the reads; a read fails while ``fail`` is set."""

    def __init__(self) -> None:
        self.reads = 0
        self.fail = False

    def read_counters(self) -> pd.DataFrame:
        if self.fail:
            raise RuntimeError("switch busy")
        self.reads += 1
        return pd.DataFrame({"counter": ["port_tx_ctr"], "packets": [self.reads]})

    def read_queues(self, clear: bool = False, reader: str = "api") -> pd.DataFrame:
        return pd.DataFrame({"qdepth": [0]})

    def links_from_counters(self, c: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"tx_bytes": [int(c["packets"].sum())]})


def test_first_and_last_samples_are_the_runs_counters() -> None:
    ctl = FakeController()
    s = Sampler(ctl, period=3600.0)          # the thread never samples on its own here
    first = s.sample()
    s.start()
    last = s.finish()
    assert first is not None and last is not None
    assert first["packets"].tolist() == [1] and last["packets"].tolist() == [2]
    assert ctl.reads == 2                    # one Read per sample, none besides
    links, queues, counters = s.tables()
    assert links["tx_bytes"].tolist() == [1, 2] and len(queues) == 2
    assert counters.empty                    # neither sample was asked to keep its counters


def test_a_failed_read_is_recorded_and_returns_none() -> None:
    ctl = FakeController()
    s = Sampler(ctl, period=3600.0)
    assert s.sample(counters=True)["packets"].tolist() == [1]
    ctl.fail = True
    s.start()
    assert s.finish() is None
    assert len(s.errors) == 1 and "switch busy" in s.errors[0]
    assert "µs of the run (fabric time)" in s.errors[0]   # not a wall-clock stamp
    assert s.tables()[2]["packets"].tolist() == [1]   # the kept sample only
