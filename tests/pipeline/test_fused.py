"""The fused process() path (pipeline/fused.py) against the general driver.

Every STF program runs through the STF runner on a pair of pipelines — one taking the fused
path where the program allows it, one forced onto the general driver — and every packet's
result must be identical, as must every counter/register read. The benchmark programs, which
the fused path must cover, also get randomised and malformed packets."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest

from p4switch.frontend import compile_file
from p4switch.pipeline import Pipeline
from p4switch.pipeline.api import (
    Drop,
    ExactMatch,
    LpmMatch,
    Output,
    ProcessResult,
    TableEntry,
)

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "programs"
STF = ROOT / "tests" / "stf" / "programs"
STF_PROGRAMS = sorted(STF.glob("*.p4")) if STF.is_dir() else []

# programs whose semantics need the general driver (copies, re-runs, digests, logs, stacks)
GENERAL_ONLY = {"clone_e2e", "clone_i2e", "digest_log_drop", "multicast", "recirculate",
                "resubmit", "source_routing", "stack_ops"}


def _general(p: Pipeline) -> Pipeline:
    p._fused = p._fused_lean = None
    return p


class PairPipeline:
    """Drives a fused and a general pipeline in lock-step; process() compares the results."""

    def __init__(self, fused: Pipeline, general: Pipeline) -> None:
        self.fused, self.general = fused, general
        self.packets = 0

    def process(self, data: bytes, port: int, now_us: int) -> ProcessResult:
        a = self.fused.process(data, port, now_us)
        b = self.general.process(data, port, now_us)
        assert a == b, f"fused {a} != general {b} for {data.hex()} on port {port}"
        self.packets += 1
        return a

    def __getattr__(self, name: str) -> Any:
        fa, fb = getattr(self.fused, name), getattr(self.general, name)

        def both(*args: Any, **kw: Any) -> Any:
            ra = fa(*args, **kw)
            rb = fb(*args, **kw)
            assert ra == rb, f"{name}{args}: fused {ra} != general {rb}"
            return ra

        return both


def test_bench_programs_take_the_fused_path() -> None:
    for name in ("bench_basic.p4", "bench_ecmp_flowlet.p4"):
        p = Pipeline(compile_file(BENCH / name))
        assert p.fused_reason is None and p._fused is not None, (name, p.fused_reason)


@pytest.mark.parametrize("prog", STF_PROGRAMS, ids=[p.stem for p in STF_PROGRAMS])
def test_stf_program_fused_equals_general(prog: Path) -> None:
    from p4switch.stf import syntax as stf_parse
    from p4switch.stf.runner import StfRunner, load_program

    stf = prog.with_suffix(".stf")
    if not stf.exists():
        pytest.skip("no .stf next to the program")
    program = load_program(prog)
    fused = Pipeline(program, drop_port=511, seed=1)
    general = _general(Pipeline(program, drop_port=511, seed=1))
    if prog.stem in GENERAL_ONLY:
        assert fused._fused is None and fused.fused_reason
    pair = PairPipeline(fused, general)
    runner = StfRunner(program, pair, str(stf))  # type: ignore[arg-type]
    result = runner.run(stf_parse.parse_stf(stf.read_text(), str(stf)))
    assert result.exit_code == 0, result
    assert pair.packets > 0


def _as_result(r: object) -> ProcessResult:
    """process_fast's answer as the ProcessResult process() gives."""
    if isinstance(r, tuple):
        return ProcessResult(outputs=[Output(*r)])
    if isinstance(r, Drop):
        return ProcessResult(drops=[r])
    assert isinstance(r, ProcessResult)
    return r


def _ecmp_pipelines() -> tuple[Pipeline, Pipeline]:
    out = []
    for fused in (True, False):
        p = Pipeline(compile_file(BENCH / "bench_ecmp_flowlet.p4"))
        p.table_add("ecmp_group", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0A010000, 16)},
                                             action="set_ecmp_select",
                                             params={"ecmp_base": 0, "ecmp_count": 3}))
        for i in range(2):  # ecmp_select 2 misses ecmp_nhop -> default drop
            p.table_add("ecmp_nhop", TableEntry(match={"meta.ecmp_select": ExactMatch(i)},
                                                action="set_nhop",
                                                params={"nhop_dmac": 0x20 + i, "port": 1 + i}))
        out.append(p if fused else _general(p))
    return out[0], out[1]


def _random_packet(rnd: random.Random) -> bytes:
    eth = struct.pack("!6s6sH", b"\x00\x00\x00\x00\x00\x02", b"\x00\x00\x00\x00\x00\x01",
                      rnd.choice((0x0800, 0x0800, 0x0800, 0x86DD)))
    proto = rnd.choice((6, 17, 1))
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 60, rnd.randrange(1 << 16), 0x4000,
                     rnd.randrange(256), proto, rnd.randrange(1 << 16),
                     rnd.randrange(1 << 32), 0x0A010000 | rnd.randrange(1 << 16)
                     if rnd.random() < 0.8 else rnd.randrange(1 << 32))
    l4 = bytes(rnd.randrange(256) for _ in range(20 if proto == 6 else 8))
    pkt = eth + ip + l4 + bytes(rnd.randrange(256) for _ in range(rnd.randrange(16)))
    if rnd.random() < 0.2:  # truncated anywhere: parser errors keep what was extracted
        pkt = pkt[: rnd.randrange(len(pkt) + 1)]
    return pkt


def test_ecmp_flowlet_random_and_malformed_packets_match() -> None:
    fused, general = _ecmp_pipelines()
    assert fused._fused is not None
    rnd = random.Random(7)
    now = 0
    for _ in range(3000):
        now += rnd.choice((1, 10, 1000, 60_000))
        pkt = _random_packet(rnd)
        port = rnd.randrange(8)
        a, b = fused.process(pkt, port, now), general.process(pkt, port, now)
        assert a == b, pkt.hex()
    for name in ("last_seen", "flowlet_ids"):
        for i in range(fused.register_size(name)):
            assert fused.register_read(name, i) == general.register_read(name, i)
    for i in range(fused.counter_size("port_pkts")):
        assert fused.counter_read("port_pkts", i) == general.counter_read("port_pkts", i)


def test_basic_random_and_malformed_packets_match() -> None:
    pipes = []
    for fused in (True, False):
        p = Pipeline(compile_file(BENCH / "bench_basic.p4"))
        p.table_add("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0A010000, 16)},
                                           action="ipv4_forward",
                                           params={"dstAddr": 0x0A0B0C0D0E0F, "port": 4}))
        pipes.append(p if fused else _general(p))
    rnd = random.Random(3)
    for i in range(2000):
        pkt = _random_packet(rnd)
        a, b = pipes[0].process(pkt, 1, i), pipes[1].process(pkt, 1, i)
        assert a == b, pkt.hex()
    # process_fast: the same outputs as (port, bytes), with the same state changes
    lean, full = (Pipeline(compile_file(BENCH / "bench_ecmp_flowlet.p4")) for _ in range(2))
    for p in (lean, full):
        p.table_add("ecmp_group", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0A010000, 16)},
                                             action="set_ecmp_select",
                                             params={"ecmp_base": 0, "ecmp_count": 1}))
        p.table_add("ecmp_nhop", TableEntry(match={"meta.ecmp_select": ExactMatch(0)},
                                            action="set_nhop", params={"nhop_dmac": 1, "port": 3}))
    for i in range(500):
        pkt = _random_packet(rnd)
        assert _as_result(lean.process_fast(pkt, 2, i * 100)) == full.process(pkt, 2, i * 100)
    assert lean.counter_read("port_pkts", 3) == full.counter_read("port_pkts", 3)
    assert lean.counter_read("port_pkts", 3)[0] > 0
    # the general driver's process_fast agrees too
    g = _general(Pipeline(compile_file(BENCH / "bench_basic.p4")))
    for pkt in (_random_packet(rnd) for _ in range(50)):
        assert _as_result(g.process_fast(pkt, 1, 0)) == g.process(pkt, 1, 0)
    # bytearray/memoryview input is accepted like bytes
    pkt = _random_packet(rnd)
    assert pipes[0].process(bytearray(pkt), 1, 0) == pipes[1].process(pkt, 1, 0)
    assert pipes[0].process(memoryview(pkt), 1, 0) == pipes[1].process(pkt, 1, 0)


UNGUARDED = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ip_t { bit<8> ttl; bit<8> proto; bit<16> id; }
struct h_t { eth_t eth; ip_t ip; }
struct m_t { bit<8> x; bit<16> y; }
parser P(packet_in pk, out h_t h, inout m_t m, inout standard_metadata_t sm) {
    state start { pk.extract(h.eth); transition select(h.eth.type) { 0x0800: ip; default: accept; } }
    state ip { pk.extract(h.ip); transition accept; }
}
control V(inout h_t h, inout m_t m) { apply { } }
control I(inout h_t h, inout m_t m, inout standard_metadata_t sm) {
    apply {
        m.x = h.ip.ttl;  // read whether or not ip is valid: 0 when it is not
        hash(m.y, HashAlgorithm.crc16, 16w0, { h.ip.ttl, h.ip.id, m.x }, 32w65536);
        if (h.ip.isValid() && h.eth.isValid()) { h.ip.id = h.ip.id + 1; }
        h.eth.type = (m.x ++ 8w0) ^ m.y;
        sm.egress_spec = 1;
    }
}
control E(inout h_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }
control C(inout h_t h, inout m_t m) { apply { } }
control D(packet_out pk, in h_t h) { apply { pk.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_unguarded_reads_of_invalid_header_fields_are_zero() -> None:
    from p4switch.frontend import compile_source

    prog = compile_source(UNGUARDED, "unguarded.p4")
    fused = Pipeline(prog)
    general = _general(Pipeline(prog))
    assert fused.fused_reason is None
    rnd = random.Random(5)
    for _ in range(300):
        etype = rnd.choice((0x0800, 0x0800, 0x1234))
        pkt = bytes(12) + struct.pack("!H", etype) + bytes(rnd.randrange(256) for _ in range(6))
        pkt = pkt[: rnd.randrange(10, len(pkt) + 1)]
        assert fused.process(pkt, 0, 0) == general.process(pkt, 0, 0), pkt.hex()
