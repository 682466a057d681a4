"""The fused halves (Pipeline.ingress_fast / egress_fast, fused._assemble_halves) against the
general ingress / egress, in lock-step.

Every STF program runs through the STF runner on a fused and a general pipeline, each packet
going ingress -> egress (empty queue metadata, so the STF expectations hold); then every packet
the STF sent is replayed mutated and truncated, with random queueing metadata and a later
egress time, and every result must still be identical (job metadata, outputs, drops, and the
counters/registers the STF reads)."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest
from test_fused import (
    GENERAL_ONLY,
    STF_PROGRAMS,
    _ecmp_pipelines,
    _general,
    _random_packet,
    run_stf_lockstep,
)

from p4switch.pipeline import Pipeline
from p4switch.pipeline.api import (
    Drop,
    EgressJob,
    EgressResult,
    IngressResult,
    Output,
    ProcessResult,
    QueueingMetadata,
)
from sim.network import CPU_PORT, DROP_PORT, fabric_program


def _lean_ingress(p: Pipeline) -> Any:
    """``ingress_lean`` with its answer as the IngressResult ``ingress_fast`` gives."""
    def ing(data: bytes, port: int, now: int) -> IngressResult:
        r = p.ingress_lean(data, port, now)
        if isinstance(r, EgressJob):
            return IngressResult(jobs=[r])
        if isinstance(r, Drop):
            return IngressResult(drops=[r])
        assert isinstance(r, IngressResult)
        return r
    return ing


def _lean_egress(p: Pipeline) -> Any:
    """``egress_lean`` with its answer as the EgressResult ``egress_fast`` gives."""
    def eg(job: EgressJob, now: int, qm: QueueingMetadata) -> EgressResult:
        r = p.egress_lean(job, now, qm)
        if isinstance(r, tuple):
            return EgressResult(outputs=[Output(*r)])
        if isinstance(r, Drop):
            return EgressResult(drops=[r])
        assert isinstance(r, EgressResult)
        return r
    return eg


def _halves(p: Pipeline, fast: bool | str, data: bytes, port: int, now: int,
            qms: list[tuple[int, QueueingMetadata]]) -> tuple[list[Any], list[Any]]:
    """One packet through ingress then, per job, egress at the given (time, metadata);
    ``fast``: the fused halves, ``"lean"`` their lean twins (ingress_lean, egress_lean)."""
    if fast == "lean":
        ing, eg = _lean_ingress(p), _lean_egress(p)
    else:
        ing, eg = (p.ingress_fast, p.egress_fast) if fast else (p.ingress, p.egress)
    r = ing(data, port, now)
    head: list[Any] = [r.drops, r.digests, r.logs,
                       [(j.egress_port, j.instance_type, j.packet_length, j.priority)
                        for j in r.jobs]]
    outs: list[Any] = []
    queue = list(r.jobs)
    for i, job in enumerate(queue):  # E2E clones / recirculations (general-only) join the queue
        if i > 64:
            break
        t, qm = qms[i % len(qms)]
        e = eg(job, t, QueueingMetadata(**vars(qm)))
        outs.append((e.outputs, e.drops, e.digests, e.logs,
                     [(j.egress_port, j.instance_type, j.packet_length) for j in e.jobs]))
        queue += e.jobs
    return head, outs


class HalvesPair:
    """A fused and a general pipeline driven in lock-step through ingress + egress; every
    other packet takes the fused pipeline's lean halves instead of its full ones."""

    def __init__(self, fused: Pipeline, general: Pipeline) -> None:
        self.fused, self.general = fused, general
        self.sent: list[tuple[bytes, int]] = []
        self.n = 0

    def run(self, data: bytes, port: int, now: int,
            qms: list[tuple[int, QueueingMetadata]]) -> list[Any]:
        self.n += 1
        a = _halves(self.fused, "lean" if self.n % 2 else True, data, port, now, qms)
        b = _halves(self.general, False, data, port, now, qms)
        assert a == b, f"fused halves {a} != general {b} for {data.hex()} on port {port}"
        return a[1]

    def process(self, data: bytes, port: int, now_us: int) -> ProcessResult:
        self.sent.append((bytes(data), port))
        outs = self.run(data, port, now_us, [(now_us, QueueingMetadata(now_us))])
        res = ProcessResult()
        for outputs, drops, *_ in outs:
            res.outputs += outputs
            res.drops += drops
        return res

    def __getattr__(self, name: str) -> Any:
        fa, fb = getattr(self.fused, name), getattr(self.general, name)

        def both(*args: Any, **kw: Any) -> Any:
            ra, rb = fa(*args, **kw), fb(*args, **kw)
            assert ra == rb, f"{name}{args}: fused {ra} != general {rb}"
            return ra

        return both


def _random_qms(rnd: random.Random, now: int) -> list[tuple[int, QueueingMetadata]]:
    out = []
    for _ in range(3):
        t = now + rnd.choice((0, 1, 37, 5000))
        enq = now + rnd.randrange(t - now + 1)
        out.append((t, QueueingMetadata(enq, rnd.randrange(64), t - enq, rnd.randrange(64),
                                        rnd.randrange(8))))
    return out


def _mutate(rnd: random.Random, pkt: bytes) -> bytes:
    b = bytearray(pkt)
    for _ in range(rnd.randrange(4)):
        if b:
            b[rnd.randrange(len(b))] = rnd.randrange(256)
    if rnd.random() < 0.3:
        b = b[: rnd.randrange(len(b) + 1)]
    return bytes(b)


@pytest.mark.parametrize("prog", STF_PROGRAMS, ids=[p.stem for p in STF_PROGRAMS])
def test_stf_program_fused_halves_equal_general(prog: Path) -> None:
    fused, pair = run_stf_lockstep(prog, HalvesPair)
    if fused.fused_reason is None:
        assert prog.stem not in GENERAL_ONLY
        assert fused.ingress_fast.__name__ == "process_fused_ingress"
        assert fused.egress_fast.__name__ == "process_fused_egress"
        assert fused.ingress_lean.__name__ == "process_fused_ingress_lean"
        assert fused.egress_lean.__name__ == "process_fused_egress_lean"
    assert pair.sent
    rnd = random.Random(prog.stem)
    now = 10_000
    for i in range(150):
        data, port = pair.sent[i % len(pair.sent)]
        now += rnd.choice((1, 100, 70_000))
        pair.run(_mutate(rnd, data), port if rnd.random() < 0.8 else rnd.randrange(512), now,
                 _random_qms(rnd, now))


def test_ecmp_flowlet_random_packets_and_queue_metadata_match() -> None:
    fused, general = _ecmp_pipelines()
    pair = HalvesPair(fused, general)
    rnd = random.Random(11)
    now = 0
    for _ in range(1500):
        now += rnd.choice((1, 10, 1000, 60_000))
        pair.run(_random_packet(rnd), rnd.randrange(8), now, _random_qms(rnd, now))
    for name in ("last_seen", "flowlet_ids"):
        for i in range(fused.register_size(name)):
            assert fused.register_read(name, i) == general.register_read(name, i)


def _fabric_packet(rnd: random.Random, ips: list[str]) -> bytes:
    dst = bytes(int(x) for x in rnd.choice(ips).split("."))
    src = bytes(int(x) for x in rnd.choice(ips).split("."))
    proto = rnd.choice((6, 17, 17))
    l4 = struct.pack("!HH", rnd.randrange(1 << 16), rnd.choice((4791, rnd.randrange(1 << 16))))
    l4 += bytes(rnd.randrange(256) for _ in range(16 if proto == 6 else 4))
    body = l4 + bytes(rnd.randrange(64))
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, rnd.choice((0, 1, 2)), 20 + len(body), 0, 0x4000,
                     64, proto, 0, src, dst)
    words = sum(struct.unpack("!10H", ip))
    while words >> 16:
        words = (words & 0xFFFF) + (words >> 16)
    ip = ip[:10] + struct.pack("!H", ~words & 0xFFFF) + ip[12:]
    pkt = b"\x02\xfe\x00\x01\x00\x01" + b"\x02\x00\x0a\x00\x00\x02\x08\x00" + ip + body
    return pkt if rnd.random() < 0.9 else pkt[: rnd.randrange(len(pkt) + 1)]


def test_fabric_program_queue_metadata_reaches_egress() -> None:
    """fabric.p4 (edge1 of a k=4 fat-tree, its controller's entries) reads deq_qdepth in
    egress (ECN marking, queue-depth registers): the fused egress half must see the queue's
    metadata, not an empty queue's, and send the same bytes."""
    from model.pipeline_target import install_on_pipeline
    from model.spec import fat_tree
    from sim.network import SimConfig, SimNetwork

    spec = fat_tree(4)
    net = SimNetwork(spec, "ecmp", SimConfig())
    pipes = []
    for _ in range(2):
        p = Pipeline(fabric_program(), drop_port=DROP_PORT, cpu_port=CPU_PORT, seed=1)
        install_on_pipeline(p, net.entries["edge1"])
        pipes.append(p)
    fused, general = pipes[0], _general(pipes[1])
    assert fused.egress_fast.__name__ == "process_fused_egress"
    pair = HalvesPair(fused, general)
    ips = [h.ip for h in spec.hosts.values()]
    rnd = random.Random(5)
    now, sent, marked = 0, 0, 0
    for _ in range(800):
        now += rnd.choice((1, 10, 1000))
        for outputs, *_ in pair.run(_fabric_packet(rnd, ips), rnd.randrange(1, 5), now,
                                    _random_qms(rnd, now)):
            sent += len(outputs)
            marked += sum(len(o.data) > 15 and o.data[15] & 3 == 3 for o in outputs)
    assert sent > 400 and marked > 0  # forwarded, and the queue depth did ECN-mark some
    for name in fused.registers:
        for i in range(fused.register_size(name)):
            assert fused.register_read(name, i) == general.register_read(name, i), name


def test_general_halves_are_the_fallback() -> None:
    """A program that does not fuse keeps ingress/egress behind the _fast names."""
    from p4switch.stf.runner import load_program

    prog = next(p for p in STF_PROGRAMS if p.stem == "multicast")
    p = Pipeline(load_program(prog))
    assert p.fused_reason
    r = p.ingress_fast(b"\x00" * 60, 1, 0)
    assert all(isinstance(j, EgressJob) for j in r.jobs)
    assert "ingress_fast" not in vars(p)
    assert "ingress_lean" not in vars(p) and "egress_lean" not in vars(p)
