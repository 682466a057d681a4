"""docs/p4runtime.md's conformance rows that concern the target's tables, counters and
registers (every Write and Read row) against a switch whose pipeline is the eBPF target: the
same server, the same rows (``tests/runtime/test_conformance.py``'s cases), the same codes —
and a Write that the server accepts reaches the kernel's maps."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from p4switch.ebpf import toolchain

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "runtime"))
from runtime_client import RawClient  # noqa: E402
from test_conformance import CASES, Ctx, documented  # noqa: E402

REASON = toolchain.unavailable_reason()
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or "")]
PROGRAM = ROOT / "tests" / "ebpf" / "p4" / "conformance.p4"
TARGET_ROWS = sorted(c for c in documented() if c.startswith(("write-", "read-")))


@pytest.fixture(scope="module")
def program():
    from p4switch.frontend import compile_file

    return compile_file(str(PROGRAM))


@dataclass
class Env:
    switch: Any
    server: Any
    addr: str


@pytest.fixture
def served(program) -> Iterator[tuple[Env, RawClient]]:
    """A switch on the eBPF target (test mode: nothing attached) behind the P4Runtime server,
    and an arbitrated client of it."""
    from p4switch.ebpf.dataplane import EbpfPipeline
    from p4switch.switch import Switch
    from tests.netutil import serve_free

    sw = Switch(device_id=1, cpu_port=64,
                pipeline_factory=lambda prog, **kw: EbpfPipeline(prog, test_mode=True, **kw))
    server, addr = serve_free(sw, compiler=lambda bundle: program)
    sw.start()
    client = RawClient(addr)
    try:
        client.arbitrate()
        yield Env(sw, server, addr), client
    finally:
        client.close()
        server.stop(0).wait()
        sw.stop(log_stats=False)
        if isinstance(sw.pipeline, EbpfPipeline):
            sw.pipeline.close()


def test_the_rows_cover_writes_and_reads() -> None:
    assert len(TARGET_ROWS) >= 15


@pytest.mark.parametrize("case", TARGET_ROWS)
def test_the_ebpf_target_answers_what_the_table_says(served, program, case) -> None:
    from scapy.all import IP, UDP, Ether

    from p4switch import p4info
    from p4switch.ebpf.dataplane import EbpfPipeline

    env, client = served
    ctx = Ctx(env, client, p4info.build_p4info(program), [])
    needs_pipeline, run = CASES[case]
    try:
        if needs_pipeline:
            ctx.load()
            assert isinstance(env.switch.pipeline, EbpfPipeline)
        assert run(ctx) == documented()[case]
        pl = env.switch.pipeline
        if case == "write-ok":  # the accepted entry is in the kernel: a packet takes it
            got = pl.run(bytes(Ether() / IP(dst="10.1.2.3") / UDP()), 3)
            assert got is not None and got[0] == 1 and got[1][:6] == b"\x00\x00\x00\x00\x00\x01"
        if case == "write-register-wildcard":  # every cell, in the kernel's map
            assert {pl.register_read("flowlet_ts", i) for i in range(16)} == {1}
        if case == "write-aborted":  # rolled back: nothing in the kernel either
            assert pl.table_entries("ipv4_lpm") == []
            assert pl.run(bytes(Ether() / IP(dst="10.1.2.3") / UDP()), 3) is None
    finally:
        for c in ctx.others:
            c.close()
