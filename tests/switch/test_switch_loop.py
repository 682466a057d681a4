"""The switch loop with in-memory ports and a fake pipeline: forwarding, counted drops of bad
frames, robustness against pipeline bugs, packet-out/in, digests, rate-limited queues and the
lock that makes control-plane writes atomic with respect to packets."""

from __future__ import annotations

import threading
import time

import pytest
from switch_fakes import (
    FAKES,
    FakeFastPipeline,
    FakePipeline,
    FakeProcessPipeline,
    fake_factory,
    frame,
)

from p4switch.pcap import PcapWriter, read_pcap
from p4switch.pipeline import api
from p4switch.ports import MemoryPort, PcapFilePort
from p4switch.switch import Switch


@pytest.fixture(params=list(FAKES))
def Fake(request):  # noqa: N802 - a class
    """Each test below runs on the three packet paths of the switch."""
    return FAKES[request.param]


@pytest.fixture
def sw():
    s = Switch(cpu_port=64, pipeline_factory=fake_factory)
    s.add_port(MemoryPort(1))
    s.add_port(MemoryPort(2))
    s.start()
    yield s
    s.stop(log_stats=False)


def _calls(fake: FakePipeline) -> int:
    """Frames that went through the path the fake's class selects."""
    if isinstance(fake, FakeFastPipeline):
        return fake.fast_calls
    if isinstance(fake, FakeProcessPipeline):
        return fake.process_calls
    return fake.ingress_calls


def test_forwards_between_ports_and_counts(sw: Switch, Fake):  # noqa: N803
    fake = Fake(cpu_port=64)
    sw.set_pipeline(fake)
    p1, p2 = sw.ports[1], sw.ports[2]
    assert isinstance(p1, MemoryPort) and isinstance(p2, MemoryPort)
    frames = [frame(2, seq=i) for i in range(500)]
    p1.feed(frames)
    got = p2.wait_sent(500)
    assert got == frames  # order kept, bytes unchanged
    assert sw.wait_idle()
    st = sw.port_stats()
    assert st[1]["rx_packets"] == 500 and st[2]["tx_packets"] == 500
    assert st[2]["tx_bytes"] == sum(len(f) for f in frames)
    assert st[2]["tail_drops"] == 0
    assert st[2]["queue_enqueued"] == st[2]["queue_dequeued"] == 500
    assert st[2]["queue_max_depth"] == 1  # an unlimited queue passes packets straight through
    assert _calls(fake) == 500


def test_no_program_counted_and_dropped(sw: Switch):
    sw.ports[1].feed([frame(2)] * 5)  # type: ignore[attr-defined]  # MemoryPort's (ports holds Port)
    assert sw.wait_idle()
    assert sw.counters.no_program == 5
    assert sw.ports[2].stats.tx_packets == 0


def test_bad_frames_are_counted_per_port_and_the_switch_survives(sw: Switch, Fake):  # noqa: N803
    sw.set_pipeline(Fake(cpu_port=64))
    p1, p2 = sw.ports[1], sw.ports[2]
    bad = [b"", b"\x02" * 5, b"\x02" * 13]  # shorter than an Ethernet header
    bad += [frame(2, size=20000), frame(2, size=1519)]  # oversized
    bad += [b"\x02" * 15]  # parser error in the (fake) program
    bad += [frame(2, tag=0xEE)] * 3  # the pipeline raises
    bad += [frame(0xFF)]  # program drop
    p1.feed(bad)  # type: ignore[attr-defined]  # MemoryPort's (ports holds Port)
    p1.feed(frame(2, seq=7))  # type: ignore[attr-defined]  # MemoryPort's (ports holds Port)
    assert p2.wait_sent(1) == [frame(2, seq=7)]  # type: ignore[attr-defined]  # MemoryPort's (ports holds Port)
    assert sw.wait_idle()
    s = sw.port_stats()[1]
    assert s["rx_packets"] == len(bad) + 1
    assert s["rx_too_short"] == 3
    assert s["rx_oversized"] == 2
    assert s["rx_malformed"] == 1
    assert s["rx_errors"] == 3
    assert s["rx_dropped"] == 1
    assert sw.counters.pipeline_errors == 3
    assert sw.counters.drops["parser_error"] == 1 and sw.counters.drops["mark_to_drop"] == 1
    assert sw.running
    report = sw.stats_report()
    assert "rx_too_short=3" in report and "rx_oversized=2" in report


def test_output_to_missing_port_is_counted(sw: Switch, Fake):  # noqa: N803
    sw.set_pipeline(Fake(cpu_port=64))
    sw.ports[1].feed(frame(9))  # type: ignore[attr-defined]  # MemoryPort's (ports holds Port)
    assert sw.wait_idle()
    assert sw.counters.tx_no_port == 1


def test_packet_out_and_packet_in(sw: Switch, Fake):  # noqa: N803
    sw.set_pipeline(Fake(cpu_port=64))
    got: list[bytes] = []
    ev = threading.Event()

    def on_packet_in(data: bytes) -> None:
        # listeners run without the switch lock held: taking it from another thread must work
        t = threading.Thread(target=lambda: sw.lock.acquire() and sw.lock.release())
        t.start()
        t.join(2)
        assert not t.is_alive()
        got.append(data)
        ev.set()

    sw.add_packet_in_listener(on_packet_in)
    # packet_out header (2 bytes) = egress port 2
    sw.packet_out(b"\x00\x02" + frame(2, seq=1))
    assert sw.ports[2].wait_sent(1) == [frame(2, seq=1)]  # type: ignore[attr-defined]  # MemoryPort's (ports holds Port)
    # a frame from port 1 to the CPU port becomes a packet-in with a 2-byte header (port 1)
    sw.ports[1].feed(frame(64, seq=2))  # type: ignore[attr-defined]  # MemoryPort's (ports holds Port)
    assert ev.wait(5)
    assert got == [b"\x00\x01" + frame(64, seq=2)]
    assert sw.counters.packet_out == 1 and sw.counters.packet_in == 1


def test_digest_listener(sw: Switch, Fake):  # noqa: N803
    sw.set_pipeline(Fake(cpu_port=64))
    got = []
    sw.add_digest_listener(got.append)
    sw.ports[1].feed(frame(2, tag=0xDD))  # type: ignore[attr-defined]  # MemoryPort's (ports holds Port)
    sw.ports[2].wait_sent(1)  # type: ignore[attr-defined]  # MemoryPort's (ports holds Port)
    assert sw.wait_idle()
    deadline = time.monotonic() + 2
    while not got and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(got) == 1 and got[0].name == "learn" and got[0].values["port"] == 1


def test_rate_limited_queue_builds_up_and_tail_drops(Fake):  # noqa: N803
    sw = Switch(pipeline_factory=fake_factory, queue_depth=16)
    p1, p2 = MemoryPort(1), MemoryPort(2)
    sw.add_port(p1)
    sw.add_port(p2)
    fake = Fake()
    sw.set_pipeline(fake)
    sw.set_queue_rate(2, 2000)  # 500 µs per packet: a 40-frame burst overruns 16 slots
    with sw:
        p1.feed([frame(2, seq=i) for i in range(40)])
        sent = p2.wait_sent(16, timeout=5)
        assert sw.wait_idle(timeout=5)
        sent = p2.sent
    q = sw.port_stats()[2]
    assert q["tail_drops"] == 40 - len(sent)
    assert len(sent) >= 16 and q["tail_drops"] >= 1
    depths = [m.deq_qdepth for _, m in fake.qmetas]
    enq = [m.enq_qdepth for _, m in fake.qmetas]
    assert max(depths) >= 8, depths  # the program sees the queue grow
    assert max(enq) >= 8
    # departures paced at >= ~500 µs (allowing the poll's ms granularity to batch catch-ups)
    times = [t for t, _ in fake.qmetas]
    assert times[-1] - times[0] >= 0.5 * 500 * (len(times) - 1)
    deltas = [m.deq_timedelta for _, m in fake.qmetas]
    assert deltas[-1] > deltas[0]


def test_load_program_swaps_atomically_and_flushes():
    sw = Switch(pipeline_factory=fake_factory)
    p1, p2 = MemoryPort(1), MemoryPort(2)
    sw.add_port(p1)
    sw.add_port(p2)
    sw.set_queue_rate(2, 10)  # slow: packets stay queued
    with sw:
        sw.load_program("prog-A")
        first = sw.pipeline
        assert isinstance(first, FakePipeline) and first.program == "prog-A"
        p1.feed([frame(2, seq=i) for i in range(5)])
        deadline = time.monotonic() + 2
        while sw.port_stats().get(2, {}).get("queue_depth_now", 0) < 4:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        sw.load_program("prog-B")
        assert sw.pipeline is not first and sw.program == "prog-B"
        assert sw.counters.flushed >= 4
        assert sw.port_stats()[2]["queue_depth_now"] == 0


def test_writes_under_the_lock_exclude_packets(Fake):  # noqa: N803
    """While a control-plane thread holds ``lock``, no pipeline call happens."""
    sw = Switch(pipeline_factory=fake_factory)
    p1, p2 = MemoryPort(1), MemoryPort(2)
    sw.add_port(p1)
    sw.add_port(p2)
    fake = Fake()
    sw.set_pipeline(fake)
    with sw:
        p1.feed([frame(2, seq=i) for i in range(100)])
        p2.wait_sent(100)
        with sw.lock:
            before = (fake.ingress_calls, fake.egress_calls)
            p1.feed([frame(2, seq=i) for i in range(100)])
            time.sleep(0.1)
            assert (fake.ingress_calls, fake.egress_calls) == before
        assert len(p2.wait_sent(200)) == 200


def test_pcap_file_port_and_capture(tmp_path, Fake):  # noqa: N803
    inp = tmp_path / "in.pcap"
    with PcapWriter(inp) as w:
        for i in range(10):
            w.write(frame(2, seq=i))
        w.write(b"\x01\x02")  # too short: counted
    cap = tmp_path / "cap"
    sw = Switch(pipeline_factory=fake_factory, pcap_dir=cap)
    sw.add_port(PcapFilePort(1, inp))
    sw.add_port(PcapFilePort(2, None, tmp_path / "out2.pcap"))
    sw.set_pipeline(Fake())
    with sw:
        assert sw.wait_idle()
    out = [d for _, d in read_pcap(tmp_path / "out2.pcap")]
    assert out == [frame(2, seq=i) for i in range(10)]
    assert len(list(read_pcap(cap / "1_in.pcap"))) == 11
    assert not (cap / "2_out.pcap").exists() or len(list(read_pcap(cap / "2_out.pcap"))) == 0
    assert sw.port_stats()[1]["rx_too_short"] == 1


def test_port_number_checks():
    sw = Switch(cpu_port=64)
    sw.add_port(MemoryPort(1))
    with pytest.raises(ValueError):
        sw.add_port(MemoryPort(1))
    with pytest.raises(ValueError):
        sw.add_port(MemoryPort(64))
    with pytest.raises(ValueError):
        sw.add_port(MemoryPort(511))
    with pytest.raises(ValueError):
        MemoryPort(512)
    sw.stop(log_stats=False)


def test_pcap_files_open_in_scapy(tmp_path):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import rdpcap

    pkts = [Ether() / IP(dst="10.0.0.1") / UDP(dport=i) for i in range(3)]
    with PcapWriter(tmp_path / "x.pcap") as w:
        for p in pkts:
            w.write(bytes(p))
    back = rdpcap(str(tmp_path / "x.pcap"))
    assert [bytes(p) for p in back] == [bytes(p) for p in pkts]
    assert back[1][UDP].dport == 1


def test_copies_to_several_ports_are_sent_and_counted(Fake):  # noqa: N803
    """A frame with two outputs (multicast): each port and queue counts its copy; the fast
    path hands back a full result for it, and lone outputs around it stay in order."""
    sw = Switch(pipeline_factory=fake_factory)
    ports = [MemoryPort(n) for n in (1, 2, 3)]
    for p in ports:
        sw.add_port(p)
    sw.set_pipeline(Fake())
    with sw:
        ports[0].feed([frame(2, seq=0), frame(0xFE, seq=1), frame(2, seq=2), frame(3, seq=3)])
        assert sw.wait_idle()
    assert ports[1].sent == [frame(2, seq=0), frame(0xFE, seq=1), frame(2, seq=2)]
    assert ports[2].sent == [frame(0xFE, seq=1), frame(3, seq=3)]
    st = sw.port_stats()
    assert (st[2]["tx_packets"], st[2]["queue_enqueued"]) == (3, 3)
    assert (st[3]["tx_packets"], st[3]["queue_enqueued"]) == (2, 2)
    assert st[3]["tx_bytes"] == 2 * len(frame(3))


def test_refused_sends_are_counted_and_forwarding_goes_on(Fake):  # noqa: N803
    """A send the port refuses (OSError) is retried once through ``Port.send`` and counted in
    tx_errors; the frames around it are sent and counted normally."""

    def refuse(data: bytes) -> None:
        if data[14:18] == (3).to_bytes(4, "big"):
            raise OSError(105, "No buffer space available")

    sw = Switch(pipeline_factory=fake_factory)
    p1, p2 = MemoryPort(1), MemoryPort(2, on_send=refuse)
    sw.add_port(p1)
    sw.add_port(p2)
    sw.set_pipeline(Fake())
    with sw:
        p1.feed([frame(2, seq=i) for i in range(6)])
        assert sw.wait_idle()
    st = sw.port_stats()[2]
    # the refused frame reached the memory port's list before on_send raised, twice
    assert st["tx_errors"] == 1
    assert st["tx_packets"] == 5
    assert st["tx_bytes"] == 5 * len(frame(2))
    assert st["queue_enqueued"] == 6


def test_a_rate_limited_queue_takes_the_queued_path_and_back():
    """With a queue rate, even a pipeline with a fast path runs ingress -> queue -> egress
    (the program sees queue depths); clearing the rate brings the inline path back."""
    sw = Switch(pipeline_factory=fake_factory, queue_depth=64)
    p1, p2 = MemoryPort(1), MemoryPort(2)
    sw.add_port(p1)
    sw.add_port(p2)
    fake = FakeFastPipeline()
    sw.set_pipeline(fake)
    sw.set_queue_rate(2, 5000)
    with sw:
        p1.feed([frame(2, seq=i) for i in range(20)])
        assert len(p2.wait_sent(20)) == 20
        assert sw.wait_idle()
        assert fake.fast_calls == 0 and fake.ingress_calls == 20
        assert max(m.deq_qdepth for _, m in fake.qmetas) >= 5
        sw.set_queue_rate(2, None)
        p1.feed([frame(2, seq=i) for i in range(20, 30)])
        assert len(p2.wait_sent(30)) == 30
        assert sw.wait_idle()
    assert fake.fast_calls == 10
    assert p2.sent == [frame(2, seq=i) for i in range(30)]
    assert sw.port_stats()[2]["queue_enqueued"] == 30


def test_queue_rate_for_all_ports_disables_the_inline_path():
    sw = Switch(pipeline_factory=fake_factory, queue_rate=100000)
    p1, p2 = MemoryPort(1), MemoryPort(2)
    sw.add_port(p1)
    sw.add_port(p2)
    fake = FakeFastPipeline()
    sw.set_pipeline(fake)
    with sw:
        p1.feed([frame(2, seq=i) for i in range(5)])
        assert len(p2.wait_sent(5)) == 5
        assert sw.wait_idle()
    assert fake.fast_calls == 0 and fake.egress_calls == 5


def test_inline_outputs_leave_in_frame_order_after_the_batch_ran():
    """The fast path runs the pipeline over a received batch, then sends its one-output
    results back to back (so a sleeping receiver is woken once, not once per frame); every
    output still leaves in the order of its frame, across ports, drops and full results."""
    events: list[str] = []

    class Tracing(FakeFastPipeline):
        def process_fast(self, data: bytes, port: int, now_us: int):
            events.append(f"run {int.from_bytes(data[14:18], 'big')}")
            return super().process_fast(data, port, now_us)

    def sent(n: int):
        return lambda data: events.append(f"send {int.from_bytes(data[14:18], 'big')}@{n}")

    sw = Switch(pipeline_factory=fake_factory)
    ports = [MemoryPort(n, keep_sent=False, on_send=sent(n)) for n in (1, 2, 3)]
    for p in ports:
        sw.add_port(p)
    sw.set_pipeline(Tracing())
    # fed before start: one received batch
    ports[0].feed([frame(2, seq=0), frame(3, seq=1), frame(0xFF, seq=2), frame(2, seq=3),
                   frame(0xFE, seq=4), frame(3, seq=5), frame(2, seq=6)])
    with sw:
        assert sw.wait_idle()
    assert events == [
        "run 0", "run 1", "run 2", "run 3", "run 4",  # a full result: what came before goes
        "send 0@2", "send 1@3", "send 3@2",  # out first, then its own outputs
        "send 4@2", "send 4@3",
        "run 5", "run 6", "send 5@3", "send 6@2",
    ]
    st = sw.port_stats()
    assert (st[2]["tx_packets"], st[2]["queue_enqueued"]) == (4, 4)
    assert (st[3]["tx_packets"], st[3]["queue_enqueued"]) == (3, 3)
    assert st[1]["rx_dropped"] == 1


class _EgressDropsAndDigests(FakePipeline):
    """Egress drops a frame whose byte 1 is 0xCC and reports a digest for it."""

    def egress(self, job, now_us, qmeta):
        res = super().egress(job, now_us, qmeta)
        if job.state.data[1] == 0xCC:
            return api.EgressResult(drops=[api.Drop("egress_drop")],
                                    digests=[api.Digest("eg", 1, {"port": job.egress_port})])
        return res


def test_egress_drops_and_digests_are_counted_and_delivered(sw: Switch):
    """An egress drop counts switch-wide (not as an rx drop of any port); an egress digest
    reaches the listeners like an ingress one."""
    sw.set_pipeline(_EgressDropsAndDigests(cpu_port=64))
    got = []
    sw.add_digest_listener(got.append)
    sw.ports[1].feed([frame(2, tag=0xCC), frame(2)])  # type: ignore[attr-defined]  # MemoryPort's (ports holds Port)
    assert sw.ports[2].wait_sent(1) == [frame(2)]  # type: ignore[attr-defined]  # MemoryPort's (ports holds Port)
    assert sw.wait_idle()
    deadline = time.monotonic() + 2
    while not got and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sw.counters.drops == {"egress_drop": 1}
    assert sw.port_stats()[1]["rx_dropped"] == 0
    assert [(d.name, d.values) for d in got] == [("eg", {"port": 2})]


def test_port_rate_paces_by_frame_length_and_the_program_sees_the_queue():
    """8 Mbps = 1 byte/µs: ten 1000-byte frames arriving in one batch leave at least 1000 µs
    apart (the last no earlier than 9000 µs after the first entered), and egress sees the
    depth each one found (0..9) — the congestion signal a link-rate port gives the program."""
    sw = Switch(pipeline_factory=fake_factory)
    p1, p2 = MemoryPort(1), MemoryPort(2)
    sw.add_port(p1)
    sw.add_port(p2)
    fake = FakePipeline()
    sw.set_pipeline(fake)
    sw.set_port_rate(2, 8e6)
    assert sw.port_rate(2).bps == 8e6 and sw.port_stats()[2]["rate_bps"] == 8e6
    with sw:
        p1.feed([frame(2, size=1000, seq=i) for i in range(10)])
        p2.wait_sent(10, timeout=5)
        assert sw.wait_idle(timeout=5)
    assert len(p2.sent) == 10
    metas = [m for _, m in fake.qmetas]
    assert [m.enq_qdepth for m in metas] == list(range(10))
    assert [m.deq_qdepth for m in metas] == list(range(9, -1, -1))
    last_departure = metas[-1].enq_timestamp + metas[-1].deq_timedelta
    assert last_departure - metas[0].enq_timestamp >= 9000
    sw2 = Switch(port_rate=1e9)  # the switch-wide default reaches ports created later
    assert sw2.port_rate(5).bps == 1e9 and not sw2._inline
    sw2.set_port_rate(None, None)
    assert sw2._inline
    sw2.stop(log_stats=False)
