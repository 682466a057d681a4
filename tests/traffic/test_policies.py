"""Host path policies: decision logic on scripted ACK sequences, the per-packet CE echo of the
transport, parsing and the CLI (traffic/policies.py)."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from traffic.policies import (
    EcnAdaptive,
    PolicySpec,
    Reps,
    RoundRobin,
    ce_of,
    feed_ack,
    parse_policy,
)
from traffic.transport import Ack, ReceiverFlow, SenderFlow, TransportConfig

PORTS = [50001, 50002, 50003, 50004]


def test_reps_recycles_clean_entropies_and_discards_marked_ones() -> None:
    rng = random.Random(5)
    draws = random.Random(5)  # the same generator: the fresh draws are known in advance
    p = Reps(PORTS, 16, rng)
    sent = [p.choose(seq, 0.0) for seq in range(4)]  # nothing recycled yet: all fresh
    assert sent == [draws.randrange(4) for _ in range(4)] and p.fresh == 4
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
    assert p.choose(6, 2.0) == draws.randrange(4) and p.fresh == 5


def test_reps_under_all_marked_acks_keeps_exploring() -> None:
    p = Reps(PORTS, 64, random.Random(1))
    for seq in range(64):
        p.choose(seq, 0.0)
        p.on_acked(seq, True, 0.0)
    assert p.fresh == 64 and not p.recycled and sum(x > 0 for x in p.uses) == 4


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
    pol = PolicySpec("ecn-adaptive", 2, hold=1.0).make([1, 2], tx.npkts)
    tx.newly_acked = []
    seen: list[tuple[int, bool]] = []
    pol.on_acked = lambda seq, ce, now: seen.append((seq, ce))  # type: ignore[method-assign]
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
