"""Header unions, ``for`` loops, resubmit, recirculate, struct-typed header fields and varbit
on the eBPF target, as root (BPF_PROG_TEST_RUN): the STF programs that use them, fed seeded
variations of their own STF packets (random bytes over random positions, random lengths),
give the Python pipeline's frames; a loop that would go round more than ``cgen.FOR_MAX``
times drops the packet (the bounded form the verifier needs; the Python target goes on)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from p4switch.ebpf import cgen, toolchain
from p4switch.pipeline import Pipeline
from p4switch.stf.runner import load_program

ROOT = Path(__file__).resolve().parents[2]
STF_DIR = ROOT / "tests" / "stf" / "programs"
REASON = toolchain.unavailable_reason()
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def _stf_packets(stem: str) -> list[tuple[int, bytes]]:
    out = []
    for line in (STF_DIR / f"{stem}.stf").read_text().splitlines():
        m = re.match(r"\s*packet\s+(\d+)\s+(.*)$", line)
        if m:
            out.append((int(m.group(1)), bytes.fromhex(re.sub(r"[^0-9a-fA-F]", "",
                                                                m.group(2)))))
    return out


def _variations(stem: str, n: int, seed: int) -> list[tuple[int, bytes]]:
    rnd = random.Random(seed)
    base = _stf_packets(stem)
    out = []
    for _ in range(n):
        port, data = rnd.choice(base)
        b = bytearray(data)
        for _ in range(rnd.randrange(1, 4)):
            if b:
                b[rnd.randrange(len(b))] = rnd.choice((rnd.randrange(256), 0x0A, 0x0B, 0, 1, 2))
        if rnd.random() < 0.2:
            b = b[:rnd.randrange(len(b) + 1)] if rnd.random() < 0.5 else b + rnd.randbytes(4)
        out.append((port, bytes(b)))
    return out


@pytest.mark.parametrize("stem", ["header_union", "union_stack", "union_stack_index",
                                  "union_stack_pop", "for_in", "for_loops", "resubmit",
                                  "recirculate", "struct_header_fields", "varbit_extract",
                                  "varbit_values", "varbit_length_eq", "varbit_checksum"])
def test_identical_to_the_python_pipeline(stem: str) -> None:
    from p4switch.ebpf.dataplane import EbpfPipeline

    prog = load_program(STF_DIR / f"{stem}.p4")
    py, eb = Pipeline(prog), EbpfPipeline(prog, test_mode=True)
    try:
        frames = _variations(stem, 1000, seed=len(stem))
        if stem == "for_loops":  # h.n bounds its loops: within FOR_MAX (and no 8-bit wrap)
            frames = [(p, bytes([f[0] % cgen.FOR_MAX]) + f[1:] if f else f) for p, f in frames]
        outputs = 0
        for i, (port, f) in enumerate(frames):
            want = [(o.port, o.data) for o in py.process(f, port, i).outputs]
            got = [(o.port, o.data) for o in eb.process(f, port, i).outputs]
            assert got == want, (stem, i, f.hex(), got, want)
            outputs += len(want)
        assert outputs > 500, outputs  # most variations are forwarded, not dropped
    finally:
        eb.close()


def test_a_loop_beyond_the_bound_drops_the_packet() -> None:
    from p4switch.ebpf.dataplane import EbpfPipeline

    prog = load_program(STF_DIR / "for_loops.p4")
    eb = EbpfPipeline(prog, test_mode=True)
    try:
        within = bytes([cgen.FOR_MAX - 1]) + bytes(7)
        beyond = bytes([cgen.FOR_MAX + 1]) + bytes(7)
        assert eb.run(within, 0) is not None
        before = eb.stats()["unsupported"]
        assert eb.run(beyond, 0) is None
        assert eb.stats()["unsupported"] == before + 1
        assert Pipeline(prog).process(beyond, 0, 0).outputs  # the Python target goes on
    finally:
        eb.close()
