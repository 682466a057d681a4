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
                "resubmit", "source_routing", "stack_ops", "block_param_assign", "stack_index_oob",
                "struct_header_fields", "varbit_extract", "varbit_length_eq",
                "union_stack", "union_stack_index", "union_stack_pop", "for_in",
                "varbit_checksum"}


def _general(p: Pipeline) -> Pipeline:
    p._fused = p._fused_lean = None
    vars(p).pop("process", None)  # the fused functions bound over the methods
    vars(p).pop("process_fast", None)
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


def run_stf_lockstep(prog: Path, make_pair: Any) -> tuple[Pipeline, Any]:
    """The STF next to ``prog`` through ``make_pair(fused, general)`` (skipped without one);
    it must pass. Returns the fused pipeline and the pair, for further checks."""
    from p4switch.stf import syntax as stf_parse
    from p4switch.stf.runner import StfRunner, load_program

    stf = prog.with_suffix(".stf")
    if not stf.exists():
        pytest.skip("no .stf next to the program")
    program = load_program(prog)
    fused = Pipeline(program, drop_port=511, seed=1)
    general = _general(Pipeline(program, drop_port=511, seed=1))
    pair = make_pair(fused, general)
    runner = StfRunner(program, pair, str(stf))
    result = runner.run(stf_parse.parse_stf(stf.read_text(), str(stf)))
    assert result.exit_code == 0, result
    return fused, pair


@pytest.mark.parametrize("prog", STF_PROGRAMS, ids=[p.stem for p in STF_PROGRAMS])
def test_stf_program_fused_equals_general(prog: Path) -> None:
    fused, pair = run_stf_lockstep(prog, PairPipeline)
    if prog.stem in GENERAL_ONLY:
        assert fused._fused is None and fused.fused_reason
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


# --------------------------------------------------------------------------------------------
# Specialisations of headers that stay as extracted (raw units, original bytes, partial unpack)
# --------------------------------------------------------------------------------------------

SPEC_TEMPLATE = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header vlan_t { bit<3> pcp; bit<1> cfi; bit<12> vid; bit<16> type; }
header opt_t { bool a; bit<3> b; int<4> c; int<8> d; }
header ip_t { bit<4> ver; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
              bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst; }
header tcp_t { bit<16> sport; bit<16> dport; bit<32> seq; bit<32> ack; bit<4> off; bit<4> res;
               bit<8> flags; bit<16> win; bit<16> csum; bit<16> urg; }
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
struct h_t { eth_t eth; vlan_t vlan; opt_t opt; ip_t ip; tcp_t tcp; udp_t udp; }
struct m_t { bit<16> x; bit<16> y; bit<8> z; }
parser P(packet_in pk, out h_t h, inout m_t m, inout standard_metadata_t sm) {
    state start { pk.extract(h.eth); transition select(h.eth.type) {
        0x8100: vlan; 0x0800: ip; 0x88B5: opt; 0x9999: skip; default: accept; } }
    state vlan { pk.extract(h.vlan); transition select(h.vlan.type) { 0x0800: ip; default: accept; } }
    state opt { pk.extract(h.opt); transition ip; }
    state skip { %(SKIP)s transition ip; }
    state ip { pk.extract(h.ip); %(PARSE_IP)s
               transition select(h.ip.proto) { 6: tcp; 17: udp; default: accept; } }
    state tcp { pk.extract(h.tcp); transition accept; }
    state udp { pk.extract(h.udp); transition accept; }
}
control V(inout h_t h, inout m_t m) { apply { %(VERIFY)s } }
control I(inout h_t h, inout m_t m, inout standard_metadata_t sm) {
    register<bit<16>>(4) r;
    action bump(inout tcp_t t) { t.res = t.res + 1; }
    action getv(out bit<16> v) { v = 16w7; }
    apply {
        sm.egress_spec = 1;
        if (h.eth.src == 0) { mark_to_drop(sm); }
        %(INGRESS)s
    }
}
control E(inout h_t h, inout m_t m, inout standard_metadata_t sm) { apply { %(EGRESS)s } }
control C(inout h_t h, inout m_t m) { apply {
    update_checksum(h.ip.isValid(), { h.ip.ver, h.ip.ihl, h.ip.tos, h.ip.len, h.ip.id,
        h.ip.flags, h.ip.frag, h.ip.ttl, h.ip.proto, h.ip.src, h.ip.dst }, h.ip.csum,
        HashAlgorithm.csum16);
} }
control D(packet_out pk, in h_t h) { apply { %(DEPARSE)s } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

_ALL_EMITS = ("pk.emit(h.eth); pk.emit(h.vlan); pk.emit(h.opt); pk.emit(h.ip); pk.emit(h.tcp); "
              "pk.emit(h.udp);")
_IP_VERIFY = ("verify_checksum(h.ip.isValid(), { h.ip.ver, h.ip.ihl, h.ip.tos, h.ip.len, h.ip.id,"
              " h.ip.flags, h.ip.frag, h.ip.ttl, h.ip.proto, h.ip.src, h.ip.dst }, h.ip.csum,"
              " HashAlgorithm.csum16);")
_TTL = "if (h.ip.isValid()) { h.ip.ttl = h.ip.ttl - 1; }"

SPEC_CASES: dict[str, dict[str, str]] = {
    # L4 headers untouched: emitted from the original bytes, L4 ports only unpacked
    "pristine_l4": {"INGRESS": _TTL + " if (h.tcp.isValid()) { m.x = h.tcp.dport; }"},
    # TCP modified in egress: packed again from its fields
    "egress_writes_tcp": {"INGRESS": _TTL,
                          "EGRESS": "if (h.tcp.isValid()) { h.tcp.win = h.tcp.win + 1; }"},
    # egress drops (egress_spec written after ingress)
    "egress_drop": {"INGRESS": _TTL, "EGRESS": "if (h.tcp.isValid() && h.tcp.flags > 128) {"
                    " mark_to_drop(sm); }"},
    # validity changed by the program
    "set_invalid": {"INGRESS": _TTL + " if (h.udp.isValid() && h.udp.dport < 512) {"
                    " h.udp.setInvalid(); } if (h.vlan.isValid()) { h.vlan.setInvalid();"
                    " h.eth.type = 0x0800; } if (h.ip.isValid() && h.ip.ttl == 7) {"
                    " h.opt.setValid(); }"},
    # fields written through an action's header parameter, a scalar out-parameter, a register
    # read and a hash output
    "indirect_writes": {"INGRESS": "if (h.tcp.isValid()) { bump(h.tcp); getv(h.tcp.urg); }"
                        " if (h.udp.isValid()) { r.read(h.udp.csum, 32w1); }"
                        " if (h.vlan.isValid()) { hash(h.vlan.vid, HashAlgorithm.crc16, 12w0,"
                        " { h.eth.src }, 32w4096); }"},
    # a parser statement changes a field before verify_checksum sees it
    "parser_assigns": {"PARSE_IP": "h.ip.tos = 8w0;", "VERIFY": _IP_VERIFY,
                       "INGRESS": "m.z = (bit<8>)sm.checksum_error;"
                       " if (m.z == 1) { h.eth.type = 0x1234; }"},
    # an advance between headers: slices by recorded offsets, no tail merge
    "advance": {"SKIP": "pk.advance(32);", "INGRESS": _TTL},
    # an extracted header that is not emitted (decap): two parser paths, one run
    "decap_vlan": {"DEPARSE": "pk.emit(h.eth); pk.emit(h.ip); pk.emit(h.tcp); pk.emit(h.udp);",
                   "INGRESS": "if (h.vlan.isValid()) { h.eth.type = h.vlan.type; }"},
    # emitted in another order than extracted: a pristine header emitted last (vlan) is not
    # the end of the packet's headers, so it is a slice of its own
    "reordered_emits": {"DEPARSE": "pk.emit(h.eth); pk.emit(h.ip); pk.emit(h.tcp);"
                        " pk.emit(h.udp); pk.emit(h.vlan); pk.emit(h.opt);", "INGRESS": _TTL},
    # raw units in hash/checksum inputs (ip version/ihl and tcp off/res, an invalid header's
    # fields skipped), signed and bool fields of an untouched header read on their own
    "raw_units_in_hashes": {
        "VERIFY": _IP_VERIFY,
        "INGRESS": "hash(m.x, HashAlgorithm.crc16, 16w0, { h.ip.ver, h.ip.ihl, h.tcp.off,"
                   " h.tcp.res, h.udp.sport, h.opt.a, h.opt.b, h.opt.c }, 32w65536);"
                   " hash(m.y, HashAlgorithm.csum16, 16w0, { h.tcp.off, h.tcp.res, h.tcp.flags,"
                   " h.ip.flags, h.ip.frag }, 32w65536);"
                   " if (h.opt.isValid() && h.opt.a) { m.z = (bit<8>)h.opt.d; }"
                   " h.eth.src = m.x ++ m.y ++ 8w0 ++ m.z;"},
}


def _spec_packet(rnd: random.Random) -> bytes:
    etype = rnd.choice((0x0800, 0x0800, 0x8100, 0x88B5, 0x9999, 0x86DD))
    src = b"\x00" * 6 if rnd.random() < 0.05 else bytes(rnd.randrange(256) for _ in range(6))
    pkt = b"\x00\x00\x00\x00\x00\x02" + src + struct.pack("!H", etype)
    if etype == 0x8100:
        pkt += struct.pack("!HH", rnd.randrange(1 << 16), rnd.choice((0x0800, 0x0800, 0x0806)))
    elif etype == 0x88B5:
        pkt += bytes(rnd.randrange(256) for _ in range(2))
    elif etype == 0x9999:
        pkt += bytes(rnd.randrange(256) for _ in range(4))
    proto = rnd.choice((6, 17, 1))
    pkt += struct.pack("!BBHHHBBHII", rnd.choice((0x45, rnd.randrange(256))), rnd.randrange(256),
                       rnd.randrange(1 << 16), rnd.randrange(1 << 16), rnd.randrange(1 << 16),
                       rnd.choice((7, 8, 64)), proto, rnd.randrange(1 << 16),
                       rnd.randrange(1 << 32), rnd.randrange(1 << 32))
    pkt += bytes(rnd.randrange(256) for _ in range(20 if proto == 6 else 8))
    pkt += bytes(rnd.randrange(256) for _ in range(rnd.randrange(12)))
    if rnd.random() < 0.25:  # truncated anywhere: parser errors stop after any header
        pkt = pkt[: rnd.randrange(len(pkt) + 1)]
    return pkt


@pytest.mark.parametrize("case", sorted(SPEC_CASES))
def test_specialised_headers_fused_equals_general(case: str) -> None:
    from p4switch.frontend import compile_source

    parts = {"SKIP": "", "PARSE_IP": "", "VERIFY": "", "INGRESS": "", "EGRESS": "",
             "DEPARSE": _ALL_EMITS} | SPEC_CASES[case]
    prog = compile_source(SPEC_TEMPLATE % parts, f"{case}.p4")
    fused, lean = Pipeline(prog), Pipeline(prog)
    general = _general(Pipeline(prog))
    assert fused.fused_reason is None, fused.fused_reason
    for p in (fused, lean, general):
        p.register_write("r", 1, 0xBEEF)
    rnd = random.Random(case)
    for i in range(1500):
        pkt = _spec_packet(rnd)
        port = rnd.randrange(4)
        a, b = fused.process(pkt, port, i), general.process(pkt, port, i)
        assert a == b, (case, pkt.hex())
        assert _as_result(lean.process_fast(pkt, port, i)) == b, (case, pkt.hex())
    src = fused.source
    # the specialisations engage exactly where the program allows them
    tail_tcp = "_pkt[h_f_tcp__o:]" in src
    assert tail_tcp == (case in ("pristine_l4", "set_invalid", "parser_assigns", "decap_vlan",
                                 "raw_units_in_hashes", "reordered_emits", "egress_drop")), case
    assert "h_f_ip__u0" in src  # ip never touched, version/ihl never written: a raw unit
    if case == "pristine_l4":
        assert "h_f_tcp_f_seq" not in src.split("def process_fused(")[1]  # never unpacked
    if case == "advance":
        assert "_pkt[h_f_tcp__o:h_f_tcp__o + 20]" in src and "_pkt[h_f_tcp__o:]" not in src
