"""``Pipeline.new_instance``: a second pipeline sharing the first one's generated code.

It must behave exactly like ``Pipeline(program)`` built from scratch — every STF program runs on
an instance made from an already used template in lock-step with a fresh pipeline, results and
state reads compared — and its state must be its own: writes through one instance are invisible
in the other, and a generated global that is state the rebinding does not know is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from p4switch.pipeline import BuildError, Pipeline
from p4switch.pipeline.api import ExactMatch, LpmMatch, StateError, TableEntry
from sim.frames import l2l3_header
from sim.network import CPU_PORT, DROP_PORT, fabric_program

ROOT = Path(__file__).resolve().parents[2]
STF = ROOT / "tests" / "stf" / "programs"
STF_PROGRAMS = sorted(p for p in STF.glob("*.p4") if p.with_suffix(".stf").exists()) \
    if STF.is_dir() else []


class Lockstep:
    """Drives two pipelines with the same calls; every answer must be equal."""

    def __init__(self, a: Pipeline, b: Pipeline) -> None:
        self.a, self.b = a, b
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        fa, fb = getattr(self.a, name), getattr(self.b, name)
        if not callable(fa):
            return fa

        def both(*args: Any, **kw: Any) -> Any:
            ra, rb = fa(*args, **kw), fb(*args, **kw)
            assert ra == rb, f"{name}{args}: new_instance {ra} != fresh {rb}"
            self.calls += 1
            return ra

        return both


def _run_stf(program: Any, pipe: Any, stf: Path) -> int:
    from p4switch.stf import syntax as stf_parse
    from p4switch.stf.runner import StfRunner

    runner = StfRunner(program, pipe, str(stf))
    return runner.run(stf_parse.parse_stf(stf.read_text(), str(stf))).exit_code


@pytest.mark.parametrize("prog", STF_PROGRAMS, ids=[p.stem for p in STF_PROGRAMS])
def test_stf_program_on_new_instance_equals_fresh_pipeline(prog: Path) -> None:
    from p4switch.stf.runner import load_program

    program = load_program(prog)
    stf = prog.with_suffix(".stf")
    template = Pipeline(program, drop_port=511, seed=1)
    assert _run_stf(program, template, stf) == 0  # the template's state is now dirty
    pair = Lockstep(template.new_instance(seed=1), Pipeline(program, drop_port=511, seed=1))
    assert _run_stf(program, pair, stf) == 0
    assert pair.calls > 0
    assert pair.a.source == pair.b.source and pair.a.fused_reason == pair.b.fused_reason


def _fabric_pair() -> tuple[Pipeline, Pipeline]:
    t = Pipeline(fabric_program(), drop_port=DROP_PORT, cpu_port=CPU_PORT, seed=3)
    return t, t.new_instance(seed=3)


def _route(pipe: Pipeline, port: int) -> None:
    pipe.table_add("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0A000000, 8)},
                                          action="set_nhop", params={"port": port, "dmac": 1}))


def test_new_instance_state_is_its_own() -> None:
    t, n = _fabric_pair()
    frame = l2l3_header("00:00:00:00:00:01", "00:00:00:00:01:00", "10.1.0.2", "10.2.0.2",
                        4791, 4791, 8) + bytes(8)
    _route(t, 2)
    assert n.table_entries("ipv4_lpm") == []
    assert n.process_fast(frame, 1, 10) != t.process_fast(frame, 1, 10)
    _route(n, 3)
    out_t, out_n = t.process_fast(frame, 1, 20), n.process_fast(frame, 1, 20)
    assert isinstance(out_t, tuple) and out_t[0] == 2
    assert isinstance(out_n, tuple) and out_n[0] == 3
    # registers and counters: writes and packet counts stay in their own pipeline
    reg = next(iter(t.registers))
    t.register_write(reg, 0, 1)
    assert n.register_read(reg, 0) == 0
    ctr = next(iter(t.counters))
    before = [n.counter_read(ctr, i) for i in range(n.counter_size(ctr))]
    for _ in range(5):
        t.process_fast(frame, 1, 30)
    assert [n.counter_read(ctr, i) for i in range(n.counter_size(ctr))] == before
    # exact tables (a dict the generated code holds directly) too
    t.table_add("port_smac", TableEntry(match={"standard_metadata.egress_port": ExactMatch(2)},
                                        action="set_smac", params={"smac": 0x0A0B0C0D0E0F}))
    assert n.table_get("port_smac", {"standard_metadata.egress_port": ExactMatch(2)}) is None
    assert t.process_fast(frame, 1, 40)[1][6:12] == bytes.fromhex("0a0b0c0d0e0f")
    assert n.process_fast(frame, 1, 40)[1][6:12] != bytes.fromhex("0a0b0c0d0e0f")
    # no mutable global is shared between the two instances' generated code
    shared = [k for k, v in t._fused.__globals__.items()
              if k != "__builtins__" and n._fused.__globals__.get(k) is v
              and isinstance(v, list | dict | set)]
    assert shared == []


def test_new_instance_refuses_unknown_state_in_globals() -> None:
    t, _ = _fabric_pair()
    t._code.globals["_stray_state"] = [0, 0]  # e.g. a future extern's array nobody rebinds
    with pytest.raises(BuildError, match="_stray_state"):
        t.new_instance()
    del t._code.globals["_stray_state"]
    t.new_instance()


def test_equal_entries_of_two_pipelines_are_stored_once_and_stay_apart() -> None:
    """Tables keep one stored copy of equal entries across pipelines (a simulated fabric adds
    the same routes to many switches); a modify, a counter write or the caller changing its
    entry afterwards shows in that pipeline only."""
    t, n = _fabric_pair()
    match = {"hdr.ipv4.dstAddr": LpmMatch(0x0A000000, 8)}
    entry = TableEntry(match=dict(match), action="set_nhop", params={"port": 2, "dmac": 1})
    t.table_add("ipv4_lpm", entry)
    entry.params["port"] = 9  # the caller's object: not what either table stored
    n.table_add("ipv4_lpm", TableEntry(match=dict(match), action="set_nhop",
                                       params={"port": 2, "dmac": 1}))
    stored = [next(iter(p.tables["MyIngress.ipv4_lpm"].entries.values())).entry
              for p in (t, n)]
    assert stored[0] is stored[1] and stored[0].params == {"port": 2, "dmac": 1}
    n.table_modify("ipv4_lpm", TableEntry(match=dict(match), action="set_nhop",
                                          params={"port": 3, "dmac": 1}))
    assert [e.params["port"] for e in t.table_entries("ipv4_lpm")] == [2]
    assert [e.params["port"] for e in n.table_entries("ipv4_lpm")] == [3]
    got = t.table_entries("ipv4_lpm")[0]
    got.params["port"] = 7  # a reader's copy
    assert [e.params["port"] for e in t.table_entries("ipv4_lpm")] == [2]


def test_direct_counts_lists_the_entries_that_counted() -> None:
    """``direct_counts``: the entries of a direct-counted table whose counter is not 0, with
    the counts ``table_entries`` shows, in its order."""
    t, _ = _fabric_pair()
    _route(t, 2)
    t.table_add("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0B000000, 8)},
                                       action="set_nhop", params={"port": 3, "dmac": 1}))
    assert t.direct_counts("ipv4_lpm") == []
    frame = l2l3_header("00:00:00:00:00:01", "00:00:00:00:01:00", "10.1.0.2", "10.2.0.2",
                        4791, 4791, 8) + bytes(8)
    for _ in range(3):
        t.process_fast(frame, 1, 10)
    listed = [(e.match, e.priority, e.packets, e.bytes) for e in t.table_entries("ipv4_lpm")
              if e.packets or e.bytes]
    assert t.direct_counts("ipv4_lpm") == listed and listed[0][2] == 3
    with pytest.raises(StateError):
        t.direct_counts("port_smac")
