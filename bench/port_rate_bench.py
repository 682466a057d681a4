"""Benchmark: does a p4switch port with a link rate (``--port-rate``, bits/s) sustain that rate,
and how evenly does it space its frames?

    sudo .venv/bin/python bench/port_rate_bench.py [--rates 10M,50M,100M] [--seconds 3]

Set-up (created and removed here): namespaces p4ft-<pid>r-h1 / -h2 joined to a p4switch that
runs tests/switch/p4/ipv4.p4 (route to port 2) with a control socket. For each rate the script
sets port 2's rate at run time through ``ControlClient.set_port_rate`` (no restart), then h1
offers 1514-byte frames at --overload x the rate (so the egress queue fills and tail-drops) and
h2 records each frame's kernel receive time (SO_TIMESTAMPNS; a veth delivers in the sender's
context, so this is the switch's send time to within the stack's cost).

Printed per rate, all from the same run:
  measured     bits/s reaching h2 over the receive window (frame bytes x 8, no preamble/FCS,
               what the queue charges; the first 10% of the frames, the queue filling, left
               out) and its ratio to the configured rate
  rx, sw tx    frames h2 received and frames the switch sent on port 2 in the step
  queue        port 2's queue depth sampled over the control socket every 20 ms (median / max)
               and its tail drops in the step
  gap          inter-arrival time at h2: median and 1st/99th percentile, next to the frame's
               serialisation time (1514 x 8 / rate); "bunched" = gaps under half of it
               (frames a late wake-up sent back to back to catch up)
  cpu          the switch process's CPU time over the step / the step's length
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "switch"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from switch_bench import (  # noqa: E402
    DPORT,
    IPV4_ENTRIES,
    IPV4_P4,
    P4SWITCH,
    PY,
    ROUTER_MAC,
    Child,
    _raw,
    cpu_seconds,
)

FRAME = 1514  # a full 1500-byte-MTU Ethernet frame (without FCS)
SO_TIMESTAMPNS = 35
SCM_TIMESTAMPNS = SO_TIMESTAMPNS


def role_sink(ifname: str, idle: float, max_seconds: float) -> dict:
    """Kernel receive times of our UDP frames until ``idle`` s pass without one, or timeout."""
    s = _raw(ifname)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setblocking(False)
    want = DPORT.to_bytes(2, "big")
    times: list[int] = []
    nbytes = 0
    last = 0.0
    print("READY", flush=True)
    t_end = time.monotonic() + max_seconds
    anc = socket.CMSG_SPACE(16)
    while True:
        now = time.monotonic()
        if now > t_end or (times and now - last > idle):
            break
        r, _, _ = select.select([s], [], [], 0.05)
        if not r:
            continue
        while True:
            try:
                data, ancdata, _flags, _addr = s.recvmsg(2048, anc)
            except BlockingIOError:
                break
            if len(data) < 38 or data[36:38] != want or data[12:14] != b"\x08\x00":
                continue
            ts = 0
            for level, kind, payload in ancdata:
                if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", payload[:16])
                    ts = sec * 1_000_000_000 + nsec
            times.append(ts)
            nbytes += len(data)
            last = time.monotonic()
    return {"times": times, "bytes": nbytes}


def role_blast(ifname: str, seconds: float, bps: float) -> dict:
    """Offer ``bps`` of 1514-byte frames for ``seconds``, in bursts of 4."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    frames = [bytes(Ether(src="02:00:00:00:00:01", dst=ROUTER_MAC)
                    / IP(src="10.0.1.1", dst="10.0.2.1") / UDP(sport=40000 + i, dport=DPORT)
                    / bytes(FRAME - 42)) for i in range(16)]
    s = _raw(ifname)
    print("START", flush=True)
    burst = 4
    gap = burst * FRAME * 8 / bps
    n = 0
    t0 = time.perf_counter()
    k = 0
    while True:
        t_burst = t0 + k * gap
        if t_burst >= t0 + seconds:
            break
        now = time.perf_counter()
        if t_burst > now:
            time.sleep(t_burst - now)
        for i in range(burst):
            s.send(frames[(n + i) & 15])
        n += burst
        k += 1
    return {"sent": n, "seconds": time.perf_counter() - t0}


def _in_ns(ns: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", ns, PY, str(Path(__file__).resolve()), *args]


def _pct(xs: list[float], q: float) -> float:
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def measure(topo, ctl, sw_pid: int, bps: float, args) -> dict:
    h1, h2 = topo.hosts
    ctl.set_port_rate(2, bps)
    before = ctl.port_stats(2)[2]
    sink = Child(_in_ns(h2.ns, "--role", "sink", "--ifname", h2.ifname, "--idle", "1.0",
                        "--max-seconds", str(args.seconds + 20)))
    sink.wait_ready()
    depths: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            depths.append(ctl.port_stats(2)[2]["queue_depth_now"])

    sampler = threading.Thread(target=sample, daemon=True)
    blast = Child(_in_ns(h1.ns, "--role", "blast", "--ifname", h1.ifname, "--seconds",
                         str(args.seconds), "--bps", str(bps * args.overload)), ready="START")
    blast.wait_ready()  # sample only while it sends (its start-up takes seconds under load)
    c0, t0 = cpu_seconds(sw_pid), time.monotonic()
    sampler.start()
    b = blast.result(args.seconds + 30)
    cpu, wall = cpu_seconds(sw_pid) - c0, time.monotonic() - t0
    done.set()
    sampler.join()
    s = sink.result(args.seconds + 30)
    after = ctl.port_stats(2)[2]
    times = sorted(s["times"])
    # steady state: skip the first 10% (the queue filling), keep frames while h1 still sends
    k0 = len(times) // 10
    window = times[k0:]
    span_s = (window[-1] - window[0]) / 1e9 if len(window) > 1 else 0.0
    measured = (len(window) - 1) * FRAME * 8 / span_s if span_s else 0.0
    gaps = sorted((b_ - a) / 1e3 for a, b_ in zip(window, window[1:], strict=False))
    ideal_us = FRAME * 8 / bps * 1e6
    return {
        "bps": bps, "offered": b["sent"] * FRAME * 8 / b["seconds"], "measured": measured,
        "received": len(times), "sent": b["sent"],
        "tx": after["tx_packets"] - before["tx_packets"],
        "tail_drops": after["tail_drops"] - before["tail_drops"],
        "depth_med": statistics.median(depths) if depths else 0, "depth_max": max(depths, default=0),
        "gap_med": statistics.median(gaps) if gaps else 0.0, "gap_p1": _pct(gaps, 0.01) if gaps else 0.0,
        "gap_p99": _pct(gaps, 0.99) if gaps else 0.0, "ideal_us": ideal_us,
        "bunched": sum(g < ideal_us / 2 for g in gaps) / len(gaps) if gaps else 0.0,
        "cpu": cpu / wall,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=["sink", "blast"], help=argparse.SUPPRESS)
    ap.add_argument("--ifname", help=argparse.SUPPRESS)
    ap.add_argument("--idle", type=float, default=1.0, help=argparse.SUPPRESS)
    ap.add_argument("--max-seconds", type=float, default=30, help=argparse.SUPPRESS)
    ap.add_argument("--bps", type=float, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--rates", default="10M,50M,100M", help="configured port rates to measure")
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds of traffic per rate")
    ap.add_argument("--overload", type=float, default=1.3, help="offered load / port rate")
    ap.add_argument("--dut-nice", type=int, default=0,
                    help="nice value for the switch process (e.g. -10 on a machine shared with "
                    "other jobs: a starved switch sends nothing while descheduled)")
    args = ap.parse_args()
    if args.role == "sink":
        import json

        print(json.dumps(role_sink(args.ifname, args.idle, args.max_seconds)), flush=True)
        return 0
    if args.role == "blast":
        import json

        print(json.dumps(role_blast(args.ifname, args.seconds, args.bps)), flush=True)
        return 0
    if os.geteuid() != 0:
        print("port_rate_bench: needs root (network namespaces, raw sockets)", file=sys.stderr)
        return 2

    from switch_netns import Topo

    from p4switch import ControlClient, format_bit_rate, parse_bit_rate

    try:
        rates = [parse_bit_rate(r) for r in args.rates.split(",")]
    except ValueError as e:
        ap.error(str(e))
    topo = Topo(tag="r").create()
    dut = None
    try:
        with tempfile.TemporaryDirectory(prefix="p4ft-rate-") as tmp:
            entries = Path(tmp) / "ipv4.stf"
            entries.write_text(IPV4_ENTRIES)
            sock = Path(tmp) / "s.ctl"
            h1, h2 = topo.hosts
            dut = Child(P4SWITCH + [str(IPV4_P4), "-i", f"1@{h1.sw_ifname}", "-i",
                                    f"2@{h2.sw_ifname}", "--no-grpc", "--entries", str(entries),
                                    "--control-socket", str(sock), "--log-level", "info"],
                        ready=None, stderr_ready="started")
            dut.wait_ready(60)
            if args.dut_nice:
                os.setpriority(os.PRIO_PROCESS, dut.proc.pid, args.dut_nice)
            with open("/proc/loadavg") as f:
                load = f.read().split()[0]
            print(f"p4switch ipv4.p4, port 2 rate-limited, {FRAME}-byte frames offered at "
                  f"{args.overload:g}x the rate for {args.seconds:g} s each; switch nice "
                  f"{args.dut_nice}, load average {load}")
            print(f"{'rate':>8} {'offered':>9} {'measured':>9} {'ratio':>6} {'rx':>6} "
                  f"{'sw tx':>6} {'drops':>6} {'depth med/max':>13} {'ser us':>7} {'gap med':>7} "
                  f"{'p1':>6} {'p99':>6} {'bunched':>7} {'cpu':>5}")
            with ControlClient(sock) as ctl:
                for bps in rates:
                    r = measure(topo, ctl, dut.proc.pid, bps, args)
                    print(f"{format_bit_rate(bps):>8} {r['offered'] / 1e6:8.1f}M "
                          f"{r['measured'] / 1e6:8.2f}M {r['measured'] / bps:6.3f} "
                          f"{r['received']:6d} {r['tx']:6d} {r['tail_drops']:6d} "
                          f"{r['depth_med']:>6g}/{r['depth_max']:<6d} {r['ideal_us']:7.1f} "
                          f"{r['gap_med']:7.1f} {r['gap_p1']:6.1f} {r['gap_p99']:6.1f} "
                          f"{r['bunched']:7.1%} {r['cpu']:5.0%}", flush=True)
    finally:
        if dut is not None:
            dut.kill()
        topo.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
