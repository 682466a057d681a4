"""Fixtures: a running Switch (fake pipeline) with the P4Runtime server on a free local port,
the sample program's P4Info/device-config files, and a small raw-protobuf client."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
import runtime_sample_ir as sample_ir
from runtime_client import RawClient, sample_bundle_bytes
from runtime_fakes import FakePipeline

from p4switch import device_config, p4info
from p4switch.switch import Switch
from tests.netutil import serve_free

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


@contextmanager
def shell_switch(program: Path, tmp_path: Path, port_numbers: tuple[int, ...], cpu_port: int
                 ) -> Iterator[tuple[Switch, dict, str, object]]:
    """A real Switch running ``program`` (compiled by p4switch.compile) with MemoryPorts
    ``port_numbers``, served over P4Runtime on a free local port, and p4runtime-shell set up
    against it as primary; yields (switch, ports, address, parsed P4Info), torn down after."""
    from p4runtime_sh import shell as sh

    from p4switch import compile as p4compile
    from p4switch.ports import MemoryPort

    info, dev = tmp_path / f"{program.stem}.p4info.txtpb", tmp_path / f"{program.stem}.bin"
    assert p4compile.main([str(program), "--p4info", str(info), "--device-config", str(dev)]) == 0
    sw = Switch(device_id=1, cpu_port=cpu_port)
    ports = {n: sw.add_port(MemoryPort(n, f"m{n}")) for n in port_numbers}
    server, addr = serve_free(sw)
    sw.start()
    try:
        sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1),
                 config=sh.FwdPipeConfig(str(info), str(dev)), verbose=False)
        try:
            yield sw, ports, addr, p4info.parse(info.read_bytes())
        finally:
            sh.teardown()
    finally:
        server.stop(0).wait()
        sw.stop(log_stats=False)

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
    server, addr = serve_free(sw, compiler=fake_compiler)
    port = int(addr.rsplit(":", 1)[1])
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
