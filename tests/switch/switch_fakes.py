"""A tiny stand-in pipeline that speaks ``p4switch.pipeline.api`` — lets the switch loop, queues
and ports be tested without the P4 front end or the real pipeline.

Frame convention (all frames are Ethernet-sized byte strings):
* byte 0 (the first destination-MAC byte) is the egress port; 0xFF means mark_to_drop;
* a frame shorter than 20 bytes is a parser error (too short for the "parser");
* a frame whose byte 1 is 0xEE makes ingress raise (a pipeline bug must not kill the switch);
* a frame whose byte 1 is 0xDD also emits a digest;
* byte 0 = 0xFE makes two copies, to ports 2 and 3 (a multicast group);
* packet_out frames (ingress on cpu_port) carry a 2-byte header = egress port, stripped here;
* output on cpu_port gets a 2-byte packet_in header = ingress port.
Egress appends nothing; it records the QueueingMetadata it saw in ``qmetas``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4switch.pipeline import api


@dataclass
class _State:
    data: bytes
    ingress_port: int


@dataclass
class FakePipeline:
    drop_port: int = 511
    cpu_port: int | None = None
    program: object = None
    qmetas: list[tuple[int, api.QueueingMetadata]] = field(default_factory=list)
    ingress_calls: int = 0
    egress_calls: int = 0

    def ingress(self, data: bytes, port: int, now_us: int) -> api.IngressResult:
        self.ingress_calls += 1
        res = api.IngressResult()
        if self.cpu_port is not None and port == self.cpu_port:
            egress_port = int.from_bytes(data[:2], "big")
            data = data[2:]
        else:
            if len(data) < 20:
                res.drops.append(api.Drop("parser_error", "PacketTooShort"))
                return res
            if data[1] == 0xEE:
                raise RuntimeError("fake pipeline bug")
            if data[1] == 0xDD:
                res.digests.append(api.Digest("learn", 1, {"port": port, "b0": data[0]}))
            egress_port = data[0]
            if egress_port == 0xFF:
                res.drops.append(api.Drop("mark_to_drop"))
                return res
            if egress_port == 0xFE:
                for p in (2, 3):
                    res.jobs.append(api.EgressJob(p, 0, len(data), _State(data, port)))
                return res
        res.jobs.append(api.EgressJob(egress_port, 0, len(data), _State(data, port)))
        return res

    def egress(
        self, job: api.EgressJob, now_us: int, qmeta: api.QueueingMetadata
    ) -> api.EgressResult:
        self.egress_calls += 1
        self.qmetas.append((now_us, qmeta))
        st: _State = job.state
        data = st.data
        if self.cpu_port is not None and job.egress_port == self.cpu_port:
            data = st.ingress_port.to_bytes(2, "big") + data
        return api.EgressResult(outputs=[api.Output(job.egress_port, data)])


def fake_factory(program: object, *, drop_port: int = 511, cpu_port: int | None = None):
    """Stands in for ``p4switch.pipeline.Pipeline`` in ``Switch(pipeline_factory=...)``."""
    return FakePipeline(drop_port=drop_port, cpu_port=cpu_port, program=program)


def frame(egress_port: int, size: int = 64, tag: int = 0, seq: int = 0) -> bytes:
    """A frame the fake forwards to ``egress_port``; ``seq`` is put in bytes 14..17."""
    body = bytes([egress_port, tag]) + bytes(12) + seq.to_bytes(4, "big")
    return body + bytes(max(0, size - len(body)))


@dataclass
class FakeProcessPipeline(FakePipeline):
    """Also offers ``process`` (ingress and egress with empty queues), as the real pipeline
    does: the switch then runs frames inline when no queue has a rate."""

    process_calls: int = 0

    def process(self, data: bytes, port: int, now_us: int) -> api.ProcessResult:
        self.process_calls += 1
        ing = self.ingress(data, port, now_us)
        res = api.ProcessResult(digests=ing.digests, drops=ing.drops, logs=ing.logs)
        for job in ing.jobs:
            eg = self.egress(job, now_us, api.QueueingMetadata(enq_timestamp=now_us))
            res.outputs.extend(eg.outputs)
        return res


@dataclass
class FakeFastPipeline(FakeProcessPipeline):
    """Also offers ``process_fast``: ``(port, bytes)`` for a lone output, a ``Drop`` for a lone
    drop, the full ``ProcessResult`` otherwise."""

    fast_calls: int = 0

    def process_fast(
        self, data: bytes, port: int, now_us: int
    ) -> tuple[int, bytes] | api.Drop | api.ProcessResult:
        self.fast_calls += 1
        res = self.process(data, port, now_us)
        if len(res.outputs) == 1 and not (res.drops or res.digests or res.logs):
            return res.outputs[0].port, res.outputs[0].data
        if len(res.drops) == 1 and not (res.outputs or res.digests or res.logs):
            return res.drops[0]
        return res


FAKES = {"split": FakePipeline, "process": FakeProcessPipeline, "fast": FakeFastPipeline}
"""The switch's three packet paths: ingress/queue/egress, inline ``process``, ``process_fast``."""
