"""Real P4 text through the front end into the pipeline: the benchmark programs with scapy
packets, and every STF program of tests/stf/programs run by the STF runner on this pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4switch.frontend import compile_file
from p4switch.pipeline import Pipeline
from p4switch.pipeline.api import ExactMatch, LpmMatch, TableEntry
from p4switch.pipeline.hashes import crc16_arc, pack_fields

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "programs"
STF = ROOT / "tests" / "stf" / "programs"


def udp_pkt(src: str, dst: str, sport: int, dport: int, ttl: int = 64) -> bytes:
    return bytes(Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
                 / IP(src=src, dst=dst, ttl=ttl) / UDP(sport=sport, dport=dport) / (b"x" * 20))


def test_bench_basic_forwards_like_basic_p4() -> None:
    p = Pipeline(compile_file(BENCH / "bench_basic.p4"))
    p.table_add("ipv4_lpm", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0A010000, 16)},
                                       action="ipv4_forward",
                                       params={"dstAddr": 0x0A0B0C0D0E0F, "port": 4}))
    res = p.process(udp_pkt("10.0.0.1", "10.1.2.3", 5, 6), 1, 0)
    (out,) = res.outputs
    want = (Ether(src="00:00:00:00:00:02", dst="0a:0b:0c:0d:0e:0f")
            / IP(src="10.0.0.1", dst="10.1.2.3", ttl=63) / UDP(sport=5, dport=6) / (b"x" * 20))
    assert out.port == 4 and out.data == bytes(want)


def test_bench_ecmp_flowlet_hash_register_counter() -> None:
    p = Pipeline(compile_file(BENCH / "bench_ecmp_flowlet.p4"))
    p.table_add("ecmp_group", TableEntry(match={"hdr.ipv4.dstAddr": LpmMatch(0x0A010000, 16)},
                                         action="set_ecmp_select",
                                         params={"ecmp_base": 0, "ecmp_count": 4}))
    for i in range(4):
        p.table_add("ecmp_nhop", TableEntry(match={"meta.ecmp_select": ExactMatch(i)},
                                            action="set_nhop",
                                            params={"nhop_dmac": 0x20 + i, "port": 10 + i}))
    src, dst, sport, dport = 0x0A000001, 0x0A010203, 1000, 2000
    data = udp_pkt("10.0.0.1", "10.1.2.3", sport, dport)
    slot = crc16_arc(pack_fields([(src, 32), (dst, 32), (17, 8), (sport, 16), (dport, 16)])) % 4096

    def expected_port(flowlet: int) -> int:
        raw = pack_fields([(src, 32), (dst, 32), (17, 8), (sport, 16), (dport, 16),
                           (flowlet, 16)])
        return 10 + crc16_arc(raw) % 4

    # first packet at t=100ms: gap from last_seen 0 > 50ms -> flowlet id 1
    r1 = p.process(data, 1, 100_000)
    assert [o.port for o in r1.outputs] == [expected_port(1)]
    assert p.register_read("last_seen", slot) == 100_000
    assert p.register_read("flowlet_ids", slot) == 1
    # 10 ms later: same flowlet
    p.process(data, 1, 110_000)
    assert p.register_read("flowlet_ids", slot) == 1
    # 60 ms gap: new flowlet id 2, path re-hashed
    r3 = p.process(data, 1, 170_000)
    assert p.register_read("flowlet_ids", slot) == 2
    assert [o.port for o in r3.outputs] == [expected_port(2)]
    counted = sum(p.counter_read("port_pkts", port)[0] for port in range(10, 14))
    assert counted == 3


STF_PROGRAMS = sorted(STF.glob("*.p4")) if STF.is_dir() else []


@pytest.mark.parametrize("prog", STF_PROGRAMS, ids=[p.stem for p in STF_PROGRAMS])
def test_stf_program_passes_on_this_pipeline(prog: Path) -> None:
    from p4switch.stf.runner import run_stf

    stf = prog.with_suffix(".stf")
    if not stf.exists():
        pytest.skip("no .stf next to the program")
    result = run_stf(prog, stf)
    assert result.exit_code == 0, result
