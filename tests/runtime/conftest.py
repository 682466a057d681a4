"""Fixtures: a running Switch (fake pipeline) with the P4Runtime server on a free local port,
the sample program's P4Info/device-config files, and a small raw-protobuf client."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
import runtime_sample_ir as sample_ir
from runtime_client import RawClient, sample_bundle_bytes
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
