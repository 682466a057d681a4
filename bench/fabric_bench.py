"""Benchmark: the emulated k=4 fat-tree — bring-up time per phase, entries/s, aggregate
forwarding rate next to one p4switch's rate in the same run, and the highest per-link rate the
fabric carries without loss (2 cores shared by 20 switch processes and 16 senders).

    sudo .venv/bin/python bench/fabric_bench.py [--seconds 3] [--bw MBPS] [--targets p4switch,ebpf]

How to run it for a figure: on a quiet machine (nothing else running: 20 switch processes and
16 senders share its cores, so any other load lowers every rate), as root, both targets in one
run so their figures compare:

    sudo .venv/bin/python bench/fabric_bench.py --targets p4switch,ebpf --seconds 3

The load average is printed at the start and end of each target (report it beside the rates).
The eBPF target needs clang and BPF support (it says so in one line otherwise).

Bring-up (one FabricNet + FabricController.start()):
  network      Mininet: 16 host namespaces, 48 veth pairs, HTB on host links (when --bw)
  processes    20 `p4switch --no-p4` processes until every P4Runtime port listens
  compile      fabric.p4 -> P4Info + device config, once, in the controller
  routing      the pure route/group computation
  push+install per switch in parallel: connect + arbitrate, SetForwardingPipelineConfig (each
               switch compiles the bundle), one Write batch of its entries
Forwarding (kernel UDP senders and counting sinks inside the hosts, batched with
sendmmsg/recvmmsg: bench/fabric_load.py; ECMP):
  single       h1 -> h2, both on edge1: one switch on the path; offered load rises until
               more than 20% is lost; peak = the most frames/s delivered in a step
  aggregate    all 16 hosts send at once, host i -> host i+8 (every flow crosses pods: 5
               switches); packet-hops/s = the rise of every switch's port_tx counters over
               P4Runtime during the step (probe traffic of an idle step of the same length
               subtracted), next to delivered frames/s x 5
  link rate    the same all-to-cross-pod pattern with 1400-byte payloads at rising Mbit/s per
               host: the highest rate *achieved* (delivered frames x frame bits / host) with no
               frame lost is what every host link (and, under ECMP, at most that on each
               uplink) sustains
Every step's numbers are printed; the summary gives ratios from this run only.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "topo"))
sys.path.insert(0, str(ROOT / "bench"))

from fabric_load import Sink, start_sender  # noqa: E402
from fabric_traffic import UDP_FRAME_OVERHEAD  # noqa: E402

from model.spec import fat_tree  # noqa: E402

HOPS = 5


def _tx_total(ctl) -> int:
    c = ctl.read_counters()
    return int(c[c["counter"] == "port_tx_ctr"]["packets"].sum())


def _step(net, pairs: list[tuple[str, str]], pps: float, seconds: float, size: int):
    """Every (src, dst) pair sends pps frames/s for `seconds`, all starting at one wall-clock
    instant; returns (sent, delivered, seconds from that start to the last arrival)."""
    spec = net.spec
    dsts = sorted({d for _, d in pairs})
    sinks = {d: Sink(net.get(d), idle_s=1.5) for d in dsts}
    n = max(1, int(pps * seconds))
    start_at = time.time() + 1.0 + 0.15 * len(pairs)  # after every sender's interpreter is up
    try:
        procs = [start_sender(net.get(s), spec.hosts[d].ip, 45000 + i, n, size, pps, start_at)
                 for i, (s, d) in enumerate(pairs)]
        for p in procs:
            p.wait(seconds * 10 + 30)
        counts = [sk.result() for sk in sinks.values()]
        got = sum(c["got"] for c in counts)
        times = [c["last"] for c in counts if c["last"] is not None]
        # the delivery window: from the common start to the last arrival (>= the send time)
        wall = max(seconds, (max(times) - start_at) if times else seconds)
    finally:
        for sk in sinks.values():
            sk.kill()
    return n * len(pairs), got, wall


def _ladder(net, pairs, rates, seconds, size, label, stop_loss=0.2, ctl=None, idle_hops=0.0):
    rows = []
    for pps in rates:
        tx0, c0 = (_tx_total(ctl) if ctl else 0), time.monotonic()
        ev0 = len(ctl.events) if ctl else 0
        sent, got, wall = _step(net, pairs, pps, seconds, size)
        # hops of our frames only: the probes' share over the whole read-to-read interval out
        hops = ((_tx_total(ctl) - tx0 - idle_hops * (time.monotonic() - c0)) / wall
                if ctl else None)
        loss = 1 - got / sent
        rows.append({"offered_pps": pps * len(pairs), "delivered_pps": got / wall,
                     "loss": loss, "hops_per_s": hops, "per_host_pps": pps})
        h = ""
        if ctl is not None:
            evs = [e for e in ctl.events[ev0:] if e.loop == "failure"]
            h = (f", {hops:,.0f} packet-hops/s (counters; {hops / max(got / wall, 1e-9):.1f} "
                 f"per delivered frame), {len(evs)} failure-loop events")
        print(f"  {label}: offered {pps * len(pairs):8,.0f} fr/s ({pps:,.0f}/sender) -> "
              f"delivered {got / wall:8,.0f} fr/s, loss {loss:6.2%}{h}", flush=True)
        if loss > stop_loss:
            break
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0, help="length of each load step")
    ap.add_argument("--bw", type=float, default=None, help="link Mbit/s (default unlimited)")
    ap.add_argument("--lock-wait", type=float, default=300.0)
    ap.add_argument("--targets", default="p4switch",
                    help="switch targets to measure one after the other in this run, e.g. "
                    "p4switch,ebpf (ebpf: every switch in the kernel)")
    ap.add_argument("--mbps", default="0.5,1,2,4,8,16,32,64,100,128,160,200,256",
                    help="per-host offered Mbit/s steps of the link-rate ladder")
    a = ap.parse_args()
    import os

    if os.geteuid() != 0:
        print("fabric_bench: needs root (Mininet); skipped")
        return 0
    results = {}
    for target in a.targets.split(","):
        print(f"=== target {target} (load average {_load()})", flush=True)
        results[target] = run_target(target, a)
        results[target]["load"] = _load()
        print(f"=== target {target} done (load average {results[target]['load']})", flush=True)
    if len(results) > 1:
        print("same run, by target:")
        for t, r in results.items():
            print(f"  {t:9} single switch {r['single']:8,.0f} fr/s, fabric {r['hops']:10,.0f} "
                  f"packet-hops/s, loss-free {r['clean_mbps']:6.1f} Mbit/s per host "
                  f"(load average at its end {r['load']})")
    return 0


def _load() -> str:
    import os

    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_target(target: str, a) -> dict:
    from controller import FabricController
    from topo.net import FabricNet

    spec = fat_tree(4, a.bw)
    t0 = time.monotonic()
    net = FabricNet(spec, target=target, lock_timeout=a.lock_wait)
    ctl = None
    try:
        net.start()
        t_net = time.monotonic()
        ctl = FabricController(spec, target=target, control_period=0.5)
        ctl.start(scheme="ecmp", loops=("failure", "reconcile"))
        t_ctl = time.monotonic()
        st = ctl.stats
        print(f"bring-up k=4 (20 switches, 16 hosts, {st['entries']} entries): "
              f"{t_ctl - t0:.2f} s total")
        print(f"  network    {net.timings['build']:6.2f} s   (namespaces, veths, HTB)")
        print(f"  processes  {net.timings['processes']:6.2f} s   (20 {target} switches until gRPC listens)")
        print(f"  compile    {st['compile_s']:6.2f} s   (fabric.p4, once)")
        print(f"  routing    {st['routing_s']:6.2f} s")
        print(f"  push+install {st['bring_up_s']:4.2f} s   (parallel; slowest switch: connect "
              f"{st['max_connect_s']:.2f} s, pipeline {st.get('max_pipeline_s', float('nan')):.2f}"
              f" s, write {st.get('max_write_s', float('nan')):.2f} s)")
        print(f"  entries/s  {st['entries_per_s']:8,.0f} over push+install"
              + (f", {st['write_entries_per_s']:,.0f} in the Write batches alone"
                 if "write_entries_per_s" in st else ""))
        print(f"  (FabricNet start {t_net - t0:.2f} s, controller start {t_ctl - t_net:.2f} s)")

        time.sleep(1.0)
        tx0, w0 = _tx_total(ctl), time.monotonic()
        time.sleep(a.seconds)
        idle = (_tx_total(ctl) - tx0) / (time.monotonic() - w0)
        print(f"idle probe traffic: {idle:,.0f} packet-hops/s (subtracted below)")

        print("single switch (h1 -> h2 via edge1), 100-byte payloads:")
        single = _ladder(net, [("h1", "h2")], [2000, 4000, 8000, 16000, 32000], a.seconds,
                         100, "single")
        names = list(spec.hosts)
        pairs = [(names[i], names[(i + 8) % 16]) for i in range(16)]
        print("aggregate (16 senders, every flow across pods, 5 switches), 100-byte payloads:")
        agg = _ladder(net, pairs, [50, 100, 200, 400, 800, 1600], a.seconds, 100, "aggregate",
                      ctl=ctl, idle_hops=idle)
        frame = 1400 + UDP_FRAME_OVERHEAD
        print(f"link rate (16 senders, cross-pod, {frame}-byte frames):")
        mbps_steps = [float(m) for m in a.mbps.split(",") if m]
        link = _ladder(net, pairs, [m * 1e6 / (frame * 8) for m in mbps_steps], a.seconds, 1400,
                       "link", stop_loss=0.05)
        peak_single = max(r["delivered_pps"] for r in single)
        peak_hops = max(r["hops_per_s"] for r in agg)
        peak_agg = max(r["delivered_pps"] for r in agg)
        per_host = [r["delivered_pps"] / len(pairs) * frame * 8 / 1e6 for r in link]
        clean = [m for m, r in zip(per_host, link, strict=True) if r["loss"] == 0]
        print("summary:")
        print(f"  one p4switch forwards       {peak_single:8,.0f} frames/s (peak)")
        print(f"  the fabric delivers         {peak_agg:8,.0f} frames/s end to end = "
              f"{peak_agg * HOPS:,.0f} hops/s; counters say {peak_hops:,.0f} packet-hops/s")
        print(f"  aggregate / one switch      {peak_hops / peak_single:8.2f}x (packet-hops/s; 20 "
              "switch processes share 2 cores with the senders)")
        print(f"  highest loss-free link rate {max(clean) if clean else 0:8.1f} Mbit/s per host, "
              f"achieved (offered {', '.join(f'{m:g}' for m in mbps_steps[:len(link)])}; "
              f"{frame}-byte frames; achieved < offered with no loss: every frame arrived, "
              "later than sent, so the senders or the switches' queues set the pace)")
        fails = [e for e in ctl.events if e.loop == "failure"]
        if fails:
            print(f"  failure-loop events during the run: {len(fails)}, e.g. "
                  + "; ".join(f"{e.switch}: {e.what}" for e in fails[:3]))
        return {"single": peak_single, "hops": peak_hops,
                "clean_mbps": max(clean) if clean else 0.0}
    finally:
        if ctl is not None:
            ctl.stop()
        net.stop()




if __name__ == "__main__":
    sys.exit(main())
