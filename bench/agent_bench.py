"""Benchmark: packets/s of the host agent's data path vs scapy's sendp, on one veth pair.

    sudo .venv/bin/python bench/agent_bench.py [--packets 200000] [--bytes 40MB]

Creates two namespaces (p4ft-<pid>-a/b) joined by a veth pair and measures, in the same run:
  raw     pre-built frames patched per packet and written to AF_PACKET (the agent's send loop)
  sendp   scapy sendp() of a list of packets (scapy builds each one)
  agent   the full agent: one flow a -> b, unpaced, transport and ACKs included; pps at the
          sender (packets / flow time) and at the receiver
and prints the figures and the raw/sendp ratio. Namespaces are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

A_IP, B_IP = "10.213.9.1", "10.213.9.2"


def sh(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=30).stdout


def child_raw(n: int, peer_mac: str) -> dict:
    from traffic.frames import FlowHeader, FrameCache
    from traffic.nexthop import resolve
    from traffic.packet import entropy_port

    rt = resolve(B_IP, peer_mac)
    import socket

    sk = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sk.bind((rt.dev, 0))
    cache = FrameCache()
    cache.prebuild(rt, B_IP, 1400)
    h = FlowHeader(1, 0, 1, 0, 7, n)
    sports = [entropy_port(1, 0, 7, q) for q in range(4)]
    t0 = time.perf_counter()
    for seq in range(n):
        sk.send(cache.frame(B_IP, h, sports[seq & 3], seq & 3, seq, 1400, 0))
    dt = time.perf_counter() - t0
    return {"packets": n, "seconds": dt, "pps": n / dt}


def child_sendp(n: int, peer_mac: str) -> dict:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.sendrecv import sendp

    from traffic.packet import ROCEV2_PORT, CollectiveHeader

    pkts = [Ether(dst=peer_mac) / IP(src=A_IP, dst=B_IP) / UDP(sport=50000, dport=ROCEV2_PORT)
            / CollectiveHeader(flow=7, seq=i, npkts=n, length=1400) / (b"\0" * 1400)
            for i in range(n)]
    t0 = time.perf_counter()
    sendp(pkts, iface="eth0", verbose=False)
    dt = time.perf_counter() - t0
    return {"packets": n, "seconds": dt, "pps": n / dt}


def run_agents(nsa: str, nsb: str, nbytes: int, out: Path) -> dict:
    trace = out / "one_flow.json"
    trace.write_text(json.dumps([{"src": 0, "dst": 1, "bytes": nbytes}]))
    start = time.time() + 1.0
    procs = []
    for ns, rank in ((nsa, 0), (nsb, 1)):
        procs.append(subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-m", "traffic.run", "--trace",
             "--schedule", str(trace), "--hosts", f"{A_IP},{B_IP}", "--rate", "100G",
             "--window", "1024", "--start-at", repr(start), "--timeout", "60",
             "--out", str(out / f"r{rank}")], cwd=ROOT, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    try:
        for p in procs:
            p.communicate(timeout=90)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=5)
    s = json.loads((out / "r0" / "rank0.json").read_text())
    r = json.loads((out / "r1" / "rank1.json").read_text())
    f, g = s["flows"][0], r["received"][0]
    return {"completed": s["completed"] and r["completed"], "bytes": f["bytes"],
            "send_pps": f["packets_sent"] / (f["finish"] - f["start"]),
            "recv_pps": g["arrivals"] / (g["finish"] - g["start"]),
            "goodput_gbps": f["bytes"] * 8 / (f["finish"] - f["start"]) / 1e9,
            "retransmissions": f["retransmissions"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", type=int, default=200_000, help="packets for the raw loop")
    ap.add_argument("--sendp-packets", type=int, default=5_000)
    ap.add_argument("--bytes", default="40MB", help="flow size for the full-agent run")
    ap.add_argument("--child", choices=["raw", "sendp"], help=argparse.SUPPRESS)
    ap.add_argument("--peer-mac", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        fn = child_raw if a.child == "raw" else child_sendp
        n = a.packets if a.child == "raw" else a.sendp_packets
        print(json.dumps(fn(n, a.peer_mac)))
        return 0
    if os.geteuid() != 0:
        ap.error("needs root (network namespaces, raw sockets)")
    from traffic.schedules import parse_size

    nsa, nsb = f"p4ft-{os.getpid()}-a", f"p4ft-{os.getpid()}-b"
    made = []
    try:
        for ns in (nsa, nsb):
            sh("ip", "netns", "add", ns)
            made.append(ns)
        sh("ip", "-n", nsa, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0",
           "netns", nsb)
        for ns, ip in ((nsa, A_IP), (nsb, B_IP)):
            sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        peer_mac = json.loads(sh("ip", "-n", nsb, "-j", "link", "show", "eth0"))[0]["address"]
        res = {}
        for part in ("raw", "sendp"):
            out = sh("ip", "netns", "exec", nsa, sys.executable, __file__, "--child", part,
                     "--peer-mac", peer_mac, "--packets", str(a.packets),
                     "--sendp-packets", str(a.sendp_packets))
            res[part] = json.loads(out)
        with tempfile.TemporaryDirectory(prefix="p4ft-bench-") as tmp:
            res["agent"] = run_agents(nsa, nsb, parse_size(a.bytes), Path(tmp))
    finally:
        for ns in reversed(made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
    raw, sp, ag = res["raw"], res["sendp"], res["agent"]
    print(f"raw pre-built frames : {raw['pps']:>10,.0f} pkt/s ({raw['packets']} packets)")
    print(f"scapy sendp          : {sp['pps']:>10,.0f} pkt/s ({sp['packets']} packets)")
    print(f"agent send (1 flow)  : {ag['send_pps']:>10,.0f} pkt/s, "
          f"{ag['goodput_gbps']:.2f} Gbit/s goodput, retx {ag['retransmissions']}, "
          f"completed={ag['completed']}")
    print(f"agent receive        : {ag['recv_pps']:>10,.0f} pkt/s")
    print(f"ratio raw/sendp      : {raw['pps'] / sp['pps']:.1f}x")
    print(f"ratio agent/sendp    : {ag['send_pps'] / sp['pps']:.1f}x")
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
