"""The reorder-tolerant transport delivers exactly once over a lossy, reordering link."""

from __future__ import annotations

import pytest

from traffic.simlink import LinkModel, simulate_transfer
from traffic.transport import Ack, ReceiverFlow, SenderFlow, TransportConfig
from traffic.wire import F_ACKREQ

CFG = TransportConfig(mss=1000, window=256, rto=0.002, ack_every=8, ack_delay=0.0005,
                      nack_gap=64)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("nbytes", [1, 1000, 1_500_001])
def test_exactly_once_under_loss_and_heavy_reordering(seed, nbytes):
    link = LinkModel(loss=0.01, delay=50e-6, jitter=300e-6, gap=1e-6, seed=seed)
    r = simulate_transfer(nbytes, CFG, link)
    assert r.sender.done and r.receiver.done
    assert sorted(r.delivered) == list(range(r.sender.npkts))  # each packet handed up once
    assert r.receiver.bytes == nbytes
    if nbytes > 1_000_000:
        assert r.receiver.stats.reordered > 100       # the link really reorders heavily
        assert r.sender.retransmissions > 0           # and really loses
        # selective repeat: retransmissions stay near the ~2% of packets lost, not go-back-N
        assert r.sender.retransmissions < 0.1 * r.sender.npkts


def test_reordering_alone_causes_no_retransmission():
    link = LinkModel(loss=0.0, delay=50e-6, jitter=40e-6, gap=1e-6, seed=7)
    r = simulate_transfer(1_000_000, CFG, link)
    assert r.receiver.done and r.receiver.stats.reordered > 50
    assert r.sender.retransmissions == 0 and r.receiver.stats.duplicates == 0


def test_reorder_count_matches_reference_definition():
    link = LinkModel(loss=0.0, delay=10e-6, jitter=100e-6, gap=1e-6, seed=11)
    r = simulate_transfer(500_000, TransportConfig(mss=1000, rto=1.0), link)
    arrivals = r.first_tx_arrivals
    expected, dist, top = 0, {}, -1
    for s in arrivals:
        if s < top:
            expected += 1
            dist[top - s] = dist.get(top - s, 0) + 1
        top = max(top, s)
    assert expected > 0
    assert r.receiver.stats.reordered == expected
    assert r.receiver.stats.reorder_distance == dist


def test_reorder_scripted_and_retransmissions_not_counted():
    rx = ReceiverFlow(8, CFG)
    for seq in [0, 1, 3, 2, 4, 7, 5]:
        rx.on_data(seq, 10, False, 0.0)
    new, _ = rx.on_data(6, 10, True, 0.0)  # a retransmission: late, but not reordered
    assert new and rx.done
    assert rx.stats.reordered == 2 and rx.stats.reorder_distance == {1: 1, 2: 1}
    new, acks = rx.on_data(6, 10, True, 0.0)
    assert not new and rx.stats.duplicates == 1 and acks[-1].cum == 8


def test_sack_acknowledges_beyond_a_hole_and_nack_triggers_retransmission():
    cfg = TransportConfig(mss=10, window=200, rto=1.0, ack_every=1, nack_gap=4, cc="none")
    tx, rx = SenderFlow(100 * 10, cfg), ReceiverFlow(100, cfg)
    sent = [tx.next_packet(0.0) for _ in range(100)]
    assert [s for s, _ in sent] == list(range(100))
    acks: list[Ack] = []
    for seq in range(100):
        if seq != 3:  # packet 3 is lost
            acks += rx.on_data(seq, 10, False, 0.0)[1]
    for a in acks:
        tx.on_ack(a, 0.5)
    assert tx.n_acked == 99 and not tx.done
    assert tx.nacks >= 1
    assert tx.next_packet(0.5) == (3, True)  # NACK queued exactly the hole
    assert tx.next_packet(0.5) is None
    tx.on_ack(rx.on_data(3, 10, True, 0.6)[1][-1], 0.6)
    assert tx.done and tx.retransmissions == 1 and tx.timeouts == 0


def test_timeout_retransmits_only_unacked():
    cfg = TransportConfig(mss=10, window=4, rto=0.01, min_rto=0.01, max_rto=0.01)  # fixed
    tx = SenderFlow(40, cfg)
    for _ in range(4):
        tx.next_packet(0.0)
    assert tx.next_packet(0.0) is None  # window full
    tx.on_ack(Ack(cum=2, base=3, sack=0b1), 0.001)  # 0,1 and 3 acked; 2 missing
    tx.on_tick(0.005)
    assert tx.next_packet(0.005) is None
    tx.on_tick(0.02)
    assert tx.timeouts == 1 and tx.next_packet(0.02) == (2, True)


def test_the_packet_that_closes_the_window_asks_for_an_ack_answered_at_once():
    # ACKs coalesced over 8 packets, a window of 3: without F_ACKREQ the receiver would sit
    # on the 3 arrivals until its delayed-ACK timer
    cfg = TransportConfig(mss=10, window=3, ack_every=8, cc="none")
    tx, rx = SenderFlow(100, cfg), ReceiverFlow(10, cfg)
    got = []
    for _ in range(3):
        seq, retx = tx.next_packet(0.0)
        got.append(tx.flags(seq, retx) & F_ACKREQ)
        _new, acks = rx.on_data(seq, 10, retx, 1e-6, ack_req=bool(got[-1]))
    assert got == [0, 0, F_ACKREQ] and tx.next_packet(0.0) is None
    assert len(acks) == 1 and acks[0].cum == 3
    tx.on_ack(acks[0], 2e-6)
    assert tx.next_packet(2e-6) == (3, False)
    # the last new packet asks too, whatever the window
    wide = SenderFlow(20, TransportConfig(mss=10, window=64, ack_every=8, cc="none"))
    assert [wide.flags(*wide.next_packet(0.0)) & F_ACKREQ for _ in range(2)] == [0, F_ACKREQ]


def test_a_spurious_retransmission_is_counted_at_the_sender_a_needed_one_is_not():
    cfg = TransportConfig(mss=10, window=8, ack_every=1, rto=0.001, min_rto=0.001, cc="none")
    tx, rx = SenderFlow(30, cfg), ReceiverFlow(3, cfg)
    sent = [tx.next_packet(0.0) for _ in range(3)]
    assert [s for s, _ in sent] == [0, 1, 2]
    for seq in (0, 2):                       # 1 is late, not lost
        for a in rx.on_data(seq, 10, False, 1e-4)[1]:
            tx.on_ack(a, 2e-4)
    tx.on_tick(0.002)                        # the timer fires for 1: resent
    assert tx.next_packet(0.002) == (1, True)
    acks = rx.on_data(1, 10, False, 0.0021)[1]          # the original arrives ...
    acks += rx.on_data(1, 10, True, 0.0022)[1]          # ... then its resend: a duplicate
    assert [a.dup for a in acks] == [False, True]
    wire = [Ack.parse(a.flags, a.cum, a.base, a.sack, a.ce) for a in acks]
    assert wire == acks                      # the echo survives the header flags
    for a in wire:
        tx.on_ack(a, 0.0023)
    assert tx.done and tx.retransmissions == 1 and tx.spurious == 1
    assert rx.stats.duplicates == 1
    # a resend of a lost packet is not spurious
    tx2, rx2 = SenderFlow(10, cfg), ReceiverFlow(1, cfg)
    tx2.next_packet(0.0)
    tx2.on_tick(0.002)
    assert tx2.next_packet(0.002) == (0, True)
    for a in rx2.on_data(0, 10, True, 0.0021)[1]:
        tx2.on_ack(a, 0.0022)
    assert tx2.done and tx2.retransmissions == 1 and tx2.spurious == 0


def _deliver(tx: SenderFlow, rx: ReceiverFlow, seq: int, now: float) -> None:
    """One packet of ``tx`` arrives at once and its ACKs go straight back."""
    for a in rx.on_data(seq, tx.length(seq), False, now, ack_req=True)[1]:
        tx.on_ack(a, now)


def test_overlapping_messages_to_one_peer_share_one_connection():
    from traffic.transport import Connections

    cfg = TransportConfig(mss=10, window=4, ack_every=1, cc="none")
    conns = Connections()
    a = conns.open(100, cfg, 1e9, "peer", 0.0)           # 10 packets
    b = conns.open(50, cfg, 1e9, "peer", 0.0)            # 5, posted while a is open
    assert conns.joined == 1
    assert b.conn is a.conn and b.cc is a.cc and b.rtt is a.rtt
    rxs = {id(a): ReceiverFlow(a.npkts, cfg), id(b): ReceiverFlow(b.npkts, cfg)}
    order: list[tuple[str, int]] = []
    t = 0.0
    while not (a.done and b.done):
        t += 1e-6
        sent = []
        for name, s in (("b", b), ("a", a)):             # b asked first: it must still wait
            while (p := s.next_packet(t)) is not None:
                order.append((name, p[0]))
                sent.append((s, p[0]))
                assert a.conn.inflight <= cfg.window       # one window for both messages
        assert sent, "neither message could send"
        for s, seq in sent:
            _deliver(s, rxs[id(s)], seq, t + 5e-6)
        t += 5e-6
    # served in order: every packet of a before any of b
    assert order == [("a", i) for i in range(10)] + [("b", i) for i in range(5)]
    assert a.finish is not None and b.finish is not None and a.finish <= b.finish
    assert (a.packets_sent, b.packets_sent) == (10, 5) and a.n_acked == 10 and b.n_acked == 5
    assert a.rtt.srtt is not None and b.rtt.srtt == a.rtt.srtt   # one estimate, both sampled
    assert a.conn.inflight == 0 and not a.conn.active
    # once both are done a new message opens a new connection (the algorithm carried over)
    c = conns.open(10, cfg, 1e9, "peer", t)
    assert c.conn is not a.conn and c.cc is a.cc and conns.reused == 1


def test_a_message_behind_another_starts_when_the_first_has_sent_its_last_new_packet():
    from traffic.transport import Connections

    cfg = TransportConfig(mss=10, window=64, ack_every=1, cc="none")
    conns = Connections()
    a = conns.open(30, cfg, 1e9, 1, 0.0)
    b = conns.open(30, cfg, 1e9, 1, 0.0)
    other = conns.open(30, cfg, 1e9, 2, 0.0)              # another peer: its own connection
    assert other.conn is not a.conn
    assert b.next_packet(0.0) is None and other.next_packet(0.0) == (0, False)
    assert [a.next_packet(0.0) for _ in range(3)] == [(0, False), (1, False), (2, False)]
    assert b.next_packet(0.0) == (0, False)              # a is not acknowledged yet
    a.on_tick(1.0)                                       # a's RTO fired: a may resend ...
    assert a.next_packet(1.0) == (0, True)               # ... though b is the one sending new
