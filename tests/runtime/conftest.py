"""Fixtures: a running Switch (fake pipeline) with the P4Runtime server on a free local port,
the sample program's P4Info/device-config files, and a small raw-protobuf client."""

from __future__ import annotations

import queue
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
import runtime_sample_ir as sample_ir
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from runtime_fakes import FakePipeline

from p4switch import device_config, p4info
from p4switch.runtime import start_server
from p4switch.switch import Switch

CPU_PORT = 64
DEVICE_ID = 1


class FakeCompileError(Exception):
    """What the front end raises, as far as the server is concerned: str() is file:line:col."""


def fake_compiler(bundle: device_config.Bundle):
    """Stands in for the front end: the sample program, or a located compile error."""
    text = bundle.files[bundle.main]
    if "syntax error" in text:
        line = text[: text.index("syntax error")].count("\n") + 1
        raise FakeCompileError(f"{bundle.main}:{line}:1: error: syntax error")
    return sample_ir.build()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Env:
    switch: Switch
    server: grpc.Server
    addr: str

    @property
    def service(self):
        return self.server.p4runtime

    @property
    def pipeline(self) -> FakePipeline:
        return self.switch.pipeline


@pytest.fixture
def env() -> Iterator[Env]:
    sw = Switch(device_id=DEVICE_ID, cpu_port=CPU_PORT, pipeline_factory=FakePipeline)
    port = free_port()
    server = start_server(sw, f"127.0.0.1:{port}", compiler=fake_compiler)
    sw.start()
    try:
        yield Env(sw, server, f"127.0.0.1:{port}")
    finally:
        server.stop(0).wait()
        sw.stop(log_stats=False)


@pytest.fixture
def sample_p4info():
    return p4info.build_p4info(sample_ir.build())


@pytest.fixture
def config_files(tmp_path, sample_p4info):
    """(p4info text path, device config path) as ``p4switch.compile`` would write them."""
    info = tmp_path / "sample.p4info.txtpb"
    info.write_bytes(p4info.serialize(sample_p4info, "text"))
    dev = tmp_path / "sample.bin"
    dev.write_bytes(device_config.Bundle("sample.p4", {"sample.p4": "// sample\n"}).to_bytes())
    return str(info), str(dev)


class RawClient:
    """A minimal P4Runtime client on the raw protos (to send what real clients never would)."""

    def __init__(self, addr: str, election_id: tuple[int, int] | None = (0, 1),
                 device_id: int = DEVICE_ID) -> None:
        self.channel = grpc.insecure_channel(addr)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.election_id = election_id
        self.out: queue.Queue = queue.Queue()
        self.inq: queue.Queue = queue.Queue()
        self.stream = self.stub.StreamChannel(iter(self.out.get, None))
        self._t = threading.Thread(target=self._recv, daemon=True)
        self._t.start()

    def _recv(self) -> None:
        try:
            for msg in self.stream:
                self.inq.put(msg)
        except grpc.RpcError as e:
            self.inq.put(e)

    def arbitrate(self, election_id: tuple[int, int] | None = None):
        if election_id is not None:
            self.election_id = election_id
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        if self.election_id is not None:
            req.arbitration.election_id.high, req.arbitration.election_id.low = self.election_id
        self.out.put(req)
        return self.next_message("arbitration")

    def next_message(self, kind: str, timeout: float = 5.0):
        while True:
            msg = self.inq.get(timeout=timeout)
            if isinstance(msg, grpc.RpcError):
                return msg
            if msg.WhichOneof("update") == kind:
                return msg

    def send(self, req: p4runtime_pb2.StreamMessageRequest) -> None:
        self.out.put(req)

    def write(self, *updates, atomicity=0, election_id=None):
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id, atomicity=atomicity)
        eid = election_id if election_id is not None else self.election_id
        if eid is not None:
            req.election_id.high, req.election_id.low = eid
        req.updates.extend(updates)
        return self.stub.Write(req)

    def read(self, *entities):
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        out = []
        for resp in self.stub.Read(req):
            out.extend(resp.entities)
        return out

    def set_pipeline(self, p4info_msg, device_cfg: bytes, action=None):
        A = p4runtime_pb2.SetForwardingPipelineConfigRequest
        req = A(device_id=self.device_id, action=action or A.VERIFY_AND_COMMIT)
        if self.election_id is not None:
            req.election_id.high, req.election_id.low = self.election_id
        if p4info_msg is not None:
            req.config.p4info.CopyFrom(p4info_msg)
        req.config.p4_device_config = device_cfg
        return self.stub.SetForwardingPipelineConfig(req)

    def close(self) -> None:
        self.out.put(None)
        self.channel.close()


def sample_bundle_bytes() -> bytes:
    return device_config.Bundle("sample.p4", {"sample.p4": "// sample\n"}).to_bytes()


@pytest.fixture
def client(env) -> Iterator[RawClient]:
    c = RawClient(env.addr)
    c.arbitrate()
    yield c
    c.close()


@pytest.fixture
def loaded(env, client, sample_p4info) -> Env:
    """env with the sample pipeline pushed by ``client`` (the primary)."""
    client.set_pipeline(sample_p4info, sample_bundle_bytes())
    return env
