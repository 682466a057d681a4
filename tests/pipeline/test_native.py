"""The native pipeline (p4switch.native) against the Python pipeline's fused path, in
lock-step, as tests/pipeline/test_fused_halves.py checks the fused halves against the general
driver: every STF program through the STF runner on a native and a Python pipeline (then its
packets replayed mutated and truncated with random queueing metadata), and fabric.p4 with
each scheme's entries on random fabric traffic. Every result must be identical: job metadata,
outputs, drops (by reason; an error drop's detail names the native pipeline), the counters,
registers and direct counters the STF reads. A program the native back end cannot express is
refused with a located error and keeps the Python pipeline. A build without a C compiler
gives a one-line error and the Python pipeline."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_fused import STF_PROGRAMS, run_stf_lockstep
from test_fused_halves import HalvesPair, _fabric_packet, _mutate, _random_qms

from p4switch.native import NativePipeline, NativeUnavailable, NativeUnsupported, build
from p4switch.pipeline import Pipeline
from p4switch.pipeline.api import Drop
from sim.network import CPU_PORT, DROP_PORT, fabric_program

ROOT = Path(__file__).resolve().parents[2]

# STF programs the native back end refuses (what it cannot express, see cgen's docstring)
REFUSED = {"action_selector", "clone_e2e", "clone_i2e", "digest_log_drop", "meters",
           "multicast", "recirculate", "resubmit", "varbit_extract", "varbit_length_eq",
           "varbit_checksum", "varbit_values", "direct_counter", "v1model_20200408",
           "macro_operators", "registers", "struct_valued_expr"}


def _reason(x: Any) -> Any:
    """Drops compared by reason, everything else as it is."""
    if isinstance(x, Drop):
        return ("drop", x.reason) if x.reason == "error" else x
    if isinstance(x, list | tuple):
        return type(x)(_reason(i) for i in x)
    return x


class NativePair(HalvesPair):
    """HalvesPair with the native pipeline on the fused side, drops compared by reason."""

    def run(self, data: bytes, port: int, now: int, qms: list[Any]) -> list[Any]:
        from test_fused_halves import _halves

        self.n += 1
        a = _halves(self.fused, "lean" if self.n % 2 else True, data, port, now, qms)
        b = _halves(self.general, True, data, port, now, qms)
        assert _reason(a) == _reason(b), \
            f"native {a} != python {b} for {data.hex()} on port {port}"
        return b[1]


def _native_or_refused(p: Pipeline) -> NativePipeline | None:
    try:
        return NativePipeline(p)
    except NativeUnsupported:
        return None


@pytest.mark.parametrize("prog", STF_PROGRAMS, ids=[p.stem for p in STF_PROGRAMS])
def test_stf_program_native_equals_python(prog: Path) -> None:
    refused: list[str] = []

    def pair(fused: Pipeline, general: Pipeline) -> Any:
        py = Pipeline(fused.program, drop_port=511, seed=1)  # the fused path (where it fuses)
        nat = _native_or_refused(fused)
        if nat is None:
            refused.append(prog.stem)
            return HalvesPair(py, general)  # the STF still runs (on the Python pipeline)
        return NativePair(nat, py)

    _, p = run_stf_lockstep(prog, pair)
    if refused:
        assert prog.stem in REFUSED, f"{prog.stem} refused by the native back end"
        return
    assert prog.stem not in REFUSED, f"{prog.stem} is native now: take it off REFUSED"
    assert isinstance(p.fused, NativePipeline)
    rnd = random.Random(prog.stem)
    now = 10_000
    for i in range(150):
        data, port = p.sent[i % len(p.sent)]
        now += rnd.choice((1, 100, 70_000))
        p.run(_mutate(rnd, data), port if rnd.random() < 0.8 else rnd.randrange(512), now,
              _random_qms(rnd, now))


def test_refusal_is_located() -> None:
    from p4switch.stf.runner import load_program

    prog = next(p for p in STF_PROGRAMS if p.stem == "clone_i2e")
    with pytest.raises(NativeUnsupported) as e:
        NativePipeline(Pipeline(load_program(prog)))
    assert "clone_i2e.p4:" in str(e.value).splitlines()[0]
    assert "not supported by the native back end" in str(e.value)


@pytest.mark.parametrize("scheme", ["ecmp", "flowlet", "random", "rotate", "wam"])
def test_fabric_program_native_equals_python(scheme: str) -> None:
    """fabric.p4 on a k=4 fat-tree edge and aggregation switch with the scheme's entries:
    random fabric traffic (some truncated), random queue metadata, in lock-step; then every
    register and counter cell and direct counter agrees."""
    from model.pipeline_target import install_on_pipeline
    from model.spec import fat_tree
    from sim.network import SimConfig, SimNetwork

    spec = fat_tree(4)
    net = SimNetwork(spec, scheme, SimConfig())
    ips = [h.ip for h in spec.hosts.values()]
    for sw in ("edge1", "agg1"):
        pipes = []
        for _ in range(2):
            p = Pipeline(fabric_program(), drop_port=DROP_PORT, cpu_port=CPU_PORT, seed=3)
            install_on_pipeline(p, net.entries[sw])
            pipes.append(p)
        nat = NativePipeline(pipes[0])
        pair = NativePair(nat, pipes[1])
        rnd = random.Random(scheme + sw)
        now, sent = 0, 0
        for _ in range(600):
            now += rnd.choice((1, 10, 1000, 100_000))
            for outputs, *_ in pair.run(_fabric_packet(rnd, ips), rnd.randrange(1, 5), now,
                                        _random_qms(rnd, now)):
                sent += len(outputs)
        assert sent > 200, (scheme, sw)
        py = pipes[1]
        for name in py.registers:
            for i in range(py.register_size(name)):
                assert nat.register_read(name, i) == py.register_read(name, i), name
        for name in py.counters:
            for i in range(py.counter_size(name)):
                assert nat.counter_read(name, i) == py.counter_read(name, i), name
        for name in py.tables:
            assert nat.table_entries(name) == py.table_entries(name), name
        # process_fast (one call, empty queue) agrees too, and a table write reaches C
        for _ in range(200):
            pkt = _fabric_packet(rnd, ips)
            now += 7
            assert _reason(nat.process_fast(pkt, 1, now)) == _reason(py.process_fast(pkt, 1, now))
        for p in (nat, py):
            p.table_clear("MyIngress.ipv4_lpm")
        pkt = _fabric_packet(rnd, ips)
        assert nat.process_fast(pkt, 1, now) == py.process_fast(pkt, 1, now)


def test_no_compiler_gives_one_line_and_python_keeps_working(tmp_path: Path) -> None:
    """A machine without a C compiler: a one-line NativeUnavailable (the caller keeps the
    Python pipeline), in a fresh process with an empty build cache."""
    code = (
        "import sys\n"
        "from p4switch.native import NativePipeline, NativeUnavailable\n"
        "from p4switch.pipeline import Pipeline\n"
        "from sim.network import fabric_program\n"
        "p = Pipeline(fabric_program())\n"
        "try:\n"
        "    NativePipeline(p)\n"
        "except NativeUnavailable as e:\n"
        "    print('UNAVAILABLE', str(e)); sys.exit(0)\n"
        "print('BUILT')\n")
    env = {"PATH": "/usr/bin:/bin", "CC": str(tmp_path / "no-cc"),
           "P4FABRIC_NATIVE_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT),
           "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("UNAVAILABLE cannot compile"), r.stdout
    assert "no C compiler" in lines[0], r.stdout
    assert not r.stderr.strip(), r.stderr


def test_native_pipeline_falls_back_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """A program the native back end refuses runs on the Python pipeline, said once."""
    from p4switch.stf.runner import load_program
    from sim.switch import choose_pipeline

    prog = load_program(ROOT / "tests" / "stf" / "programs" / "meters.p4")
    py = Pipeline(prog)
    assert choose_pipeline(py, "native") is py
    assert choose_pipeline(py, "native") is py
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "meters.p4:" in err[0] and "native back end" in err[0], err
    assert choose_pipeline(py, "python") is py
    with pytest.raises(ValueError):
        choose_pipeline(py, "fortran")


def test_build_cache_is_keyed_by_the_source() -> None:
    assert build.module_name("a") != build.module_name("b")
    assert build.module_name("a") == build.module_name("a")
    assert issubclass(NativeUnavailable, Exception)
