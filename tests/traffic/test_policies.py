"""Host path policies: decision logic on scripted ACK sequences, the per-packet CE echo of the
transport, parsing and the CLI (traffic/policies.py)."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from traffic.policies import (
    EcnAdaptive,
    PathPolicy,
    PolicySpec,
    Reps,
    RoundRobin,
    ce_of,
    draw_table,
    feed_ack,
    parse_policy,
)
from traffic.transport import Ack, ReceiverFlow, SenderFlow, TransportConfig

PORTS = [50001, 50002, 50003, 50004]


def test_reps_recycles_clean_entropies_and_discards_marked_ones() -> None:
    draws, _ = draw_table(random.Random(5), 4, 16)  # the fresh draws are known in advance
    p = Reps(PORTS, 16, random.Random(5))
    sent = [p.choose(seq, 0.0) for seq in range(4)]  # nothing recycled yet: all fresh
    assert sent == draws[:4] and p.fresh == 4
    p.on_acked(0, False, 1.0)   # clean: recycled
    p.on_acked(1, True, 1.0)    # CE: thrown away
    p.on_acked(2, False, 1.0)   # clean: recycled after seq 0's entropy
    assert list(p.recycled) == [sent[0], sent[2]]
    assert p.choose(4, 1.0) == sent[0] and p.choose(5, 1.0) == sent[2]
    assert p.fresh == 4 and not p.recycled
    # a recycled entropy is credited again on its next ACK
    p.on_acked(4, True, 2.0)
    p.on_acked(5, False, 2.0)
    assert list(p.recycled) == [sent[2]] and p.marked == 2 and p.unmarked == 3
    # queue empty again -> a fresh draw (recycled sends drew nothing from the generator)
    p.recycled.clear()
    assert p.choose(6, 2.0) == draws[4] and p.fresh == 5


def test_reps_under_all_marked_acks_keeps_exploring() -> None:
    p = Reps(PORTS, 64, random.Random(1))
    for seq in range(64):
        p.choose(seq, 0.0)
        p.on_acked(seq, True, 0.0)
    assert p.fresh == 64 and not p.recycled and sum(x > 0 for x in p.uses) == 4


def test_reps_retransmitting_a_short_flow_explores_every_entropy() -> None:
    """A 3-packet flow whose packets are never acknowledged (a dead path) keeps drawing fresh
    entropies from all n, not from as many as it has packets."""
    p = Reps(list(range(50000, 50016)), 3, random.Random(4))
    for t in range(200):
        p.choose(t % 3, 0.0)
    assert sum(x > 0 for x in p.uses) == 16


def test_ecn_adaptive_avoids_a_marked_entropy_for_hold_seconds() -> None:
    p = EcnAdaptive(PORTS[:3], 64, hold=1.0)
    assert [p.choose(s, 0.0) for s in range(3)] == [0, 1, 2]
    p.on_acked(1, True, 0.1)          # seq 1 went on entropy 1 and came back CE
    p.on_acked(0, False, 0.1)
    assert p.until[1] == pytest.approx(1.1)
    assert [p.choose(s, 0.2) for s in range(3, 7)] == [0, 2, 0, 2]
    assert p.avoided == 2             # two sends skipped entropy 1
    assert [p.choose(s, 1.2) for s in range(7, 10)] == [0, 1, 2]  # hold expired: all again
    # every entropy avoided: the one usable soonest is taken
    for seq, t in ((7, 2.0), (8, 2.5), (9, 2.2)):
        p.on_acked(seq, True, t)
    assert p.choose(10, 2.6) == 0     # entropy 0 (seq 7) is free at 3.0, the earliest
    assert p.marked == 4 and p.unmarked == 1


def test_round_robin_policies() -> None:
    p = PolicySpec("single").make([7], 10)
    assert isinstance(p, RoundRobin) and {p.choose(s, 0) for s in range(10)} == {0}
    q = PolicySpec("entropy-spray", 4).make(PORTS, 10)
    assert [q.choose(s, 0) for s in range(6)] == [0, 1, 2, 3, 0, 1] and q.uses == [2, 2, 1, 1]
    r = PolicySpec("entropy-spray", 4, mode="random", seed=3).make(PORTS, 1000, 1, 2, 3)
    picks = [r.choose(s, 0) for s in range(1000)]
    assert set(picks) == {0, 1, 2, 3} and picks[:8] != [0, 1, 2, 3, 0, 1, 2, 3]
    again = PolicySpec("entropy-spray", 4, mode="random", seed=3).make(PORTS, 1000, 1, 2, 3)
    assert [again.choose(s, 0) for s in range(1000)] == picks  # seeded per flow


CFG = TransportConfig(mss=100, ack_every=4, nack_gap=64)


def test_receiver_echoes_ce_per_packet_aligned_with_the_sack() -> None:
    rx = ReceiverFlow(12, CFG)
    acks: list[Ack] = []
    for seq, ce in ((0, False), (1, True), (3, True), (2, False)):
        acks += rx.on_data(seq, 100, False, 0.0, ce)[1]
    assert len(acks) == 1
    a = acks[0]
    assert a.cum == 4 and a.base == 0  # the bitmap covers every new arrival, even below cum
    assert [ce_of(a, s) for s in range(4)] == [False, True, False, True]
    # reordered arrivals far apart: each lies in some ACK's bitmap with its own mark
    for seq, ce in ((11, True), (5, False), (9, False), (7, True)):
        acks = rx.on_data(seq, 100, False, 0.1, ce)[1] or acks
    marks = {s: ce_of(x, s) for x in acks for s in (5, 7, 9, 11) if x.base <= s < x.base + 64}
    assert marks == {5: False, 7: True, 9: False, 11: True}


def test_sender_credits_each_newly_acked_packet_with_its_echo() -> None:
    tx = SenderFlow(1000, CFG)
    rx = ReceiverFlow(tx.npkts, CFG)
    seen: list[tuple[int, bool]] = []

    class Recorder(PathPolicy):
        feedback = True

        def choose(self, seq: int, now: float) -> int:
            return 0

        def on_acked(self, seq: int, ce: bool, now: float) -> None:
            seen.append((seq, ce))

    pol = Recorder([1], tx.npkts)
    tx.newly_acked = []
    while (pkt := tx.next_packet(0.0)) is not None:
        seq, _ = pkt
        pol.choose(seq, 0.0)
        for a in rx.on_data(seq, tx.length(seq), False, 0.0, ce=seq % 3 == 0)[1]:
            tx.on_ack(a, 0.0)
            feed_ack(pol, tx.newly_acked, a, 0.0)
    for a in rx.ack(0.0):
        tx.on_ack(a, 0.0)
        feed_ack(pol, tx.newly_acked, a, 0.0)
    assert tx.done and sorted(seen) == [(s, s % 3 == 0) for s in range(tx.npkts)]


def test_parse_policy_forms_and_errors() -> None:
    assert parse_policy("split(4)", pin=True) == PolicySpec("split", 4, pin=True)
    assert parse_policy("entropy-spray:8").n == 8
    assert parse_policy("reps").label == "reps(16)" and parse_policy("reps").uses_ecn
    assert parse_policy("single").label == "single" and parse_policy("single").entropies(4) == 4
    assert parse_policy("split(2)", pin=True).label == "split(2,pin)"
    assert PolicySpec("entropy-spray", 8, mode="random").label == "entropy-spray(8,random)"
    for bad in ("spray", "split(x)", "split(0)", ""):
        with pytest.raises(ValueError):
            parse_policy(bad)
    with pytest.raises(ValueError, match="split policy only"):
        PolicySpec("reps", pin=True)


@pytest.mark.parametrize("args, msg", [
    (["--path-policy", "nope"], "bad path policy"),
    (["--path-policy", "split(4)", "--pin"], "--pin needs --fabric"),
    (["--path-policy", "split(4)", "--pin", "--fabric", "torus:3"], "bad fabric"),
    (["--path-policy", "reps", "--transport", "tcp"], "tcp transport"),
])
def test_cli_rejects_bad_policy_arguments_in_one_line(args: list[str], msg: str) -> None:
    r = subprocess.run([sys.executable, "-m", "traffic.run", "--schedule", "ring_allreduce",
                        "--ranks", "2", "--hosts", "10.9.9.1,10.9.9.2", "--rank", "0", *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()
    assert msg in err[-1] and "Traceback" not in r.stderr


def test_experiment_schemes_carry_the_hosts_path_policy(tmp_path) -> None:  # noqa: ANN001
    from experiments.config import ConfigError, load

    cfg = tmp_path / "x.yaml"
    body = ("name: x\nbackend: sim\ntopology: {kind: fattree, k: 4}\nworkloads: [{name: r, "
            "schedule: ring_allreduce, size: 16KB}]\nschemes:\n  - ecmp\n"
            "  - {name: ecmp, path_policy: {policy: 'split(4)', pin: true}}\n")
    cfg.write_text(body)
    s = load(cfg).schemes
    assert [x.label for x in s] == ["ecmp", "ecmp+split(4,pin)"]
    assert s[1].policy_spec() == PolicySpec("split", 4, pin=True)
    assert s[1].traffic_args(load(cfg).topology) == {
        "path_policy": "split(4)", "spray": None, "avoid_us": None, "entropy_set": None,
        "pin": True, "fabric": "fattree:4"}
    cfg.write_text(body + "  - {name: ecmp, path_policy: 'reps(x)'}\n")
    with pytest.raises(ConfigError, match=r"schemes\[2\]\.path_policy: bad path policy"):
        load(cfg)


def test_round_robin_retransmission_takes_the_next_entropy() -> None:
    p = PolicySpec("split", 4).make(PORTS, 8)
    assert [p.choose(s, 0) for s in (0, 1, 2, 3)] == [0, 1, 2, 3]
    assert p.choose(0, 1.0) == 0 and p.choose(4, 1.0) == 1   # the resent seq 0, then seq 4
    assert p.choose(0, 2.0) == 2                              # seq 0 again: another path


@pytest.mark.parametrize("make", [
    lambda: Reps(PORTS, 400, random.Random(2)),
    lambda: EcnAdaptive(PORTS, 400, hold=30e-6),
])
def test_batched_feedback_equals_per_packet_feedback(make) -> None:  # noqa: ANN001
    """on_acks (one call per ACK, the fast path) leaves a policy exactly as on_acked per
    packet does, over a scripted run with marked and clean ACKs, gaps and all-marked ACKs;
    ``c`` rescans every time (ECN-adaptive's all-avoided cache defeated) and chooses alike."""
    script = random.Random(9)
    a, b, c = make(), make(), make()
    seq, now = 0, 0.0
    while seq < 400:
        k = script.randint(1, 12)
        newly = list(range(seq, min(seq + k, 400)))
        for s_ in newly:
            if isinstance(c, EcnAdaptive):
                c.all_until = float("-inf")
            assert a.choose(s_, now) == b.choose(s_, now) == c.choose(s_, now)
        base = seq - script.randint(0, 2)          # some acked packets lie below the bitmap
        bits = script.choice([0, script.getrandbits(16), (1 << 64) - 1])
        a.on_acks(list(newly), base, bits, now)
        PathPolicy.on_acks(b, list(newly), base, bits, now)  # the per-packet reference
        c.on_acks(list(newly), base, bits, now)
        seq += k
        now += 5e-6
    for attr in ("uses", "marked", "unmarked"):
        assert getattr(a, attr) == getattr(b, attr)
    assert a.marked > 0 and a.unmarked > 0
    if isinstance(a, Reps):
        assert list(a.recycled) == list(b.recycled) and a.fresh == b.fresh
    else:
        assert a.until == b.until and a.avoided == b.avoided and a.avoided > 0


def test_draw_table_is_uniform_and_covers_the_flow() -> None:
    tab, mask = draw_table(random.Random(1), 8, 1000)
    assert len(tab) == 1024 == mask + 1 and set(tab) == set(range(8))
    counts = [tab.count(i) for i in range(8)]
    assert all(90 < c < 170 for c in counts)           # 128 expected each
    tab3, mask3 = draw_table(random.Random(1), 3, 5)   # not a power of two: randrange
    assert len(tab3) == 256 == mask3 + 1 and set(tab3) == {0, 1, 2}
    # a 3-packet flow still draws from all 16 entropies (REPS exploring around a dead path)
    assert set(draw_table(random.Random(1), 16, 3)[0]) == set(range(16))
    assert draw_table(random.Random(1), 8, 10**6)[1] + 1 == 4096   # capped, then cycles
