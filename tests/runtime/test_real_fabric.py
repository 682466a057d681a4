"""End to end with the real pieces: ``python -m p4switch.compile`` on p4src/fabric.p4, the real
front end and pipeline inside a Switch with memory ports, and p4runtime-shell pushing the
pipeline, installing routes, reading counters and doing packet-out / packet-in."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from p4runtime_sh import shell as sh
from runtime_client import RawClient

from p4switch import p4info as p4info_mod

try:
    from p4switch.frontend import compile_file  # noqa: F401
    from p4switch.pipeline import Pipeline  # noqa: F401

    READY = True
except ImportError:
    READY = False

pytestmark = pytest.mark.skipif(not READY, reason="front end / pipeline not available yet")

scapy = pytest.importorskip("scapy.all")
CPU = 255
FABRIC = Path(__file__).resolve().parents[2] / "p4src" / "fabric.p4"


def frame(dst_ip: str) -> bytes:
    s = scapy
    return bytes(s.Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:aa")
                 / s.IP(src="10.0.0.1", dst=dst_ip, ttl=64) / s.UDP(sport=1000, dport=2000)
                 / b"payload")


@pytest.fixture
def fabric(tmp_path):
    from conftest import shell_switch

    with shell_switch(FABRIC, tmp_path, (1, 2), cpu_port=CPU) as env:
        yield env


def test_route_counters_packet_out_and_packet_in(fabric):
    sw, ports, addr, info = fabric
    assert sw.pipeline is not None and sw.program is not None

    te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.set_nhop")
    te.match["hdr.ipv4.dstAddr"] = "10.1.0.0/16"
    te.action["port"] = "2"
    te.action["dmac"] = "00:00:00:00:00:02"
    te.insert()
    cpu = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.send_to_cpu")
    cpu.match["hdr.ipv4.dstAddr"] = "10.9.0.0/16"
    cpu.insert()
    assert len(list(sh.TableEntry("MyIngress.ipv4_lpm").read())) == 2

    ports[1].feed(frame("10.1.2.3"))
    (out,) = ports[2].wait_sent(1)
    assert out[:6] == bytes.fromhex("000000000002")
    sw.wait_idle()

    # the direct counter of the route and the per-port counter saw the packet
    counts = {tuple(e.table_entry.match["hdr.ipv4.dstAddr"].lpm.value): e.packet_count
              for e in sh.DirectCounterEntry("MyIngress.ipv4_lpm_ctr").read()}
    assert counts[tuple(b"\x0a\x01\x00\x00")] == 1
    c = sh.CounterEntry("MyIngress.port_rx_ctr")
    c.index = 1
    (rx,) = list(c.read())
    assert rx.packet_count == 1

    # packet-out: the header is stripped and the frame leaves on the named port
    raw = frame("10.7.7.7")
    sh.PacketOut(raw, egress_port="2", _pad="0").send()
    sent = ports[2].wait_sent(2)
    assert sent[1] == raw

    # packet-in: the route to the CPU delivers the frame with its ingress port
    pin = sh.PacketIn()
    ports[1].feed(frame("10.9.1.1"))
    got = list(pin.sniff(timeout=1))
    assert len(got) == 1
    md = {m.metadata_id: m.value for m in got[0].packet.metadata}
    assert md[1] == b"\x01"
    assert got[0].packet.payload[:6] == bytes.fromhex("000000000001")

    # delete: the route is gone
    te.delete()
    assert len(list(sh.TableEntry("MyIngress.ipv4_lpm").read())) == 1


def test_registers_read_write_on_the_real_pipeline(fabric):
    sw, ports, addr, info = fabric
    reg = next(r for r in info.registers if r.preamble.name == "MyIngress.flowlet_id")
    client = RawClient(addr, (0, 0))  # a backup: reads only
    try:
        client.arbitrate()
        upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
        upd.entity.register_entry.register_id = reg.preamble.id
        upd.entity.register_entry.index.index = 5
        upd.entity.register_entry.data.bitstring = b"\x12\x34"
        with pytest.raises(grpc.RpcError) as ei:
            client.write(upd)
        assert ei.value.code() == grpc.StatusCode.PERMISSION_DENIED
        sh.client.write_update(upd)  # the shell's session is the primary
        entity = p4runtime_pb2.Entity()
        entity.register_entry.register_id = reg.preamble.id
        entity.register_entry.index.index = 5
        (e,) = client.read(entity)
        assert e.register_entry.data.bitstring == b"\x12\x34"
        assert sw.pipeline.register_read("MyIngress.flowlet_id", 5) == 0x1234
        upd.entity.register_entry.index.index = reg.size
        with pytest.raises(Exception, match="OUT_OF_RANGE"):
            sh.client.write_update(upd)
    finally:
        client.close()


def test_switch_started_with_a_program_serves_it_without_a_push(tmp_path):
    """What `p4switch fabric.p4` does: the program is loaded before the server starts; a client
    connects, fetches the P4Info and a device config that compiles back to the same P4Info."""
    from p4switch import device_config
    from p4switch.frontend import compile_file
    from p4switch.switch import Switch
    from tests.netutil import serve_free

    sw = Switch(device_id=3, cpu_port=CPU)
    sw.load_program(compile_file(str(FABRIC)))
    server, addr = serve_free(sw)
    try:
        sh.setup(device_id=3, grpc_addr=addr, election_id=(0, 1), verbose=False)
        try:
            assert sh.context.get_table_id("ipv4_lpm")
            te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.drop_route")
            te.match["hdr.ipv4.dstAddr"] = "10.0.0.0/8"
            te.insert()
            assert len(sw.pipeline.table_entries("MyIngress.ipv4_lpm")) == 1
        finally:
            sh.teardown()
        c = RawClient(addr, (0, 0), device_id=3)
        try:
            resp = c.stub.GetForwardingPipelineConfig(
                p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=3))
        finally:
            c.close()
        bundle = device_config.parse_bundle(resp.config.p4_device_config)
        again = p4info_mod.build_p4info(device_config.compile_bundle(bundle))
        assert again == resp.config.p4info
    finally:
        server.stop(0).wait()
        sw.stop(log_stats=False)
