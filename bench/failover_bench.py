"""Benchmark: how long the failure loop takes from a physical link failure to the reroute
written on every switch, on the emulated k=4 fat-tree, for several (probe period, missed rounds)
settings in one run — and what the probes cost and whether healthy links flap meanwhile.

    sudo .venv/bin/python bench/failover_bench.py [--trials 4] [--configs 0.5:3,0.5:2,0.25:2]
                                                  [--load-pps 0] [--quiet-s 8]

One FabricNet for the whole run; per setting a fresh FabricController (the pipelines are kept:
``reuse_pipeline``) with loops failure + reconcile. Per setting:
  quiet      ``--quiet-s`` seconds with every link up: the controller's CPU (this process:
             probes out, PacketIns in) per second, and any link declared down (a false alarm)
  trials     ``--trials`` times: one edge-agg link (a different one each time) goes down with
             ``net.link_down`` (both veth ends down, as a cut cable) at a random phase of the
             probe rounds; detection = the time stamp
             of the failure loop's "reroute" event (written after every switch's Write
             returned) minus the moment of the link_down call; then the link comes back and the
             loop must restore it
``--load-pps N``: every host sends N UDP frames/s across pods during the whole setting (ECMP),
so probes compete with data for switch CPU. Prints every trial and a per-setting summary with
ratios to the first setting, all from this run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "topo"))

from fabric_traffic import start_sender  # noqa: E402

from model.spec import fat_tree  # noqa: E402


def _setting(text: str) -> tuple[float, int]:
    try:
        period, miss = text.split(":")
        p, m = float(period), int(miss)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not PERIOD:MISSES (e.g. 0.5:2)") from None
    if p <= 0 or m < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: period must be > 0 s and misses >= 1")
    return p, m


def _wait(cond, timeout: float, step: float = 0.01) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def _downs(ctl, since: float) -> list[str]:
    return [e.what for e in ctl.events
            if e.loop == "failure" and e.time >= since and " down " in e.what]


def _reroute_after(ctl, t: float):
    return next((e for e in ctl.events if e.loop == "failure" and e.time >= t
                 and e.what.startswith("reroute")), None)


def _trial(net, ctl, a: str, b: str) -> tuple[float, float]:
    """(link_down -> reroute written, link_up -> restored in the controller's view), s."""
    key = frozenset((a, b))
    time.sleep(random.uniform(0.0, ctl.control_period))  # any phase of the probe rounds
    t_down = time.time()
    net.link_down(a, b)
    ok = _wait(lambda: _reroute_after(ctl, t_down) is not None and not ctl.link_state()[key],
               30.0)
    ev = _reroute_after(ctl, t_down)
    t_up = time.time()
    net.link_up(a, b)
    back = _wait(lambda: ctl.link_state()[key], 30.0)
    d = ev.time - t_down if ok and ev is not None else float("nan")
    return d, (time.time() - t_up if back else float("nan"))


def run_setting(net, period: float, miss: int, links: list[tuple[str, str]], trials: int,
                quiet_s: float, load_pps: float) -> dict:
    from controller import FabricController

    spec = net.spec
    hosts = sorted(spec.hosts, key=lambda h: int(h[1:]))
    senders = []
    ctl = FabricController(spec, control_period=period, probe_miss_periods=miss)
    ctl.start("ecmp", loops=("failure", "reconcile"), reuse_pipeline=True)
    try:
        if load_pps:
            seconds = quiet_s + trials * (4 * (miss + 2) * period + 10) + 10
            half = len(hosts) // 2
            for i, h in enumerate(hosts):
                dst = spec.hosts[hosts[(i + half) % len(hosts)]]
                senders.append(start_sender(net.get(h), dst.ip, 46000 + i,
                                            int(load_pps * seconds), 200, load_pps))
        _wait(lambda: all(ctl.loops.last_seen.values()), 20.0)
        time.sleep(3 * period)
        t_quiet, cpu0 = time.time(), time.process_time()
        time.sleep(quiet_s)
        cpu_per_s = (time.process_time() - cpu0) / quiet_s
        detect, restore = [], []
        for k in range(trials):
            a, b = links[k % len(links)]
            d, r = _trial(net, ctl, a, b)
            detect.append(d)
            restore.append(r)
            print(f"  period {period} s, {miss} misses: {a}-{b} down -> reroute written "
                  f"{d:.2f} s ({d / period:.1f} periods); back up -> restored {r:.2f} s",
                  flush=True)
            time.sleep(2 * period)
        false_downs = [w for w in _downs(ctl, t_quiet)
                       if not any(f"{a}:" in w and f"{b}:" in w for a, b in links)]
    finally:
        for s in senders:
            s.kill()
        ctl.stop()
    return {"period": period, "miss": miss, "detect": detect, "restore": restore,
            "cpu_per_s": cpu_per_s, "false_downs": false_downs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--configs", type=lambda s: [_setting(x) for x in s.split(",")],
                    default=[(0.5, 3), (0.5, 2), (0.25, 2)], metavar="P:M,...")
    ap.add_argument("--quiet-s", type=float, default=8.0)
    ap.add_argument("--load-pps", type=float, default=0.0)
    ap.add_argument("--lock-wait", type=float, default=600.0)
    args = ap.parse_args(argv)
    if args.trials < 1:
        ap.error("--trials must be >= 1")

    from topo.net import FabricNet

    spec = fat_tree(4)
    links = [("edge1", "agg1"), ("edge3", "agg4"), ("edge6", "agg5"), ("edge8", "agg8")]
    links = [(a, b) for a, b in links if spec.links_between(a, b)]
    net = FabricNet(spec, lock_timeout=args.lock_wait)
    t0 = time.monotonic()
    net.start()
    try:
        print(f"k=4 fabric up in {time.monotonic() - t0:.1f} s; load {args.load_pps:g} "
              f"pps per host; {args.trials} trials per setting", flush=True)
        results = [run_setting(net, p, m, links, args.trials, args.quiet_s, args.load_pps)
                   for p, m in args.configs]
    finally:
        net.stop()
    base = None
    print("\nsetting          detect median [min-max] s   restore median s   controller CPU"
          "   false downs")
    for r in results:
        med = statistics.median(r["detect"])
        base = base or med
        print(f"{r['period']:>5} s x {r['miss']} miss  {med:6.2f} [{min(r['detect']):.2f}-"
              f"{max(r['detect']):.2f}] ({med / base:.2f}x)     {statistics.median(r['restore']):6.2f}"
              f"            {r['cpu_per_s'] * 100:5.1f} %        {len(r['false_downs'])}")
        for w in r["false_downs"]:
            print(f"    false down: {w}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
