"""traffic.congestion: each algorithm against a pure bottleneck, RFC 6298 step by step, and
the sender's use of both (Karn, ECN echo, pacing)."""

from __future__ import annotations

import math

import pytest
from cc_bottleneck import PKT, Bottleneck, jain

from traffic.congestion import (
    REGISTRY,
    CcContext,
    CcName,
    RttEstimator,
    base_rtt,
    cc_params,
    ecn_threshold,
    make_cc,
)
from traffic.transport import Ack, ReceiverFlow, SenderFlow, TransportConfig

STARTS = [0.0, 2e-4, 4e-4, 6e-4]   # staggered: a later flow must win its share back


def test_registry_names_every_algorithm_of_the_vocabulary() -> None:
    assert set(REGISTRY) == {c.value for c in CcName}
    assert not REGISTRY["none"].uses_ecn and REGISTRY["dctcp"].uses_ecn


@pytest.mark.parametrize("cc, rate, until, k", [
    ("dctcp", 10e9, 0.02, 12),
    ("nscc", 10e9, 0.02, 8),
    ("dcqcn", 10e9, 0.05, 12),   # DCQCN's α (g = 1/256) converges over tens of ms
])
def test_four_flows_converge_to_a_fair_share(cc: str, rate: float, until: float,
                                             k: int) -> None:
    b = Bottleneck(cc, rate_bps=rate, k=k).run(until, starts=STARTS)
    th = b.throughputs(0.75 * until, until)
    assert jain(th) >= 0.95, th
    assert sum(th) * PKT * 8 / rate >= 0.9   # and the link stays busy


def test_without_congestion_control_the_queue_grows_without_bound() -> None:
    b = Bottleneck("none", rate_bps=10e9, k=12).run(0.002)
    assert b.mean_queue(0.001, 0.002) > 1000


@pytest.mark.parametrize("rate, k", [(10e9, 12), (100e9, 16)])
def test_dctcp_holds_the_queue_near_its_threshold(rate: float, k: int) -> None:
    until = 0.02 if rate < 50e9 else 0.004
    b = Bottleneck("dctcp", rate_bps=rate, k=k).run(until, starts=STARTS)
    q = b.mean_queue(until / 2, until)
    assert 0.4 * k <= q <= 1.5 * k, q


def test_nscc_holds_delay_near_its_target() -> None:
    b = Bottleneck("nscc", rate_bps=10e9, k=8).run(0.02, starts=STARTS)
    target = b.algs[0].target
    assert target is not None
    rtt = b.mean_rtt(0.01, 0.02)
    assert abs(rtt - target) / target < 0.2, (rtt, target)


def _drive_dcqcn(params: dict | None, until: float) -> tuple[list[tuple[float, float]], float]:
    """Twenty CNPs 60 µs apart, then none: the NIC sends at whatever rate DCQCN allows."""
    a = make_cc("dcqcn", CcContext(100e9, PKT, 1000), params)
    t = 0.0
    for _ in range(20):
        a.on_ack(t, 1, 1, None)
        t += 60e-6
    rt = a.rt
    trace = [(t, a.rate_bps)]
    while t < until:
        a.advance(t)
        a.on_send(t, PKT)
        trace.append((t, a.rate_bps))
        t += PKT * 8 / a.rate_bps
    return trace, rt


def test_dcqcn_cuts_on_notifications_and_recovers_once_they_stop() -> None:
    a = make_cc("dcqcn", CcContext(100e9, PKT, 1000))
    a.on_ack(0.0, 1, 1, None)
    assert a.rate_bps == pytest.approx(50e9)           # α = 1 at start: halve
    a.on_ack(10e-6, 1, 1, None)                          # within N = 50 µs: no second CNP
    assert a.rate_bps == pytest.approx(50e9) and a.cnps == 1
    trace, rt = _drive_dcqcn(None, 0.003)
    t_cut = trace[0][0]
    after_fr = [r for t, r in trace if t >= t_cut + 5 * 55e-6 + 1e-9]
    assert after_fr[0] >= 0.96 * rt                     # fast recovery: back to the target
    rates = [r for _, r in trace]
    assert all(b >= a for a, b in zip(rates, rates[1:], strict=False))  # never down again
    assert rates[-1] > rt                               # additive increase past the target
    # a smaller byte counter (a knob the paper varies) reaches hyper increase: line rate
    trace, _ = _drive_dcqcn({"byte_counter": 150e3}, 0.01)
    assert trace[-1][1] >= 0.95 * 100e9


@pytest.mark.parametrize("params, cuts", [
    ({}, 1),                                 # fast recovery, then additive increase
    ({}, 3),                                 # α near 1: deeper cuts
    ({"byte_counter": 50e3}, 1),             # with byte events: hyper increase
    ({"byte_counter": 50e3}, 0),             # at line rate: nothing left to increase
])
def test_dcqcn_timer_catch_up_is_one_increase_event_per_expiry(params: dict,
                                                               cuts: int) -> None:
    """``advance`` runs its increase events inline; they must be ``_increase``'s, bit for
    bit, one per expired rate timer, and the pacing gap that of the resulting rate."""
    a = make_cc("dcqcn", CcContext(100e9, PKT, 1000), params)
    ref = make_cc("dcqcn", CcContext(100e9, PKT, 1000), params)
    for cc in (a, ref):
        cc.advance(0.0)                      # the timers start
        for i in range(cuts):                # CNPs 60 µs apart
            cc.on_ack(i * 60e-6, 1, 1, None)
        for _ in range(7):                   # byte events (i_B) before the catch-up
            cc.on_send(cuts * 60e-6, 50_000)
    last = 60e-6 * (cuts - 1) if cuts else 0.0   # the rate timer's period starts here
    a.advance(last + 23 * 55e-6 + 1e-6)      # 23 expiries of T at once
    for _ in range(23):                      # the same events one by one
        if ref.rc >= ref.line and ref.rt >= ref.line:
            break
        ref._i_t += 1
        ref._increase()
    assert (a.rc, a.rt, a._i_t, a.pace_s_per_byte) == \
        (ref.rc, ref.rt, ref._i_t, ref.pace_s_per_byte)
    assert a.pace_s_per_byte == 8 / a.rc
    if cuts:
        assert a._i_t == 23 and a.rc < a.line   # the events ran, not yet at line rate
    else:
        assert a._i_t == 0 and a.rc == a.line


def test_dctcp_alpha_and_cuts() -> None:
    a = make_cc("dctcp", CcContext(100e9, PKT, 64), {"init_cwnd": 16, "alpha_init": 1})
    a.on_ack(0.0, 16, 16, None)          # a whole window marked with α = 1: halve
    assert a.window == pytest.approx(8.0) and a.reductions == 1
    a.on_ack(0.0, 1, 1, None)            # CWR: no second cut in the same window
    assert a.reductions == 1
    for _ in range(20):
        a.on_ack(0.0, 1, 0, None)
    assert a.alpha < 1.0 and a.window > 8.0
    a.on_timeout(0.0)
    assert a.window == 2.0
    b = make_cc("dctcp", CcContext(100e9, PKT, 64), {"init_cwnd": 16, "alpha_init": 0})
    b.on_ack(0.0, 16, 16, None)          # the first marks cut by α/2 = 0 ...
    assert b.window == pytest.approx(16.0) and b.alpha == pytest.approx(1 / 16)
    b.on_ack(0.0, 16, 16, None)          # ... and α rises with the marked fraction
    assert b.window < 16.0 and b.alpha > 1 / 16
    c = make_cc("dctcp", CcContext(100e9, PKT, 64), {"init_cwnd": 16})  # default: RFC 8257's 1
    c.on_ack(0.0, 16, 16, None)
    assert c.window == pytest.approx(8.0)


@pytest.mark.parametrize("cc", ["dctcp", "nscc"])
def test_one_cut_per_window_of_data_in_flight_at_the_cut(cc: str) -> None:
    """RFC 3168 §6.1.2: no second reduction until the data outstanding at the first one is
    acknowledged — the window before the cut (100 packets), not the one after (50)."""
    a = make_cc(cc, CcContext(100e9, PKT, 256), {"init_cwnd": 100})
    a.on_nack(0.0)
    w = a.window
    assert w < 100 and a.reductions == 1
    marked = 1 if cc == "dctcp" else 0   # DCTCP's inlined ACK path cuts on marks too
    for _ in range(99):              # signals about packets sent before the cut: one event
        a.on_nack(0.0)
        a.on_ack(0.0, 1, marked, None)
    assert a.reductions == 1 and a.window >= w
    a.on_ack(0.0, 1, 0, None)        # the window in flight at the cut is acknowledged ...
    a.on_nack(0.0)                   # ... so a new loss signal cuts again
    assert a.reductions == 2


def test_parameters_are_validated_by_name() -> None:
    with pytest.raises(ValueError, match="unknown congestion control"):
        cc_params("cubic")
    with pytest.raises(ValueError, match="^k: not a parameter of dctcp"):
        cc_params("dctcp", {"k": 3})
    with pytest.raises(ValueError, match="^g: must be in"):
        cc_params("dctcp", {"g": 2})
    with pytest.raises(ValueError, match="not a number"):
        cc_params("dcqcn", {"g": "x"})
    assert cc_params("dcqcn", {"f": 3}).f == 3


def test_ecn_threshold_follows_rate_and_algorithm() -> None:
    rtt = base_rtt(6, 1e-6, 100e9)
    k = ecn_threshold("dctcp", 100e9, rtt)
    assert k == math.ceil(100e9 * rtt / 7 / 12000)
    assert ecn_threshold("dctcp", 400e9, rtt) > k
    assert ecn_threshold("dctcp", 10e6, base_rtt(6, 0, 10e6)) == 4    # the floor
    assert ecn_threshold("nscc", 100e9, rtt, params={"target_qdelay_pkts": 5}) == 5
    assert ecn_threshold("dctcp", 1e12, 1e-3, queue_depth=64) == 32     # half the queue


# ---- RFC 6298 ------------------------------------------------------------------------------
def test_rto_before_any_sample_is_the_initial_one() -> None:
    e = RttEstimator(initial_rto=1.0, min_rto=0.2, max_rto=60)
    assert e.rto == 1.0 and e.srtt is None


def test_first_sample_sets_srtt_and_rttvar() -> None:
    e = RttEstimator(initial_rto=1.0, min_rto=1e-6, max_rto=60)
    e.sample(0.1)
    assert e.srtt == 0.1 and e.rttvar == 0.05
    assert e.rto == pytest.approx(0.1 + 4 * 0.05)


def test_later_samples_update_rttvar_before_srtt() -> None:
    e = RttEstimator(initial_rto=1.0, min_rto=1e-6, max_rto=60)
    e.sample(0.1)
    e.sample(0.2)
    rttvar = 0.75 * 0.05 + 0.25 * abs(0.1 - 0.2)   # with the old SRTT
    srtt = 0.875 * 0.1 + 0.125 * 0.2
    assert e.rttvar == pytest.approx(rttvar) and e.srtt == pytest.approx(srtt)
    assert e.rto == pytest.approx(srtt + 4 * rttvar)


def test_granularity_clamp_and_backoff() -> None:
    e = RttEstimator(initial_rto=1.0, min_rto=1e-6, max_rto=60, granularity=0.5)
    e.sample(0.1)
    assert e.rto == pytest.approx(0.1 + 0.5)         # max(G, K·RTTVAR)
    e = RttEstimator(initial_rto=1.0, min_rto=0.2, max_rto=1.5)
    e.sample(0.001)
    assert e.rto == 0.2                              # the floor
    e.backoff()
    e.backoff()
    assert e.rto == pytest.approx(0.8)
    e.backoff()
    e.backoff()
    assert e.rto == 1.5                              # the ceiling
    e.sample(0.001)
    assert e.rto == 0.2                              # a new sample ends the backoff
    fixed = RttEstimator(initial_rto=0.2, min_rto=0.2, max_rto=0.2)
    fixed.sample(5.0)
    fixed.backoff()
    assert fixed.rto == 0.2                          # min == max: a fixed timer


def test_sender_takes_no_samples_from_retransmitted_packets() -> None:
    cfg = TransportConfig(mss=10, window=8, rto=0.01, min_rto=0.001, max_rto=1.0, cc="none")
    tx = SenderFlow(20, cfg)
    assert tx.next_packet(0.0) == (0, False) and tx.next_packet(0.0) == (1, False)
    tx.on_tick(0.011)                                 # both time out: RTO backs off
    assert tx.rto == pytest.approx(0.02) and tx.timeouts == 2
    assert tx.next_packet(0.011) == (0, True)
    tx.on_ack(Ack(cum=1, base=0, sack=0b1), 0.012)    # ambiguous (Karn): no sample
    assert tx.rtt.samples == 0 and tx.rto == pytest.approx(0.02)
    assert tx.next_packet(0.012) == (1, True)
    tx.on_ack(Ack(cum=2, base=1, sack=0b1), 0.013)
    assert tx.rtt.samples == 0 and tx.done


def test_sender_samples_the_newest_packet_sent_once() -> None:
    cfg = TransportConfig(mss=10, window=8, rto=1.0, min_rto=1e-6, max_rto=1.0, cc="none")
    tx = SenderFlow(30, cfg)
    for t in (0.0, 0.001, 0.002):
        tx.next_packet(t)
    tx.on_ack(Ack(cum=3, base=0, sack=0b111), 0.005)
    assert tx.rtt.samples == 1 and tx.rtt.srtt == pytest.approx(0.003)


def test_sender_counts_ce_echoes_of_newly_acknowledged_packets_once() -> None:
    cfg = TransportConfig(mss=10, window=64, ack_every=1).with_cc("dctcp", {"alpha_init": 1.0})
    tx, rx = SenderFlow(40, cfg), ReceiverFlow(4, cfg)
    w0 = tx.window
    acks = []
    for seq in range(4):
        assert tx.next_packet(0.0) == (seq, False)
        acks += rx.on_data(seq, 10, False, 1e-5, ce=seq in (1, 2))[1]
    for a in acks:
        tx.on_ack(a, 2e-5)
    tx.on_ack(acks[-1], 3e-5)                        # a duplicate ACK marks nothing new
    assert tx.ce_acked == 2 and tx.cc.reductions == 1 and tx.window < w0


def test_a_rate_based_sender_is_paced_at_its_rate() -> None:
    cfg = TransportConfig(mss=1000, window=64, cc="dcqcn")
    tx = SenderFlow(10_000, cfg, line_rate_bps=1e9)
    assert tx.next_packet(0.0) == (0, False)
    gap = (1000 + 70) * 8 / 1e9
    assert tx.held(gap / 2) and tx.next_packet(gap / 2) is None
    assert tx.paced_until == pytest.approx(gap)
    assert tx.next_packet(gap) == (1, False)
    assert tx.mean_rate_bps is None                  # no ACK yet
    tx.on_ack(Ack(cum=2, base=0, sack=0b11, ce=0b10), 2 * gap)   # a CNP: rate halves
    assert tx.rate_bps == pytest.approx(0.5e9) and tx.mean_rate_bps == pytest.approx(0.5e9)


@pytest.mark.parametrize("credit_gaps, burst", [(0, 1), (3, 4), (3.5, 4)])
def test_a_paced_sender_behind_its_schedule_catches_up_by_its_credit(credit_gaps: float,
                                                                      burst: int) -> None:
    """A token bucket of ``pace_credit`` at the current rate: a sender looking at its flow
    once per loop pass (one clock reading for the pass) may send that many packet times it
    fell behind at once, no more, and idle time earns no further credit."""
    gap = (1000 + 70) * 8 / 1e9
    cfg = TransportConfig(mss=1000, window=64, cc="dcqcn", pace_credit=credit_gaps * gap)
    tx = SenderFlow(100_000, cfg, line_rate_bps=1e9)
    for now in (1.0, 2.0):                           # idle since 0, then idle again
        sent = 0
        while tx.next_packet(now) is not None:
            sent += 1
        assert sent == burst, now
        assert tx.paced_until == pytest.approx(now - credit_gaps * gap + burst * gap)
    assert tx.next_packet(2.0 + gap) == (2 * burst, False)   # then at the rate again
    assert tx.next_packet(2.0 + gap) is None
