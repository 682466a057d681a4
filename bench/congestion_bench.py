"""Benchmark: what each congestion control costs the sender per ACK and per packet, vs ``none``.

    .venv/bin/python bench/congestion_bench.py [--packets 200000] [--rounds 7] [--json]

Two figures per algorithm (traffic.congestion), interleaved over ``--rounds`` rounds (best of,
so a load change on a shared machine hits every algorithm alike), CPU time of this thread:

  ack     ns per ``on_ack(now, acked=2, marked, rtt)`` of the algorithm alone: every 5th ACK
          CE-echoes one packet (10% of packets marked), an RTT sample on each, time moving two
          100 Gb/s packet times per ACK — the per-ACK work the agent and the simulator pay.
  sender  ns per packet of traffic.transport.SenderFlow's sender work: ``next_packet`` for
          every packet (the pacer's and the timers' share included: time moves to the pacer's
          next send time when the algorithm paces) and ``on_ack`` every 2 packets with the
          receiver's per-packet CE bitmap; no sockets, no frames. ``extra``: ns per packet over
          ``none`` and the ratio — issue 18 asks for at most 10% over ``none`` on the agent's
          per-packet cost, of which this is the transport's part (bench/agent_bench.py
          measures the whole agent). ``rate/line``: a paced algorithm's mean rate — under
          a steady 10% of packets marked DCQCN sits near its floor, each packet then lasts
          several of its timer periods, and the timer events it owes per packet (its real
          work, evaluated lazily, once per expiry) are in its figure; ``--ce-every 0`` shows
          the uncongested cost.

The empty loop's cost per iteration is printed too (it is in every figure alike).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from traffic.congestion import REGISTRY, CcContext, make_cc  # noqa: E402
from traffic.transport import WIRE_OVERHEAD, Ack, SenderFlow, TransportConfig  # noqa: E402

LINE = 100e9
MSS = 1400
GAP = (MSS + WIRE_OVERHEAD) * 8 / LINE
CCS = ["none", *sorted(c for c in REGISTRY if c != "none")]


def ack_inputs(n: int, ce_every: int) -> list[tuple[float, int, int, float]]:
    """(now, acked, marked, rtt) for ``n`` ACKs of 2 packets each, one packet in
    ``ce_every`` marked (0: none)."""
    return [(2 * i * GAP, 2, 1 if ce_every and (2 * i) % ce_every < 2 else 0,
             10e-6 + (i % 7) * 1e-7) for i in range(n)]


def bench_ack(cc: str, inputs: list[tuple[float, int, int, float]]) -> float:
    """ns per on_ack call."""
    a = make_cc(cc, CcContext(LINE, MSS + WIRE_OVERHEAD, 256, 10e-6))
    on_ack = a.on_ack
    clock = time.thread_time_ns
    t0 = clock()
    for now, acked, marked, rtt in inputs:
        on_ack(now, acked, marked, rtt)
    return (clock() - t0) / len(inputs)


def bench_empty(inputs: list[tuple[float, int, int, float]]) -> float:
    """ns per iteration of the same loop calling a no-op."""
    def nop(now: float, acked: int, marked: int, rtt: float) -> None:
        return None
    clock = time.thread_time_ns
    t0 = clock()
    for now, acked, marked, rtt in inputs:
        nop(now, acked, marked, rtt)
    return (clock() - t0) / len(inputs)


def sender_acks(npkts: int, ce_every: int) -> list[Ack]:
    """The receiver's ACK after every 2nd packet (in order): cum past both, SACK bitmap from
    the first, its CE echo marking every ``ce_every``-th packet (0: none)."""
    out = []
    for i in range(0, npkts, 2):
        ce = sum(1 << (j - i) for j in (i, i + 1) if ce_every and j % ce_every == 0)
        out.append(Ack(min(npkts, i + 2), i, 0b11, False, ce))
    return out


def bench_sender(cc: str, npkts: int, acks: list[Ack]) -> tuple[float, SenderFlow]:
    """ns per packet of SenderFlow's work (next_packet each packet, on_ack every 2)."""
    cfg = TransportConfig(mss=MSS, window=256, ack_every=2, cc=cc, base_rtt=10e-6)
    s = SenderFlow(npkts * MSS, cfg, line_rate_bps=LINE)
    next_packet, on_ack = s.next_packet, s.on_ack
    clock = time.thread_time_ns
    now = 0.0
    t0 = clock()
    for a in acks:
        for _ in (0, 1):
            if now < s.paced_until:
                now = s.paced_until
            next_packet(now)
            now += GAP
        on_ack(a, now)
    dt = clock() - t0
    if not s.done:
        raise RuntimeError(f"{cc}: the sender did not finish ({s.n_acked}/{s.npkts})")
    return dt / npkts, s


def run(npkts: int, rounds: int, ce_every: int = 10) -> list[dict[str, object]]:
    inputs = ack_inputs(npkts // 2, ce_every)
    acks = sender_acks(npkts, ce_every)
    best: dict[str, dict[str, float]] = {c: {"ack": float("inf"), "sender": float("inf")}
                                         for c in CCS}
    empty = float("inf")
    info: dict[str, SenderFlow] = {}
    for _ in range(rounds):
        empty = min(empty, bench_empty(inputs))
        for c in CCS:
            best[c]["ack"] = min(best[c]["ack"], bench_ack(c, inputs))
            ns, s = bench_sender(c, npkts, acks)
            best[c]["sender"] = min(best[c]["sender"], ns)
            info[c] = s
    base = best["none"]
    rows: list[dict[str, object]] = []
    for c in CCS:
        b = best[c]
        rows.append({"cc": c, "ack_ns": b["ack"], "ack_extra_ns": b["ack"] - base["ack"],
                     "sender_ns_per_packet": b["sender"],
                     "sender_extra_ns": b["sender"] - base["sender"],
                     "sender_vs_none": b["sender"] / base["sender"],
                     "mean_window": info[c].mean_window,
                     "mean_rate_over_line": (info[c].mean_rate_bps or 0) / LINE or None,
                     "empty_loop_ns": empty})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--packets", type=int, default=200_000, help="packets per sender run")
    ap.add_argument("--rounds", type=int, default=7,
                    help="interleaved rounds (best of); more on a busy machine")
    ap.add_argument("--ce-every", type=int, default=10,
                    help="CE-mark one packet in N (default 10; 0: no marks)")
    ap.add_argument("--json", action="store_true", help="also print the rows as JSON")
    a = ap.parse_args()
    if a.packets < 2 or a.rounds < 1 or a.ce_every < 0:
        ap.error("--packets must be >= 2, --rounds >= 1, --ce-every >= 0")
    load = os.getloadavg()[0]
    rows = run(a.packets, a.rounds, a.ce_every)
    print(f"congestion control cost, best of {a.rounds} rounds, {a.packets:,} packets, "
          f"1 in {a.ce_every or 'no'} CE-marked, load average {load:.1f} "
          f"(empty loop {rows[0]['empty_loop_ns']:.0f} ns/iteration)")
    print(f"{'cc':<6} {'ns/ACK':>8} {'+ns/ACK':>8} {'ns/pkt':>8} {'+ns/pkt':>8} {'vs none':>8}"
          f" {'rate/line':>9}")
    for r in rows:
        rate = r["mean_rate_over_line"]
        print(f"{r['cc']:<6} {r['ack_ns']:>8.0f} {r['ack_extra_ns']:>+8.0f} "
              f"{r['sender_ns_per_packet']:>8.0f} {r['sender_extra_ns']:>+8.0f} "
              f"{r['sender_vs_none']:>7.3f}x {'' if rate is None else f'{rate:.3f}':>9}")
    if a.json:
        print(json.dumps({"load": load, "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
