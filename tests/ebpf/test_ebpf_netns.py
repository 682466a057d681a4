"""End to end in network namespaces, as root: ``p4switch --target ebpf`` forwards between two
hosts inside the kernel, programmed over P4Runtime by the same server as the Python target;
the CPU port carries packet-in and packet-out; counters and registers are read and written
over P4Runtime; and the filters and the CPU veth are gone after the switch stops."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from p4switch.ebpf import toolchain

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "switch"))
from switch_netns import Topo, recv_all  # noqa: E402
from test_switch_netns import (  # noqa: E402
    ROUTER_MAC,
    _ours,
    assert_routed,
    install_routes,
    send_routed,
    udp,
)

from tests.netutil import free_port, serve_free, spawn_logged  # noqa: E402

REASON = toolchain.unavailable_reason()
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or "")]
IPV4_P4 = ROOT / "tests" / "switch" / "p4" / "ipv4.p4"


@pytest.fixture
def topo() -> Iterator[Topo]:
    with Topo(tag="e") as t:
        yield t


def _tc_filters(ifname: str) -> str:
    return subprocess.run(["tc", "filter", "show", "dev", ifname, "ingress"],
                          capture_output=True, text=True, check=False).stdout


def test_cli_target_ebpf_forwards_in_the_kernel_over_p4runtime(topo: Topo) -> None:
    addr = f"127.0.0.1:{free_port()}"
    cmd = [sys.executable, "-m", "p4switch", str(IPV4_P4), "--target", "ebpf",
           "--grpc-server-addr", addr, "--cpu-port", "64"]
    for h in topo.hosts:
        cmd += ["-i", f"{h.port}@{h.sw_ifname}"]
    run = spawn_logged(cmd, "eBPF data plane on")
    proc, log = run.proc, run.log
    try:
        assert run.ready.wait(60), "\n".join(log[-30:])
        assert "bpf" in _tc_filters(topo.hosts[0].sw_ifname)
        install_routes(addr, [(0x0A000200, 24, 2, 0x020000000002, "MyIngress.ipv4_forward")])
        sent, got = send_routed(topo)
        assert_routed(got, len(sent))
    finally:
        run.stop(15)
    assert proc.returncode == 0, "\n".join(log[-30:])
    stats = next(ln for ln in log if "eBPF: rx=" in ln)
    assert " tx=50 " in stats and " drop=0 " not in stats
    for h in topo.hosts:  # the clsact qdisc and its filter went with the switch
        assert "bpf" not in _tc_filters(h.sw_ifname)
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f"p4ft-c{proc.pid}k" not in links


def test_cli_target_ebpf_refuses_a_program_it_cannot_express(topo: Topo, tmp_path: Path) -> None:
    # a veth of our own (never the root namespace's lo: a program that were accepted by mistake
    # would stay attached there), so the refusal is checked on a real interface
    sys.path.insert(0, str(ROOT / "tests" / "ebpf"))
    from test_ebpf_codegen import _WIDE  # a 128-bit header field

    bad = tmp_path / "wide.p4"
    bad.write_text(_WIDE)
    r = subprocess.run([sys.executable, "-m", "p4switch", str(bad), "--target", "ebpf",
                        "--no-grpc", "-i", f"1@{topo.hosts[0].sw_ifname}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    line = r.stderr.strip().splitlines()[-3:]
    assert any("wide.p4:" in ln and "not supported by the eBPF back end" in ln for ln in line), \
        r.stderr


def _start_recording(sw, program: Path, rate_bps: float, ifname: str) -> str:
    """Load ``program`` (ipv4.p4 or a variant), route 10.0.2.0/24 to port 2 with
    ipv4_forward_record (the queue depths into the IPv4 header), serve port 2 at ``rate_bps``,
    start; tc's qdiscs and classes on ``ifname`` then."""
    from p4switch.frontend import compile_file
    from p4switch.pipeline.api import LpmMatch, TableEntry

    sw.load_program(compile_file(str(program)))
    sw.pipeline.table_add("ipv4_lpm", TableEntry(
        match={"hdr.ipv4.dstAddr": LpmMatch(0x0A000200, 24)}, action="ipv4_forward_record",
        params={"dstAddr": 0x020000000002, "port": 2}))
    sw.set_port_rate(2, rate_bps)
    sw.start()
    return "".join(subprocess.run(["tc", kind, "show", "dev", ifname], capture_output=True,
                                  text=True).stdout for kind in ("qdisc", "class"))


def test_port_rate_and_depth_are_modelled_in_the_kernel(topo: Topo) -> None:
    """A burst into a 100 kb/s port of depth 8: the program's queue model tail-drops beyond the
    depth and the P4 program sees the queue (ipv4_forward_record writes deq_qdepth into the IPv4
    identification: 0 for the first frame, up to depth - 1); HTB serves the port at its rate;
    port_stats reads the model back; stopping the switch removes the qdisc."""
    from p4switch.ebpf.switch import EbpfSwitch

    h1, h2 = topo.hosts
    sw = EbpfSwitch({1: h1.sw_ifname, 2: h2.sw_ifname}, queue_depth=8)
    try:
        # 83 ms a frame: slow enough for a loaded sender to fill it
        assert "htb" in _start_recording(sw, IPV4_P4, 1e5, h2.sw_ifname)
        s1, s2 = topo.host_socket(1), topo.host_socket(2)
        try:
            for i in range(100):
                s1.send(udp("10.0.2.1", sport=2000 + i, payload=b"x" * 1000))
            got = recv_all(s2, timeout=1.0, accept=_ours)
            st = sw.port_stats()[2]  # after the last arrival: every frame went through ingress
        finally:
            s1.close()
            s2.close()
        assert st["queue_depth_limit"] == 8 and st["rate_bps"] == 1e5
        # every frame either left or was tail-dropped by the model (how many left depends on
        # how fast this process sent them)
        assert st["tail_drops"] > 0 and len(got) + st["tail_drops"] == 100
        assert st["queue_enqueued"] == len(got)
        depths = [int.from_bytes(f[18:20], "big") for f in got]  # IPv4 identification
        assert depths[0] == 0 and max(depths) == 7 and all(d < 8 for d in depths), depths
    finally:
        sw.stop(log_stats=False)
    assert "htb" not in subprocess.run(["tc", "qdisc", "show", "dev", h2.sw_ifname],
                                       capture_output=True, text=True).stdout


def test_p4runtime_rows_and_packet_io_on_fabric_p4(topo: Topo) -> None:
    """fabric.p4 on the eBPF target behind the unchanged P4Runtime server: the conformance
    rows of docs/p4runtime.md that concern tables, counters and registers answer the same
    codes; counters and the direct counter read over P4Runtime count the frames the kernel
    forwarded; a register written over P4Runtime is what the program reads; PacketOut leaves
    on the port its header names and a frame routed to the CPU port arrives as PacketIn."""
    import grpc
    from p4.v1 import p4runtime_pb2
    from scapy.layers.l2 import Ether

    from controller.p4rt_codec import P4Schema
    from model.routing import PROBE_IP, route_cpu, route_nhop
    from p4switch import device_config, p4info
    from p4switch.ebpf.switch import EbpfSwitch

    sys.path.insert(0, str(ROOT / "tests" / "runtime"))
    from runtime_client import RawClient

    h1, h2 = topo.hosts
    bundle = device_config.bundle_from_file(ROOT / "p4src" / "fabric.p4")
    info = p4info.build_p4info(device_config.compile_bundle(bundle))
    schema = P4Schema(info)
    sw = EbpfSwitch({1: h1.sw_ifname, 2: h2.sw_ifname}, device_id=1, cpu_port=255)
    server, addr = serve_free(sw)
    sw.start()
    client = RawClient(addr)
    try:
        client.arbitrate()
        client.set_pipeline(info, bundle.to_bytes())

        def code(*updates) -> str:
            try:
                client.write(*updates)
                return "OK"
            except grpc.RpcError as e:
                return e.code().name if e.code() != grpc.StatusCode.UNKNOWN else "BATCH"

        route = route_nhop("10.0.2.0/24", 2, 0x020000000002)
        assert code(schema.update("insert", route)) == "OK"  # write-ok
        assert code(schema.update("insert", route)) in ("ALREADY_EXISTS", "BATCH")
        missing = route_nhop("10.9.0.0/16", 2, 1)
        assert code(schema.update("modify", missing)) in ("NOT_FOUND", "BATCH")
        assert code(schema.update("insert", route_cpu(f"{PROBE_IP}/32"))) == "OK"
        assert code(schema.register_write("MyIngress.wam_counter", 3, 41)) == "OK"
        size = next(r.size for r in info.registers if r.preamble.name == "MyIngress.wam_counter")
        assert code(schema.register_write("MyIngress.wam_counter", size, 1)) in (
            "OUT_OF_RANGE", "BATCH")
        (ent,) = client.read(schema.register_entity("MyIngress.wam_counter", 3))
        assert int.from_bytes(ent.register_entry.data.bitstring, "big") == 41
        assert sw.pipeline.register_read("MyIngress.wam_counter", 3) == 41  # in the map

        s1, s2 = topo.host_socket(1), topo.host_socket(2)
        try:
            for i in range(20):
                s1.send(udp("10.0.2.1", sport=3000 + i))
            got = recv_all(s2, timeout=1.0, want=20, accept=_ours)
            # PacketOut on port 2
            po = p4runtime_pb2.StreamMessageRequest()
            po.packet.CopyFrom(schema.packet_out(udp("10.0.2.1", sport=4444), egress_port=2))
            client.send(po)
            out = recv_all(s2, timeout=1.0, want=1, accept=_ours)
            # a frame to the probe address goes to the CPU port: a PacketIn
            s1.send(udp(PROBE_IP))
            pin = client.next_message("packet", timeout=5.0)
        finally:
            s1.close()
            s2.close()
        assert len(got) == 20
        assert [Ether(f)["UDP"].sport for f in out] == [4444]
        assert not isinstance(pin, grpc.RpcError) and udp(PROBE_IP)[26:34] in pin.packet.payload
        (rx,) = client.read(schema.counter_entity("MyIngress.port_rx_ctr", 1))
        assert rx.counter_entry.data.packet_count >= 21
        want = schema.table_wildcard("MyIngress.ipv4_lpm")
        want.table_entry.counter_data.SetInParent()  # ask for the direct counter too
        ents = client.read(want)
        direct = [e.table_entry for e in ents if e.table_entry.match[0].lpm.prefix_len == 24]
        assert direct and direct[0].counter_data.packet_count == 20  # the direct counter
    finally:
        client.close()
        server.stop(0).wait()
        sw.stop(log_stats=False)


def test_fabric_differential_in_namespaces() -> None:
    """fabric.p4 (ECMP, the controller's entries for the k=4 edge switch edge1) attached to four
    veths in namespaces: 2,400 seeded frames sent from the hosts (TTL expiry, corrupt
    checksums, truncated frames and probes to the CPU port among them) leave on the same ports
    with the same bytes as the Python pipeline's outputs for the same frames, and the
    program's counters equal the Python pipeline's."""
    import socket

    sys.path.insert(0, str(ROOT / "tests" / "controller"))
    sys.path.insert(0, str(ROOT / "tests" / "ebpf"))
    from collections import Counter

    from ctl_helpers import fabric_program
    from test_ebpf_pipeline import _frames

    from model.pipeline_target import install_on_pipeline
    from model.routing import compute_fabric_entries
    from model.spec import fat_tree
    from p4switch.ebpf.switch import EbpfSwitch
    from p4switch.pipeline import Pipeline

    spec, prog = fat_tree(4), fabric_program()
    ents = compute_fabric_entries(spec, "ecmp")["edge1"]
    py = Pipeline(prog, cpu_port=255, seed=1)
    install_on_pipeline(py, ents)
    t = Topo(tag="d", n=4).create()
    sw = EbpfSwitch({h.port: h.sw_ifname for h in t.hosts}, cpu_port=255)
    socks: list[socket.socket] = []
    try:
        sw.load_program(prog)
        install_on_pipeline(sw.pipeline, ents)
        sw.start()
        socks = [t.host_socket(h.port) for h in t.hosts]
        for s in socks:
            s.setsockopt(socket.SOL_SOCKET, 33, 1 << 25)  # SO_RCVBUFFORCE: hold every frame
        want: dict[int, Counter[bytes]] = {h.port: Counter() for h in t.hosts}
        to_cpu = 0
        frames = [(f, p) for f, p in _frames(spec, "edge1", 2600, seed=21) if p != 255][:2400]
        for f, port in frames:
            for o in py.process(f, port, 0).outputs:
                if o.port == 255:
                    to_cpu += 1
                else:
                    want[o.port][o.data] += 1
            socks[port - 1].send(f)
        ours = lambda d: len(d) >= 14 and d[12:14] == b"\x08\x00"  # noqa: E731
        got = {h.port: Counter(recv_all(socks[h.port - 1], timeout=1.5, accept=ours))
               for h in t.hosts}
        # a host's own frames come back to it only as outputs of the switch (veth: no loop)
        assert got == want, {p: (sum(got[p].values()), sum(want[p].values())) for p in want}
        assert sum(sum(c.values()) for c in want.values()) > 1500 and to_cpu > 50
        assert sw.pipeline.stats()["cpu"] == to_cpu
        for name in py.counters:
            for i in range(py.counter_size(name)):
                assert sw.pipeline.counter_read(name, i) == py.counter_read(name, i), (name, i)
    finally:
        for s in socks:
            s.close()
        sw.stop(log_stats=False)
        t.destroy()


def test_priority_queues_serve_priority_traffic_first(topo: Topo, tmp_path: Path) -> None:
    """--priority-queues 2 on this target: behind a burst of priority-0 frames that fills the
    100 kb/s port's queue, priority-1 frames (standard_metadata.priority, as fabric.p4 gives its
    probes) are neither tail-dropped nor queued behind the burst: the model lets them find only
    the priority traffic ahead (deq_qdepth), and their priority's HTB leaf sends them first."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from p4switch.ebpf.switch import EbpfSwitch

    src = IPV4_P4.read_text().replace(
        "            ipv4_lpm.apply();",
        "            if (hdr.ipv4.ttl == 200) { standard_metadata.priority = 1; }\n"
        "            ipv4_lpm.apply();", 1)
    assert "priority = 1" in src
    prio_p4 = tmp_path / "prio.p4"
    prio_p4.write_text(src)
    h1, h2 = topo.hosts
    sw = EbpfSwitch({1: h1.sw_ifname, 2: h2.sw_ifname}, queue_depth=8, priority_queues=2)

    def frame(sport: int, ttl: int) -> bytes:
        return bytes(Ether(src="02:00:00:00:00:01", dst=ROUTER_MAC)
                     / IP(src="10.0.1.1", dst="10.0.2.1", ttl=ttl)
                     / UDP(sport=sport, dport=9999) / (b"x" * 1000))

    try:
        assert "1:11" in _start_recording(sw, prio_p4, 1e5, h2.sw_ifname)  # 83 ms a frame
        s1, s2 = topo.host_socket(1), topo.host_socket(2)
        try:
            for i in range(30):
                s1.send(frame(2000 + i, 64))
            for i in range(3):
                s1.send(frame(5000 + i, 200))
            got = recv_all(s2, timeout=1.0, accept=_ours)
            st = sw.port_stats()[2]
        finally:
            s1.close()
            s2.close()
        sports = [Ether(f)["UDP"].sport for f in got]
        high = [i for i, p in enumerate(sports) if p >= 5000]
        assert len(high) == 3, sports  # none tail-dropped
        assert st["tail_drops"] > 0  # the burst filled the priority-0 queue
        low_after = [p for p in sports[high[-1] + 1:] if p < 5000]
        assert low_after, sports  # they overtook queued priority-0 frames
        depths = [int.from_bytes(got[i][18:20], "big") for i in high]
        assert max(depths) <= 2, depths  # only priority traffic ahead of them
    finally:
        sw.stop(log_stats=False)


def test_digests_reach_the_switchs_listeners(topo: Topo) -> None:
    """On interfaces, the switch reads the program's digests from its ring buffer and hands
    them to its digest listeners (the P4Runtime server's DigestList)."""
    import threading

    from p4switch.ebpf.switch import EbpfSwitch
    from p4switch.pipeline.api import Digest
    from p4switch.stf.runner import load_program

    h1, h2 = topo.hosts
    sw = EbpfSwitch({5: h1.sw_ifname, 2: h2.sw_ifname})
    got: list[Digest] = []
    done = threading.Event()

    def listener(d: Digest) -> None:
        got.append(d)
        if len(got) == 10:
            done.set()

    try:
        sw.load_program(load_program(ROOT / "tests/stf/programs/digest_log_drop.p4"))
        sw.add_digest_listener(listener)
        sw.start()
        s1 = topo.host_socket(1)
        try:
            for i in range(10):
                s1.send(bytes.fromhex(f"000000000002 0000000000{i:02x} 9000 02 00 00 00"
                                      .replace(" ", "")))
            assert done.wait(10), got
        finally:
            s1.close()
        assert [(d.name, d.receiver, d.values["port"]) for d in got] == [("learn_t", 1, 5)] * 10
        assert [d.values["src"] for d in got] == list(range(10))
        assert sw.counters.digests == 10
    finally:
        sw.stop(log_stats=False)


def test_the_egress_qdiscs_drops_are_read_for_the_guard(topo: Topo) -> None:
    """``qdisc.drops``, which ``hidden_stats`` reports as the ``egress_qdisc`` discards (what a
    port's HTB qdisc dropped: the model should never let it), reads the root qdisc's drops: a
    burst written straight into a 100 kb/s port's qdisc, bypassing the program; each frame the
    kernel refused is one drop."""
    import errno

    from p4switch.ebpf import qdisc

    ifname = topo.hosts[0].sw_ifname
    qdisc.serve_at(ifname, 1e5, 1)                 # pfifo of 4 * 1 + 64 frames
    try:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((ifname, 0))
        refused = 0
        try:
            for _ in range(200):
                try:
                    s.send(udp("10.0.1.1", payload=b"x" * 1000))
                except OSError as e:
                    assert e.errno == errno.ENOBUFS, e
                    refused += 1
        finally:
            s.close()
        assert refused > 0 and qdisc.drops({ifname}) == refused
        assert qdisc.drops({"p4ft-none"}) == 0 and qdisc.drops(set()) == 0
    finally:
        qdisc.clear(ifname)


def test_a_small_frame_behind_full_ones_finds_them_not_their_time(topo: Topo) -> None:
    """The queue model counts the packets ahead, whatever their sizes, as the Python target's
    queue does: small frames (ACK-sized) behind five 1000-byte frames in a port of depth 8 are
    let in and see fewer than 8 ahead (their transmission time is a twentieth of a full frame's,
    so the backlog over it would have tail-dropped them)."""
    from p4switch.ebpf.switch import EbpfSwitch

    h1, h2 = topo.hosts
    sw = EbpfSwitch({1: h1.sw_ifname, 2: h2.sw_ifname}, queue_depth=8)
    try:
        _start_recording(sw, IPV4_P4, 1e5, h2.sw_ifname)  # 83 ms a full frame
        s1, s2 = topo.host_socket(1), topo.host_socket(2)
        try:
            for i in range(5):
                s1.send(udp("10.0.2.1", sport=2000 + i, payload=b"x" * 1000))
            for i in range(2):
                s1.send(udp("10.0.2.1", sport=3000 + i, payload=b"ack"))
            got = recv_all(s2, timeout=1.0, accept=_ours)
            st = sw.port_stats()[2]
        finally:
            s1.close()
            s2.close()
        assert st["tail_drops"] == 0 and len(got) == 7, st
        small = [int.from_bytes(f[18:20], "big") for f in got if len(f) < 100]
        assert len(small) == 2 and all(d < 8 for d in small), small   # deq_qdepth
        assert st["queue_max_depth"] <= 7
    finally:
        sw.stop(log_stats=False)
