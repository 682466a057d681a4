"""Packet trimming (UEC's, off by default): a full queue cuts the packet to its headers and
serves it first, the receiver NACKs it, the sender resends it at once — no timeout."""

from __future__ import annotations

from model.spec import fat_tree
from p4switch import EgressJob, EgressQueue, trim_frame
from sim.frames import ACK_AT, l2l3_header
from sim.network import TRIM_BYTES, SimConfig, SimNetwork
from traffic.schedules.cm import parse_cm, to_schedule
from traffic.transport import Ack, ReceiverFlow, SenderFlow, TransportConfig

INCAST = "Nodes 16\nConnections 2\n0->2 id 1 start 0 size 200000\n1->2 id 2 start 0 size 200000\n"


def _job(n: int = 1000) -> EgressJob:
    return EgressJob(egress_port=1, instance_type=0, packet_length=n)


def test_a_full_queue_trims_and_serves_the_trimmed_first() -> None:
    q = EgressQueue(1, depth=2, trim_bytes=70)
    jobs = [_job() for _ in range(3)]
    assert all(q.enqueue(j, 0) for j in jobs)
    assert q.stats.trimmed == 1 and q.stats.tail_drops == 0 and jobs[2].packet_length == 70
    first = q.dequeue(0)
    assert first is not None and first[0] is jobs[2] and q.last_trimmed
    second = q.dequeue(0)
    assert second is not None and second[0] is jobs[0] and not q.last_trimmed


def test_trimming_is_off_by_default() -> None:
    q = EgressQueue(1, depth=1)
    assert q.enqueue(_job(), 0) and not q.enqueue(_job(), 0)
    assert q.stats.tail_drops == 1 and q.stats.trimmed == 0
    assert not SimConfig().trim


def test_a_trimmed_frame_keeps_valid_headers() -> None:
    frame = l2l3_header("00:00:00:00:00:01", "00:00:00:00:00:02", "10.0.0.1", "10.0.1.1",
                        4791, 4791, 28 + 1000) + bytes(28 + 1000)
    cut = trim_frame(frame, TRIM_BYTES)
    assert len(cut) == TRIM_BYTES == ACK_AT
    assert int.from_bytes(cut[16:18], "big") == TRIM_BYTES - 14      # IPv4 total length
    assert int.from_bytes(cut[38:40], "big") == TRIM_BYTES - 34      # UDP length
    words = sum(int.from_bytes(cut[i:i + 2], "big") for i in range(14, 34, 2))
    while words >> 16:
        words = (words & 0xFFFF) + (words >> 16)
    assert words == 0xFFFF                                           # checksum verifies
    assert trim_frame(frame[:50], TRIM_BYTES) == frame[:50]


def test_the_transport_nacks_a_trimmed_packet_and_resends_it_at_once() -> None:
    cfg = TransportConfig(mss=1000)
    s = SenderFlow(10_000, cfg, 100e9)
    sent = [s.next_packet(0.0) for _ in range(4)]
    assert [x[0] for x in sent if x] == [0, 1, 2, 3]
    r = ReceiverFlow(10, cfg)
    acks = r.on_trimmed(2, 1e-6)
    assert acks == [Ack(0, 2, 0, nack=True, trimmed=True)] and r.stats.trimmed == 1
    wire = Ack.parse(acks[0].flags, 0, 2, 0, 0)
    assert wire.trimmed and wire.nack
    s.on_ack(wire, 2e-6)
    assert s.next_packet(2e-6) == (2, True) and s.trim_nacks == s.nacks == 1
    r.on_data(2, 1000, True, 3e-6)
    assert r.on_trimmed(2, 4e-6) == []     # arrived whole already: nothing to resend


def _incast(trim: bool) -> tuple[dict, list]:
    net = SimNetwork(fat_tree(4, bw_mbps=100e3), "ecmp", SimConfig(queue_depth=4, trim=trim))
    res = net.run(to_schedule(parse_cm(INCAST)))
    assert res.ok
    return res.summary(), [f for r in res.ranks for f in r.flows]


def test_two_to_one_incast_trims_instead_of_dropping() -> None:
    s, fl = _incast(trim=True)
    assert s["trims"] > 0 and s["tail_drops"] == 0
    # every trimmed packet NACKed and resent once; no timer fired
    assert s["trims"] == s["trim_nacks"] == s["nacks"] == s["retransmissions"]
    assert s["timeouts"] == 0
    assert sum(f.retransmissions for f in fl) == s["trims"]


def test_the_same_incast_without_trimming_drops_and_times_out() -> None:
    s, _ = _incast(trim=False)
    assert s["trims"] == 0 and s["tail_drops"] > 0 and s["timeouts"] > 0


def test_a_small_control_packet_is_promoted_whole_not_cut() -> None:
    q = EgressQueue(1, depth=1, trim_bytes=70)
    data, ack = _job(), _job(94)      # an ACK frame is 94 bytes: cut to 70 it would be lost
    assert q.enqueue(data, 0) and q.enqueue(ack, 0)
    assert ack.packet_length == 94 and q.stats.promoted == 1 and q.stats.trimmed == 0
    first = q.dequeue(0)
    assert first is not None and first[0] is ack and q.last_trimmed
