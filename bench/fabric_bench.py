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
Forwarding (kernel UDP senders and counting sinks inside the hosts: bench/fabric_load.py; a
sender writes one UDP GSO send per millisecond's batch, which the kernel cuts into datagrams at
the host's own transmit, so the switches see, and count, one frame per datagram; --sender mmsg
writes one sendmmsg per batch instead; a sink counts distinct sequence numbers per recvmmsg of
up to 256; ECMP):
  single       h1 -> h2, both on edge1: one switch on the path; offered load rises until
               more than 20% is lost; peak = the most frames/s delivered in a step
  aggregate    all 16 hosts send at once, host i -> host i+8 (every flow crosses pods: 5
               switches); packet-hops/s = the rise of every switch's port_tx counters over
               P4Runtime during the step (probe traffic of an idle step of the same length
               subtracted), next to delivered frames/s x 5
  link rate    the same all-to-cross-pod pattern with 1400-byte payloads at rising Mbit/s per
               host: the highest rate *achieved* (delivered frames x frame bits / host) with no
               frame lost is what every host link (and, under ECMP, at most that on each
               uplink) sustains; the counters' packet-hops per delivered frame (5.0) show
               that the switches forwarded datagrams, not GSO super-packets
Every step's numbers are printed; the summary gives ratios from this run only. With --profile,
each step also prints where the machine's CPU went over the senders' run (/proc/stat's split,
the P4 programs' own run time from the kernel's BPF statistics, the senders' and sinks' CPU).
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

from fabric_load import Sink, sender_report, start_sender  # noqa: E402
from fabric_traffic import UDP_FRAME_OVERHEAD  # noqa: E402

from model.spec import fat_tree  # noqa: E402

HOPS = 5


def _tx_total(ctl) -> int:
    c = ctl.read_counters()
    return int(c[c["counter"] == "port_tx_ctr"]["packets"].sum())


def _step(net, pairs: list[tuple[str, str]], pps: float, seconds: float, size: int,
          load: argparse.Namespace) -> dict:
    """Every (src, dst) pair sends pps frames/s for `seconds`, all starting at one wall-clock
    instant; returns sent, delivered, the seconds from that start to the last arrival
    (``wall``), the senders' reports and, with ``load.profile``, the machine's CPU split over
    the senders' run."""
    spec = net.spec
    dsts = sorted({d for _, d in pairs})
    sinks: dict[str, Sink] = {}
    procs: list = []
    n = max(1, int(pps * seconds))
    try:
        for d in dsts:   # all interpreters start at once, then each is waited for
            sinks[d] = Sink(net.get(d), idle_s=1.5, wait=False)
        for sk in sinks.values():
            sk.wait_ready()
        start_at = time.time() + 1.0 + 0.15 * len(pairs)  # after every sender's interpreter is up
        procs = [start_sender(net.get(s), spec.hosts[d].ip, 45000 + i, n, size, pps, start_at,
                              load.sender, load.period_ms)
                 for i, (s, d) in enumerate(pairs)]
        cpu0 = None
        if load.profile:
            time.sleep(max(0.0, start_at - time.time()))
            cpu0 = _cpu_sample()
        for p in procs:
            p.wait(seconds * 10 + 30)
        cpu = _cpu_split(cpu0, _cpu_sample()) if cpu0 is not None else None
        reports = [r for p in procs if (r := sender_report(p)) is not None]
        counts = [sk.result() for sk in sinks.values()]
        got = sum(c["got"] for c in counts)
        times = [c["last"] for c in counts if c["last"] is not None]
        # the delivery window: from the common start to the last arrival (>= the send time)
        wall = max(seconds, (max(times) - start_at) if times else seconds)
    finally:
        for sk in sinks.values():
            sk.kill()
        for p in procs:   # only if the step failed: a sender ends by itself
            if p.poll() is None:
                p.kill()
                p.wait(5)
    return {"sent": n * len(pairs), "got": got, "wall": wall, "senders": reports,
            "sinks_cpu": [(c.get("cpu_s", 0.0), c.get("user_s", 0.0)) for c in counts],
            "cpu": cpu}


def _cpu_sample() -> dict:
    """/proc/stat's all-CPU line (USER_HZ ticks), the BPF programs' run time and runs, now."""
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    with open("/proc/stat") as f:
        ticks = dict(zip(names, (int(x) for x in f.readline().split()[1:9]), strict=True))
    bpf_ns, runs = _bpf_stats()
    return {"t": time.monotonic(), "ticks": ticks, "bpf_ns": bpf_ns, "bpf_runs": runs}


def _bpf_stats() -> tuple[int, int]:
    """(run_time_ns, run_cnt) summed over the loaded p4switch programs (``p4_ingress``);
    zeros unless kernel.bpf_stats_enabled is 1."""
    import json
    import subprocess

    try:
        out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True,
                             check=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return 0, 0
    progs = [p for p in json.loads(out or "[]") if p.get("name") == "p4_ingress"]
    return (sum(p.get("run_time_ns", 0) for p in progs),
            sum(p.get("run_cnt", 0) for p in progs))


def _cpu_split(a: dict, b: dict) -> dict:
    """Shares of the machine between two samples, in percent of one CPU (2 cores = 200 %)."""
    import os

    ticks = {k: b["ticks"][k] - a["ticks"][k] for k in a["ticks"]}
    total = max(1, sum(ticks.values()))
    ncpu = os.cpu_count() or 1
    dt = max(1e-9, b["t"] - a["t"])
    runs = b["bpf_runs"] - a["bpf_runs"]
    bpf_s = (b["bpf_ns"] - a["bpf_ns"]) / 1e9
    return {"seconds": dt, **{k: 100.0 * ncpu * v / total for k, v in ticks.items()},
            "bpf_pct": 100.0 * bpf_s / dt, "bpf_runs_per_s": runs / dt,
            "bpf_us_per_run": bpf_s * 1e6 / runs if runs else 0.0}


def _profile_line(r: dict) -> str:
    import os

    c, snd = r["cpu"], r["senders"]
    if c is None:
        return ""
    dt = c["seconds"]
    modes = ",".join(sorted({s["mode"] for s in snd})) or "?"
    snd_cpu = sum(s["cpu_s"] for s in snd) / dt * 100
    snd_user = sum(s.get("user_s", 0.0) for s in snd) / dt * 100
    lag = max((s["lag_s"] for s in snd), default=0.0)
    sink_cpu = sum(total for total, _ in r["sinks_cpu"]) / dt * 100
    sink_user = sum(user for _, user in r["sinks_cpu"]) / dt * 100
    return (f"    cpu over {dt:.2f} s, percent of one core ({100 * (os.cpu_count() or 1)} in "
            f"all): user {c['user'] + c['nice']:.0f}, system {c['system']:.0f}, softirq "
            f"{c['softirq']:.0f}, irq {c['irq']:.0f}, steal {c['steal']:.0f}, idle "
            f"{c['idle'] + c['iowait']:.0f}; BPF programs {c['bpf_pct']:.0f} "
            f"({c['bpf_runs_per_s']:,.0f} runs/s, {c['bpf_us_per_run']:.2f} us/run); "
            f"{len(snd)} senders ({modes}) {snd_cpu:.0f} in their time (user {snd_user:.0f}; system "
            "time includes the softirq work their sends run), finished <= "
            f"{lag:.3f} s late; sinks {sink_cpu:.0f} (user {sink_user:.0f}; from ready to end)")


def _ladder(net, pairs, rates, seconds, size, label, load, stop_loss=0.2, ctl=None,
            idle_hops=0.0):
    rows = []
    for pps in rates:
        tx0, c0 = (_tx_total(ctl) if ctl else 0), time.monotonic()
        ev0 = len(ctl.events) if ctl else 0
        r = _step(net, pairs, pps, seconds, size, load)
        sent, got, wall = r["sent"], r["got"], r["wall"]
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
        mbps = got / wall / len(pairs) * (size + UDP_FRAME_OVERHEAD) * 8 / 1e6
        print(f"  {label}: offered {pps * len(pairs):8,.0f} fr/s ({pps:,.0f}/sender) -> "
              f"delivered {got / wall:8,.0f} fr/s ({mbps:.1f} Mbit/s per sender), loss "
              f"{loss:6.2%}{h}", flush=True)
        if load.profile:
            print(_profile_line(r), flush=True)
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
    ap.add_argument("--sender", choices=("gso", "mmsg"), default="gso",
                    help="how the senders write: gso = one UDP GSO send per batch (the kernel "
                    "cuts it into datagrams at the host's transmit), mmsg = one sendmmsg per "
                    "batch (bench/fabric_load.py)")
    ap.add_argument("--period-ms", type=float, default=1.0,
                    help="a sender writes one batch per this many ms")
    ap.add_argument("--phases", default="single,aggregate,link",
                    help="which forwarding measurements to run (comma-separated)")
    ap.add_argument("--profile", action="store_true",
                    help="per step, the machine's CPU split over the senders' run "
                    "(/proc/stat), the BPF programs' run time (turns kernel.bpf_stats_enabled "
                    "on for the run, which costs a little per packet) and the senders' and "
                    "sinks' own CPU")
    a = ap.parse_args()
    import os

    if os.geteuid() != 0:
        print("fabric_bench: needs root (Mininet); skipped")
        return 0
    results = {}
    stats = Path("/proc/sys/kernel/bpf_stats_enabled")
    stats_before = stats.read_text().strip() if a.profile and stats.exists() else None
    if stats_before is not None:
        stats.write_text("1")  # the kernel accounts BPF run time only when asked
    try:
        print(f"senders: {a.sender}, one batch per {a.period_ms:g} ms"
              + (", profiled" if a.profile else ""), flush=True)
        for target in a.targets.split(","):
            print(f"=== target {target} (load average {_load()})", flush=True)
            results[target] = run_target(target, a)
            results[target]["load"] = _load()
            print(f"=== target {target} done (load average {results[target]['load']})",
                  flush=True)
    finally:
        if stats_before is not None:
            stats.write_text(stats_before)
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

        phases = set(a.phases.split(","))
        names = list(spec.hosts)
        pairs = [(names[i], names[(i + 8) % 16]) for i in range(16)]
        single = agg = link = []
        if "single" in phases:
            print("single switch (h1 -> h2 via edge1), 100-byte payloads:")
            single = _ladder(net, [("h1", "h2")], [2000, 4000, 8000, 16000, 32000], a.seconds,
                             100, "single", a)
        if "aggregate" in phases:
            print("aggregate (16 senders, every flow across pods, 5 switches), 100-byte "
                  "payloads:")
            agg = _ladder(net, pairs, [50, 100, 200, 400, 800, 1600], a.seconds, 100,
                          "aggregate", a, ctl=ctl, idle_hops=idle)
        frame = 1400 + UDP_FRAME_OVERHEAD
        mbps_steps = [float(m) for m in a.mbps.split(",") if m]
        if "link" in phases:
            print(f"link rate (16 senders, cross-pod, {frame}-byte frames):")
            link = _ladder(net, pairs, [m * 1e6 / (frame * 8) for m in mbps_steps], a.seconds,
                           1400, "link", a, stop_loss=0.05, ctl=ctl, idle_hops=idle)
        peak_single = max((r["delivered_pps"] for r in single), default=0.0)
        peak_hops = max((r["hops_per_s"] for r in agg), default=0.0)
        peak_agg = max((r["delivered_pps"] for r in agg), default=0.0)
        per_host = [r["delivered_pps"] / len(pairs) * frame * 8 / 1e6 for r in link]
        clean = [m for m, r in zip(per_host, link, strict=True) if r["loss"] == 0]
        print("summary:")
        if single:
            print(f"  one p4switch forwards       {peak_single:8,.0f} frames/s (peak)")
        if agg:
            print(f"  the fabric delivers         {peak_agg:8,.0f} frames/s end to end = "
                  f"{peak_agg * HOPS:,.0f} hops/s; counters say {peak_hops:,.0f} packet-hops/s")
        if single and agg:
            print(f"  aggregate / one switch      {peak_hops / peak_single:8.2f}x (packet-hops/s; "
                  "20 switch processes share 2 cores with the senders)")
        if link:
            print(f"  highest loss-free link rate {max(clean) if clean else 0:8.1f} Mbit/s per "
                  f"host, achieved (offered {', '.join(f'{m:g}' for m in mbps_steps[:len(link)])}"
                  f"; {frame}-byte frames; achieved < offered with no loss: every frame "
                  "arrived, later than sent, so the senders or the switches' queues set the pace)")
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
