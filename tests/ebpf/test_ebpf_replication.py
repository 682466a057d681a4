"""Clone (I2E, E2E) and multicast on the eBPF target, as root: the packet replication engine's
groups and sessions are BPF maps written from the control plane, and each copy runs egress
on its own. Without namespaces (BPF_PROG_TEST_RUN: the copies land in the test ring), 10,000
seeded frames make the same copies, byte for byte and in the same order, as on the Python
pipeline; in namespaces, bpf_clone_redirect puts the same frames on the wires."""

from __future__ import annotations

import random
import socket
import sys
from collections import Counter
from pathlib import Path

import pytest

from p4switch.ebpf import toolchain
from p4switch.frontend import compile_file
from p4switch.pipeline import Pipeline
from p4switch.pipeline.api import PipelineAPI, Replica, StateCode, StateError

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "ebpf" / "p4" / "replication.p4"
REASON = toolchain.unavailable_reason()
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def _configure(pl: PipelineAPI) -> None:
    """Groups 1-3 (group 4 has none), sessions 5 (one port), 6 (three), 7 (E2E, two)."""
    pl.mcast_group_set(1, [Replica(1, 10), Replica(2, 11), Replica(3, 12), Replica(4, 13)])
    pl.mcast_group_set(2, [Replica(2, 21)])
    pl.mcast_group_set(3, [Replica(4, 30), Replica(4, 31), Replica(1, 32)])
    pl.clone_session_set(5, [Replica(3, 0)])
    pl.clone_session_set(6, [Replica(1, 0), Replica(2, 0), Replica(4, 0)])
    pl.clone_session_set(7, [Replica(2, 0), Replica(3, 0)])


def _frames(n: int, seed: int) -> list[tuple[bytes, int]]:
    """Seeded frames on ports 1-4: every mode, with and without the opt header, some without
    the control header (not ethertype 0x9000) and some too short for it."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        mode = rnd.randrange(8) | (0x80 if rnd.random() < 0.5 else 0)
        eth = rnd.randbytes(12) + (b"\x90\x00" if rnd.random() < 0.9 else b"\x90\x01")
        ctl = bytes([mode, rnd.randrange(256)]) + rnd.randbytes(4)
        body = eth + ctl + rnd.randbytes(rnd.choice((0, 4, 20, 200)))
        if rnd.random() < 0.03:
            body = body[:rnd.randrange(14, 20)]
        out.append((body, rnd.randrange(1, 5)))
    return out


def test_replication_identical_to_the_python_pipeline() -> None:
    from p4switch.ebpf.dataplane import EbpfPipeline

    prog = compile_file(str(PROGRAM))
    py = Pipeline(prog)
    eb = EbpfPipeline(prog, test_mode=True)
    try:
        _configure(py)
        _configure(eb)
        copies = Counter()
        for i, (f, port) in enumerate(_frames(10_000, seed=7)):
            want = [(o.port, o.data) for o in py.process(f, port, i).outputs]
            got = [(o.port, o.data) for o in eb.process(f, port, i).outputs]
            assert got == want, (i, f.hex(), port, got, want)
            copies[len(want)] += 1
        # every kind of outcome occurred: dropped, one frame, and up to five copies
        assert {0, 1, 2, 3, 4} <= set(copies), copies
    finally:
        eb.close()


def test_replica_limits_and_truncation_are_refused_before_any_change() -> None:
    from p4switch.ebpf.dataplane import EbpfPipeline

    eb = EbpfPipeline(compile_file(str(PROGRAM)), test_mode=True)
    try:
        _configure(eb)
        with pytest.raises(StateError) as ei:
            eb.mcast_group_set(2, [Replica(1, r) for r in range(17)])
        assert ei.value.code is StateCode.RESOURCE_EXHAUSTED
        with pytest.raises(StateError) as ei:
            eb.clone_session_set(5, [Replica(1, 0)], truncate_bytes=64)
        assert ei.value.code is StateCode.UNIMPLEMENTED
        assert eb.mcast_groups()[2] == [Replica(2, 21)]
        frame = bytes(12) + b"\x90\x00" + bytes([1, 1]) + bytes(4)  # group 2: port 2 only
        assert [o.port for o in eb.process(frame, 1, 0).outputs] == [2]
        assert [o.port for o in eb.process(bytes(12) + b"\x90\x00" + bytes([2, 0, 0, 0, 0, 0]),
                                           1, 0).outputs] == [3, 1]  # clone to 3, then itself
        eb.mcast_group_delete(2)
        eb.clone_session_delete(5)
        assert eb.process(frame, 1, 0).outputs == []
        assert [o.port for o in eb.process(bytes(12) + b"\x90\x00" + bytes([2, 0, 0, 0, 0, 0]),
                                           1, 0).outputs] == [1]
    finally:
        eb.close()


def test_clone_redirect_in_namespaces() -> None:
    """The program attached to four veths: 400 seeded frames sent from the hosts arrive as
    the Python pipeline's outputs, copies included (bpf_clone_redirect)."""
    sys.path.insert(0, str(ROOT / "tests" / "switch"))
    from switch_netns import Topo, recv_all

    from p4switch.ebpf.switch import EbpfSwitch

    prog = compile_file(str(PROGRAM))
    py = Pipeline(prog)
    _configure(py)
    t = Topo(tag="r", n=4).create()
    sw = EbpfSwitch({h.port: h.sw_ifname for h in t.hosts})
    socks: list[socket.socket] = []
    try:
        sw.load_program(prog)
        _configure(sw.pipeline)
        sw.start()
        socks = [t.host_socket(h.port) for h in t.hosts]
        for s in socks:
            s.setsockopt(socket.SOL_SOCKET, 33, 1 << 25)  # SO_RCVBUFFORCE: hold every frame
        want: dict[int, Counter[bytes]] = {h.port: Counter() for h in t.hosts}
        frames = [(f, p) for f, p in _frames(600, seed=8) if len(f) >= 20][:400]
        for i, (f, port) in enumerate(frames):
            for o in py.process(f, port, i).outputs:
                want[o.port][o.data] += 1
            socks[port - 1].send(f)
        ours = lambda d: len(d) >= 14 and d[12:14] in (b"\x90\x00", b"\x90\x01")  # noqa: E731
        got = {h.port: Counter(recv_all(socks[h.port - 1], timeout=1.5, accept=ours))
               for h in t.hosts}
        assert got == want, {p: (sum(got[p].values()), sum(want[p].values())) for p in want}
        assert sum(sum(c.values()) for c in want.values()) > len(frames)  # copies among them
    finally:
        for s in socks:
            s.close()
        sw.stop(log_stats=False)
        t.destroy()


def test_pre_entries_written_over_p4runtime_replicate_in_the_kernel() -> None:
    """A multicast group and a clone session written as P4Runtime PRE entries (and a batch
    that fails and rolls back) are what the program replicates by."""
    import grpc
    from p4.v1 import p4runtime_pb2

    from p4switch import p4info
    from p4switch.ebpf.dataplane import EbpfPipeline
    from p4switch.switch import Switch
    from tests.netutil import serve_free

    sys.path.insert(0, str(ROOT / "tests" / "runtime"))
    from runtime_client import RawClient, sample_bundle_bytes

    prog = compile_file(str(PROGRAM))
    sw = Switch(device_id=1, pipeline_factory=lambda p, **kw: EbpfPipeline(p, test_mode=True,
                                                                           **kw))
    server, addr = serve_free(sw, compiler=lambda bundle: prog)
    sw.start()
    client = RawClient(addr)
    U = p4runtime_pb2.Update

    def pre(utype: int, kind: str, key: int, *replicas: tuple[int, int]) -> p4runtime_pb2.Update:
        upd = U(type=utype)
        e = getattr(upd.entity.packet_replication_engine_entry, kind)
        setattr(e, "multicast_group_id" if kind == "multicast_group_entry" else "session_id",
                key)
        for port, rid in replicas:
            e.replicas.add(egress_port=port, instance=rid)
        return upd

    try:
        client.arbitrate()
        client.set_pipeline(p4info.build_p4info(prog), sample_bundle_bytes())
        pl = sw.pipeline
        assert isinstance(pl, EbpfPipeline)
        client.write(pre(U.INSERT, "multicast_group_entry", 2, (3, 7), (4, 8)),
                     pre(U.INSERT, "clone_session_entry", 5, (2, 0)))
        mcast = bytes(12) + b"\x90\x00" + bytes([1, 1]) + bytes(4)  # group 2
        i2e = bytes(12) + b"\x90\x00" + bytes([2, 0]) + bytes(4)  # session 5, then port 1
        assert [(o.port, o.data[17]) for o in pl.process(mcast, 1, 0).outputs] == [(3, 7),
                                                                                     (4, 8)]
        assert [o.port for o in pl.process(i2e, 1, 0).outputs] == [2, 1]
        # a rolled-back batch whose second update fails leaves the kernel's group as it was
        rollback = p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR
        with pytest.raises(grpc.RpcError):
            client.write(pre(U.MODIFY, "multicast_group_entry", 2, (2, 9)),
                         pre(U.DELETE, "clone_session_entry", 99), atomicity=rollback)
        assert [o.port for o in pl.process(mcast, 1, 0).outputs] == [3, 4]
        client.write(pre(U.MODIFY, "multicast_group_entry", 2, (2, 9)))
        assert [o.port for o in pl.process(mcast, 1, 0).outputs] == [2]
        client.write(pre(U.DELETE, "multicast_group_entry", 2))
        assert pl.process(mcast, 1, 0).outputs == []
    finally:
        client.close()
        server.stop(0).wait()
        sw.stop(log_stats=False)
        if isinstance(sw.pipeline, EbpfPipeline):
            sw.pipeline.close()
