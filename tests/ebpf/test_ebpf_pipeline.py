"""The eBPF back end against the Python pipeline: the same program, entries and packets give the
same output frames, counters and registers (packets run in the kernel with BPF_PROG_TEST_RUN:
no namespaces needed, but root and clang are).

fabric.p4 runs with the controller's own entries for a k=4 fat-tree edge switch, under each
deterministic scheme (ECMP, rotation, Whack-a-Mole), with seeded random 5-tuples, TTL expiry,
truncated frames and random ingress ports; random spraying is compared by its distribution.
Every STF program either passes on the eBPF target or is refused with a located error; the
expected outcome of each is listed below, so a change in either direction is noticed."""

from __future__ import annotations

import random
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from p4switch.ebpf import toolchain

REASON = toolchain.unavailable_reason()
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or "")]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "controller"))
sys.path.insert(0, str(ROOT / "tests"))

PROBE_IP = "169.254.255.255"  # model.routing.PROBE_IP: routed to the CPU port
CPU_PORT = 255
PACKETS_PER_SCHEME = 3400  # x4 schemes: > 13k packets compared frame by frame


def _ebpf(program, **kw):
    from p4switch.ebpf.dataplane import EbpfPipeline

    return EbpfPipeline(program, test_mode=True, **kw)


@pytest.fixture(scope="module")
def fabric():
    from ctl_helpers import fabric_program

    return fabric_program()


def test_ipv4_lpm_forwarding_identical() -> None:
    from scapy.all import IP, UDP, Ether

    from p4switch.frontend import compile_file
    from p4switch.pipeline import Pipeline
    from p4switch.pipeline.api import LpmMatch, TableEntry

    prog = compile_file(str(ROOT / "tests/switch/p4/ipv4.p4"))
    eb, py = _ebpf(prog), Pipeline(prog)
    try:
        for pl in (eb, py):
            pl.table_add("ipv4_lpm", TableEntry(
                match={"hdr.ipv4.dstAddr": LpmMatch(0x0A000200, 24)}, action="ipv4_forward",
                params={"dstAddr": 0x001122334455, "port": 2}))
            pl.table_add("ipv4_lpm", TableEntry(
                match={"hdr.ipv4.dstAddr": LpmMatch(0x0A000280, 25)}, action="ipv4_forward",
                params={"dstAddr": 0x00AABBCCDDEE, "port": 3}))
        for dst, port in (("10.0.2.5", 2), ("10.0.2.200", 3), ("10.0.3.1", None)):
            pkt = bytes(Ether() / IP(dst=dst, ttl=9) / UDP() / b"payload")
            want = py.process(pkt, 1, 0).outputs
            got = eb.run(pkt, 1)
            if port is None:
                assert want == [] and got is None
            else:
                assert got == (port, want[0].data) and want[0].port == port
        assert eb.stats()["tx"] == 2 and eb.stats()["drop"] == 1
    finally:
        eb.close()


def _ecn(f: bytes, ecn: int) -> bytes:
    """``f`` (Ethernet/IPv4) with the ECN field set and the IPv4 checksum recomputed."""
    from ctl_helpers import csum16

    ip = bytearray(f[14:34])
    ip[1] = (ip[1] & 0xFC) | ecn
    ip[10:12] = b"\0\0"
    ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
    return f[:14] + bytes(ip) + f[34:]


def _frames(spec, sw: str, n: int, seed: int):
    from ctl_helpers import udp_frame

    rng = random.Random(seed)
    hosts = list(spec.hosts.values())
    ports = list(spec.ports(sw))
    for i in range(n):
        a, b = rng.sample(hosts, 2)
        f = udp_frame(a.ip, b.ip, rng.randrange(1024, 65536),
                      rng.choice((4791, 80, rng.randrange(65536))),
                      "02:00:00:00:00:01", "02:00:00:00:00:02",
                      ttl=rng.choice((64, 64, 64, 2, 1)))
        if i % 3 == 0:  # ECT(0): marked CE where the port's ECN threshold is met
            f = _ecn(f, 0b10)
        if i % 40 == 0:  # truncated: the parser's PacketTooShort path (>= the IPv4 header)
            f = f[:rng.randrange(34, len(f))]
        if i % 53 == 0:  # a corrupt IPv4 checksum: dropped by the program's verify
            f = f[:24] + bytes([f[24] ^ 0xFF]) + f[25:]
        if i % 29 == 0:  # to the probe address: a packet-in on the CPU port
            f = udp_frame(a.ip, PROBE_IP, 1, 2, "02:00:00:00:00:01", "02:00:00:00:00:02")
        if i % 31 == 0:  # a packet-out from the CPU port: 2-byte header (port, pad) stripped
            yield (rng.choice(ports) << 7).to_bytes(2, "big") + f, CPU_PORT
            continue
        yield f, rng.choice(ports)


def _pair(fabric, scheme: str, sw: str):
    from model.pipeline_target import install_on_pipeline
    from model.routing import compute_fabric_entries
    from model.spec import fat_tree
    from p4switch.pipeline import Pipeline

    spec = fat_tree(4)
    ents = compute_fabric_entries(spec, scheme)[sw]
    py = Pipeline(fabric, cpu_port=255, seed=1)
    eb = _ebpf(fabric, cpu_port=255)
    install_on_pipeline(py, ents)
    install_on_pipeline(eb, ents)
    from p4switch.pipeline.api import ExactMatch, TableEntry

    for port in list(spec.ports(sw))[::2]:  # ECN threshold 0 on every other port: mark ECT
        # (the controller installs its own threshold on every port)
        for pl in (py, eb):
            pl.table_modify("MyEgress.ecn_config", TableEntry(
                match={"standard_metadata.egress_port": ExactMatch(port)},
                action="set_ecn_threshold", params={"qdepth": 0}))
    return spec, py, eb


@pytest.mark.parametrize("scheme", ["ecmp", "rotate", "wam", "flowlet"])
def test_fabric_identical_frames_counters_registers(fabric, scheme: str) -> None:
    """Frame by frame on the same clock (seeded gaps of 1 µs .. 2 ms: flowlets time out and
    continue), with ECN marking on half the ports: identical frames, counters, registers and
    direct counters."""
    spec, py, eb = _pair(fabric, scheme, "edge1")
    rng = random.Random(3)
    try:
        outcomes: Counter[str] = Counter()
        now = 0
        for i, (f, port) in enumerate(_frames(spec, "edge1", PACKETS_PER_SCHEME, seed=7)):
            now += rng.choice((1, 5, 20, 100, 2000))
            want = [(o.port, o.data) for o in py.process(f, port, now).outputs]
            got = eb.run(f, port, now)
            assert ([got] if got is not None else []) == want, (scheme, i, port, f.hex())
            outcomes["drop" if not want else "cpu" if want[0][0] == CPU_PORT else
                     "packet_out" if port == CPU_PORT else "out"] += 1
            if want and len(want[0][1]) >= 34 and want[0][1][12:14] == b"\x08\x00":
                outcomes["ce"] += (want[0][1][15] & 3) == 3
        assert outcomes["out"] > PACKETS_PER_SCHEME // 2 and outcomes["drop"] > 100
        assert outcomes["cpu"] > 50 and outcomes["packet_out"] > 50 and outcomes["ce"] > 100
        for name in py.counters:
            for i in range(py.counter_size(name)):
                assert eb.counter_read(name, i) == py.counter_read(name, i), (name, i)
        for name in py.registers:
            for i in range(py.register_size(name)):
                assert eb.register_read(name, i) == py.register_read(name, i), (name, i)
        lpm_py = {(tuple(e.match.items()), e.packets) for e in py.table_entries("ipv4_lpm")}
        lpm_eb = {(tuple(e.match.items()), e.packets) for e in eb.table_entries("ipv4_lpm")}
        assert lpm_eb == lpm_py and any(p for _, p in lpm_eb)  # the direct counter
    finally:
        eb.close()


def test_fabric_random_spraying_distribution(fabric) -> None:
    """lb_random draws from the kernel's PRNG: compare the members' shares, not frames."""
    from ctl_helpers import udp_frame

    spec, py, eb = _pair(fabric, "random", "edge1")
    try:
        up = [p for p, (peer, _) in spec.ports("edge1").items() if peer.startswith("agg")]
        far = [h for h in spec.hosts.values() if h.switch != "edge1"]
        counts: Counter[int] = Counter()
        n = 2000
        for i in range(n):
            f = udp_frame("10.0.0.2", far[i % len(far)].ip, 5000, 4791,
                          "02:00:00:00:00:01", "02:00:00:00:00:02")
            got = eb.run(f, 1)
            assert got is not None
            counts[got[0]] += 1
        assert set(counts) == set(up)
        for p in up:  # each of the 2 members within 5 sigma of n/2
            assert abs(counts[p] - n / len(up)) < 5 * (n / 4) ** 0.5, counts
    finally:
        eb.close()


def test_state_errors_leave_kernel_state_unchanged(fabric) -> None:
    from p4switch.pipeline.api import ExactMatch, StateError, TableEntry

    eb = _ebpf(fabric, cpu_port=255)
    try:
        before = eb.table_entries("MyEgress.port_smac")
        with pytest.raises(StateError):
            eb.table_add("MyEgress.port_smac", TableEntry(
                match={"standard_metadata.egress_port": ExactMatch(1)}, action="nope"))
        with pytest.raises(StateError):
            eb.register_write("MyIngress.wam_counter", 10**9, 1)
        assert eb.table_entries("MyEgress.port_smac") == before
        eb.register_write("MyIngress.wam_counter", 3, 77)
        assert eb.register_read("MyIngress.wam_counter", 3) == 77
        eb.counter_write("MyIngress.drop_ctr", 2, 5, 500)
        assert eb.counter_read("MyIngress.drop_ctr", 2) == (5, 500)
    finally:
        eb.close()


# --------------------------------------------------------------------------------------------
# STF programs: pass, or refused with a located error
# --------------------------------------------------------------------------------------------

STF_DIR = ROOT / "tests" / "stf" / "programs"
# the outcome of every STF program on this target, derived from running them: the programs
# that pass, the ones refused (with the construct the located error names), and the ones whose
# STF expects what the kernel target gives differently by design (docs/p4switch-ebpf.md)
PASS = {
    "action_arg_copy", "action_profile", "action_run", "action_selector", "any_type_keys",
    "args_defaults_dontcare", "arith_wrap", "assign_left_call", "assign_order",
    "block_initializers", "extract_dontcare", "serenum_implicit", "subblock_defaults",
    "block_param_assign", "clone_e2e", "clone_i2e", "compound_assign", "const_entries",
    "contextual_names", "control_ctor_params", "copy_in_out_alias", "counters",
    "ctor_block_args", "digest_log_drop", "direct_apply", "direct_counter", "ecmp_crc16",
    "entry_priorities", "enum_keys", "enums_typedef", "eval_order", "exit_copy_out",
    "flowlet", "for_in", "for_loops", "function_macros", "functions", "header_union",
    "ipv4_lpm", "lookahead", "macro_operators", "meters", "multicast", "parser_error",
    "part_select", "range_optional", "recirculate", "registers", "resubmit", "select_forms",
    "select_verify", "source_routing", "stack_equality", "stack_index_oob", "stack_ops",
    "std_metadata", "struct_header_fields", "ternary_priority", "union_stack",
    "union_stack_index", "union_stack_pop", "v1model_20200408", "varbit_checksum",
    "varbit_extract", "varbit_length_eq", "varbit_values",
}
REFUSED: dict[str, str] = {
    # a struct compared with a list expression ({lo = 2, hi = 1})
    "struct_valued_expr": "ListExpr as an l-value",
}
DIFFERS: dict[str, str] = {}  # none today (test runs take the STF's clock)


def _stf_outcome(p4: Path) -> tuple[str, str]:
    from p4switch.ebpf.cgen import EbpfUnsupported
    from p4switch.stf import syntax
    from p4switch.stf.runner import StfRunner, load_program

    prog = load_program(p4)
    try:
        pl = _ebpf(prog)
    except EbpfUnsupported as e:
        return "refused", str(e)
    try:
        stf = p4.with_suffix(".stf")
        r = StfRunner(prog, pl, str(stf)).run(syntax.parse_stf(stf.read_text(), str(stf)))
    finally:
        pl.close()
    return ("pass" if r.exit_code == 0 else "fail"), r.message


def test_stf_programs_pass_or_are_refused_with_located_errors() -> None:
    results = {p.stem: _stf_outcome(p) for p in sorted(STF_DIR.glob("*.p4"))}
    assert set(results) == PASS | set(REFUSED) | set(DIFFERS), "a program is in no list"
    located = re.compile(r"^(\S+\.p4):\d+:\d+: error: (.+) is not supported by the eBPF back end")
    for stem, (outcome, msg) in results.items():
        if stem in PASS:
            assert outcome == "pass", (stem, msg)
        elif stem in REFUSED:
            m = located.match(msg)
            assert outcome == "refused" and m, (stem, outcome, msg)
            assert m.group(1) == str(STF_DIR / f"{stem}.p4") and REFUSED[stem] in m.group(2), msg
        else:
            assert outcome == "fail", f"{stem} now passes: update the lists"
    counts = Counter(o for o, _ in results.values())
    print(f"\neBPF STF: {dict(counts)}")


_LOOP_P4 = """
#include <core.p4>
#include <v1model.p4>
header tag_t { bit<8> more; bit<8> v; }
header out_t { bit<8> err; bit<8> sum; }
struct headers_t { out_t o; tag_t t; }
struct metadata_t { bit<8> sum; }
parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.o); transition next_tag; }
    state next_tag {
        pkt.extract(hdr.t);
        meta.sum = meta.sum + hdr.t.v;
        transition select(hdr.t.more) { 0: accept; default: next_tag; }
    }
}
control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.o.sum = meta.sum;
        hdr.o.err = sm.parser_error == error.NoError ? 8w0 :
                    sm.parser_error == error.ParserTimeout ? 8w1 : 8w2;
    }
}
control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control V(inout headers_t hdr, inout metadata_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.o); pkt.emit(hdr.t); } }
V1Switch(P(), V(), I(), E(), V(), D()) main;
"""


def test_parser_loop_is_unrolled_and_bounded(tmp_path: Path) -> None:
    """A parser loop with no header stack to bound it goes round at most
    cgen.parser_rounds() times (2 here): within that the frames equal the Python target's;
    one round more is error.ParserTimeout (the documented difference)."""
    from p4switch.ebpf.cgen import parser_rounds
    from p4switch.frontend import compile_file
    from p4switch.pipeline import Pipeline

    src = tmp_path / "loop.p4"
    src.write_text(_LOOP_P4)
    prog = compile_file(str(src))
    assert parser_rounds(prog) == 2
    eb, py = _ebpf(prog), Pipeline(prog)
    try:
        for tags in ([(0, 5)], [(1, 5), (0, 7)]):
            f = bytes(2) + b"".join(bytes(t) for t in tags) + b"payload"
            want = py.process(f, 0, 0).outputs
            assert eb.run(f, 0) == (1, want[0].data)
            assert want[0].data[:2] == bytes([0, sum(v for _, v in tags)])
        f = bytes(2) + bytes([1, 5, 1, 6, 0, 7]) + b"payload"
        got = eb.run(f, 0)
        assert got is not None and got[1][0] == 1  # ParserTimeout in the third round
        assert py.process(f, 0, 0).outputs[0].data[:2] == bytes([0, 18])
    finally:
        eb.close()


_METER_P4 = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> idx; bit<8> c_ind; bit<8> c_dir; bit<8> key; }
struct headers_t { h_t h; }
struct metadata_t { bit<8> c; }
parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    meter(4, MeterType.bytes) m;
    direct_meter<bit<8>>(MeterType.packets) dm;
    action fwd() { dm.read(hdr.h.c_dir); sm.egress_spec = 1; }
    table t {
        key = { hdr.h.key : exact; }
        actions = { fwd; NoAction; }
        meters = dm;
        default_action = NoAction();
    }
    apply {
        m.execute_meter((bit<32>)hdr.h.idx, meta.c);
        hdr.h.c_ind = meta.c;
        sm.egress_spec = 1;
        t.apply();
    }
}
control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control V(inout headers_t hdr, inout metadata_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), V(), D()) main;
"""


def test_meters_colour_as_the_python_target(tmp_path: Path) -> None:
    """Indexed (bytes) and direct (packets) two-rate three-colour meters: the same configs and
    seeded packets at the same times give the same colours on both targets, through
    reconfiguration and an entry's meter change."""
    from p4switch.frontend import compile_file
    from p4switch.pipeline import Pipeline
    from p4switch.pipeline.api import ExactMatch, MeterConfig, TableEntry

    src = tmp_path / "meters.p4"
    src.write_text(_METER_P4)
    prog = compile_file(str(src))
    eb, py = _ebpf(prog), Pipeline(prog)
    rng = random.Random(5)
    try:
        for pl in (eb, py):
            pl.meter_set("m", 0, MeterConfig(cir=20_000, cburst=300, pir=60_000, pburst=900))
            pl.meter_set("m", 2, MeterConfig(cir=1_000, cburst=100, pir=1_000, pburst=100))
            for k in (1, 2):
                pl.table_add("t", TableEntry(match={"hdr.h.key": ExactMatch(k)}, action="fwd",
                                             meter=MeterConfig(cir=100 * k, cburst=2, pir=300,
                                                               pburst=4)))
        colours: Counter[tuple[int, int]] = Counter()
        now = 0
        for i in range(3000):
            now += rng.choice((1, 10, 100, 1000, 20_000))
            if i == 1500:  # reconfigure: buckets full again on both
                for pl in (eb, py):
                    pl.meter_set("m", 0, MeterConfig(cir=5_000, cburst=200, pir=9_000,
                                                     pburst=400))
                    pl.table_modify("t", TableEntry(match={"hdr.h.key": ExactMatch(2)},
                                                    action="fwd", meter=MeterConfig(
                                                        cir=50, cburst=1, pir=60, pburst=3)))
            f = bytes([rng.randrange(5), 0, 0, rng.randrange(4)]) + bytes(rng.randrange(150))
            want = py.process(f, 0, now).outputs
            got = eb.run(f, 0, now)
            assert got == (want[0].port, want[0].data), (i, now, f.hex())
            colours[(got[1][1], got[1][2])] += 1
        assert {c for c, _ in colours} == {0, 1, 2} and {d for _, d in colours} == {0, 1, 2}
    finally:
        eb.close()


def test_action_selector_picks_the_python_targets_member() -> None:
    """Groups with weights, a member entry, a member's action changed, an emptied group: the
    selector's crc16 over srcAddr ++ srcPort picks the same member on both targets for seeded
    flows; a group beyond the kernel's GROUP_MAX is refused with RESOURCE_EXHAUSTED and the
    state unchanged."""
    from scapy.all import IP, UDP, Ether

    from p4switch.ebpf.layout import GROUP_MAX
    from p4switch.pipeline import Pipeline
    from p4switch.pipeline.api import (
        ActionProfileGroup,
        ActionProfileMember,
        LpmMatch,
        StateCode,
        StateError,
        TableEntry,
    )
    from p4switch.stf.runner import load_program

    prog = load_program(STF_DIR / "action_selector.p4")
    eb, py = _ebpf(prog), Pipeline(prog)
    rng = random.Random(11)
    try:
        def both(fn: str, *args: object) -> None:
            for pl in (eb, py):
                getattr(pl, fn)(*args)

        for mid in range(1, 6):
            both("act_prof_add_member", "ecmp_sel",
                 ActionProfileMember(mid, "set_port", {"port": mid}))
        both("act_prof_add_group", "ecmp_sel", ActionProfileGroup(10, [(1, 1), (2, 3), (3, 2)]))
        both("act_prof_add_group", "ecmp_sel", ActionProfileGroup(20, [(4, 1), (5, 1)]))
        both("table_add", "ecmp", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0A000000, 8)},
                                             group_id=10))
        both("table_add", "ecmp", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0B000000, 8)},
                                             group_id=20))
        both("table_add", "ecmp", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0C000000, 8)},
                                             member_id=5))

        def compare(n: int) -> Counter[int]:
            ports: Counter[int] = Counter()
            for _ in range(n):
                f = bytes(Ether() / IP(src=f"{rng.randrange(1, 224)}.{rng.randrange(256)}.0.9",
                                       dst=f"{rng.choice((10, 11, 12, 13))}.1.2.3")
                          / UDP(sport=rng.randrange(65536), dport=80) / b"x")
                want = py.process(f, 0, 0).outputs
                got = eb.run(f, 0)
                assert ([got] if got else []) == [(o.port, o.data) for o in want], f.hex()
                ports[got[0] if got else -1] += 1
            return ports

        assert set(compare(600)) == {1, 2, 3, 4, 5, -1}
        both("act_prof_modify_member", "ecmp_sel", ActionProfileMember(2, "set_port", {"port": 7}))
        both("act_prof_modify_group", "ecmp_sel", ActionProfileGroup(20, []))  # empty: a miss
        assert set(compare(400)) == {1, 7, 3, 5, -1}
        big = ActionProfileGroup(30, [(1, GROUP_MAX), (2, 1)])
        with pytest.raises(StateError) as ei:
            eb.act_prof_add_group("ecmp_sel", big)
        assert ei.value.code is StateCode.RESOURCE_EXHAUSTED
        assert [g.group_id for g in eb.act_prof_groups("ecmp_sel")] == [10, 20]
    finally:
        eb.close()


def test_digests_as_the_python_target() -> None:
    """digest<learn_t>() goes through the program's ring buffer: the same digests (type,
    receiver, field values) as the Python target's, dropped packets' included."""
    from p4switch.pipeline import Pipeline
    from p4switch.stf.runner import load_program

    prog = load_program(STF_DIR / "digest_log_drop.p4")
    eb, py = _ebpf(prog), Pipeline(prog)
    rng = random.Random(4)
    try:
        for _ in range(200):
            f = rng.randbytes(6) + rng.randbytes(6) + b"\x90\x00" + bytes([rng.randrange(1, 5)]) \
                + bytes(3)
            port = rng.randrange(1, 9)
            want, got = py.process(f, port, 0), eb.process(f, port, 0)
            assert got.digests == want.digests and len(want.digests) == 1, f.hex()
            assert [(o.port, o.data) for o in got.outputs] == \
                [(o.port, o.data) for o in want.outputs]
        assert eb.read_digests() == []
    finally:
        eb.close()
