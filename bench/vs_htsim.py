"""The same connection matrix through htsim and p4fabric's simulator, side by side.

htsim (``htsim_uec``, the Ultra Ethernet Consortium's simulator; docs/htsim.md) is the field's
reference for load-balancing results. This bench runs each workload (a ``.cm`` file, or one
built here: a random permutation, an incast, p4fabric's AllToAll or ring AllReduce exported
with traffic.schedules.cm) through both on the same 3-tier fat tree (k from the matrix's nodes,
k³/4 hosts), 100 Gb/s, 1 µs links, the same MTU and queue depth, NSCC at both ends with
p4fabric's initial window raised to htsim's (1.5 BDP), and prints per workload and variant:
both tail FCTs (the slowest flow, µs), both spreads (tail / fastest), both retransmission
counts, p4fabric's trims and timeouts, and both CPU times (child processes' user + system
seconds) with their ratio.

htsim's own figures beside p4fabric's: its ``Rtx`` and ``NACKs`` totals. A matrix whose flows
wait on ``recv_done_trigger`` (p4fabric's exported ring AllReduce) is not run through htsim:
htsim_uec fires those only with ``-conn_reuse`` and message ids (docs/htsim.md).

Variants: ``spray`` (p4fabric random spraying; htsim ``-load_balancing_algo oblivious -paths
128``) and ``1path`` (p4fabric ECMP; htsim ``-paths 1``), each with packet trimming
(``+trim``: p4fabric ``--trim``, htsim's default) or without (htsim ``-disable_trim``).

htsim comes from ``HTSIM`` (its path) or ``htsim_uec`` on PATH; without it the bench says why
and exits 0 (p4fabric never requires it). Each htsim run happens in a temporary directory
(it writes logout.dat and idmap.txt where it runs).

Run: .venv/bin/python bench/vs_htsim.py [--workload perm incast alltoall allreduce]
[--tm FILE ...]
[--k 4] [--size 2MB] [--variants spray 1path spray+trim 1path+trim] [--workers 1]
[--pipeline python|native|both] [--core c|python|both]

Each line also gives p4fabric's packet-hops per CPU second (next to the CPU ratio to htsim,
so a speed-up reads in both) and the largest child process's resident memory so far.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from traffic.schedules import GENERATORS, parse_size, ring_allreduce  # noqa: E402
from traffic.schedules.cm import format_cm, from_schedule, read_cm  # noqa: E402

VARIANTS = ("spray", "1path", "spray+trim", "1path+trim")
RATE_BPS = 100e9
HOP_US = 1.0
ACK_BYTES = 64


def htsim_path() -> tuple[str | None, str]:
    """(htsim_uec's path, or None and why not)."""
    env = os.environ.get("HTSIM")
    if env:
        p = Path(env)
        if p.is_file() and os.access(p, os.X_OK):
            return str(p), ""
        return None, f"HTSIM={env} is not an executable file"
    found = shutil.which("htsim_uec")
    return (found, "") if found else (None, "htsim_uec is not on PATH and HTSIM is not set "
                                            "(docs/htsim.md says how to build it)")


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def k_for(nodes: int) -> int:
    """The fat tree whose k³/4 hosts hold ``nodes``."""
    k = 2
    while k ** 3 // 4 < nodes:
        k += 2
    return k


def init_cwnd_pkts(mtu: int, k: int) -> int:
    """htsim's NSCC starting window, 1.5 BDP, in packets: the unloaded RTT across the fat
    tree's 6 hops (propagation both ways, a data packet and an ACK serialised per hop)."""
    del k   # three tiers: 6 hops whatever k
    hops = 6
    rtt_s = 2 * hops * HOP_US * 1e-6 + hops * (mtu + ACK_BYTES) * 8 / RATE_BPS
    return math.ceil(1.5 * RATE_BPS / 8 * rtt_s / mtu)


# -- workloads --------------------------------------------------------------------------------

def permutation(nodes: int, size: int, seed: int) -> str:
    rng = random.Random(seed)
    dst = list(range(nodes))
    while any(i == d for i, d in enumerate(dst)):
        rng.shuffle(dst)
    lines = [f"Nodes {nodes}", f"Connections {nodes}"]
    lines += [f"{i}->{d} id {i + 1} start 0 size {size}" for i, d in enumerate(dst)]
    return "\n".join(lines) + "\n"


def incast(nodes: int, size: int, fan_in: int) -> str:
    lines = [f"Nodes {nodes}", f"Connections {fan_in}"]
    lines += [f"{i + 1}->0 id {i + 1} start 0 size {size}" for i in range(fan_in)]
    return "\n".join(lines) + "\n"


def allreduce(nodes: int, size: int) -> str:
    return format_cm(from_schedule(ring_allreduce(nodes, size)))


def alltoall(nodes: int, size: int) -> str:
    """p4fabric's direct AllToAll (``size`` bytes per rank, split over its peers)."""
    return format_cm(from_schedule(GENERATORS["alltoall"](nodes, size)))


HTSIM_RECV_DONE = ("htsim_uec runs a flow's recv_done_trigger only with -conn_reuse and "
                   "message ids (its UecSink keeps the trigger and never fires it): skipped")


# -- the two simulators -----------------------------------------------------------------------

@dataclass
class Outcome:
    tail_us: float | None = None
    min_us: float | None = None
    flows: int = 0
    finished: int = 0
    retx: int | None = None
    trims: int | None = None
    timeouts: int | None = None
    nacks: int | None = None
    cpu_s: float = 0.0
    hops: int | None = None
    """p4fabric's packet-hops (frames switches took in)."""
    rss_mb: float | None = None
    """The largest child process so far (this bench's children: the simulator, its parts)."""
    error: str = ""

    @property
    def spread(self) -> float | None:
        if self.tail_us is None or not self.min_us:
            return None
        return self.tail_us / self.min_us


_START = re.compile(r"flowId (\d+) .*starting at ([0-9.eE+-]+)")
_FINISH = re.compile(r"flowId (\d+) .*finished at ([0-9.eE+-]+)")
_TOTALS = re.compile(r"New: (\d+) Rtx: (\d+).* NACKs: (\d+)")


def run_htsim(exe: str, cm: Path, nodes: int, variant: str, mtu: int, queue: int,
              end_us: float, seed: int) -> Outcome:
    args = [exe, "-tm", str(cm.resolve()), "-nodes", str(nodes), "-tiers", "3",
            "-sender_cc_only", "-end", f"{end_us:g}", "-mtu", str(mtu), "-q", str(queue),
            "-linkspeed", f"{RATE_BPS / 1e6:g}", "-hop_latency", f"{HOP_US:g}",
            "-seed", str(seed), "-load_balancing_algo", "oblivious",
            "-paths", "1" if variant.startswith("1path") else "128"]
    if "trim" not in variant:
        args.append("-disable_trim")
    c0 = cpu_children()
    with tempfile.TemporaryDirectory(prefix="vs-htsim-") as tmp:
        p = subprocess.run(args, cwd=tmp, capture_output=True, text=True, check=False)
    out = Outcome(cpu_s=cpu_children() - c0)
    if p.returncode != 0:
        out.error = f"htsim exit {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}"
        return out
    starts = {int(m[1]): float(m[2]) for m in _START.finditer(p.stdout)}
    fcts = [float(m[2]) - starts.get(int(m[1]), 0.0) for m in _FINISH.finditer(p.stdout)]
    out.flows = len(read_cm(cm).flows)
    out.finished = len(fcts)
    if fcts:
        out.tail_us, out.min_us = max(fcts), min(fcts)
    t = _TOTALS.search(p.stdout)
    if t:
        out.retx, out.nacks = int(t[2]), int(t[3])
    return out


def run_p4fabric(cm: Path, k: int, variant: str, mtu: int, queue: int, end_us: float,
                 seed: int, workers: int, pipeline: str = "native", core: str = "c") -> Outcome:
    args = [sys.executable, "-m", "sim", "--k", str(k), "--tm", str(cm), "--quiet", "--json",
            "--scheme", "ecmp" if variant.startswith("1path") else "random",
            "--rate", f"{RATE_BPS:g}", "--prop-us", f"{HOP_US:g}", "--mtu", str(mtu),
            "--queue-depth", str(queue), "--cc", "nscc",
            "--cc-param", f"init_cwnd={init_cwnd_pkts(mtu, k)}",
            "--until-us", f"{end_us:g}", "--seed", str(seed), "--workers", str(workers),
            "--pipeline", pipeline, "--core", core]
    if "trim" in variant:
        args.append("--trim")
    c0 = cpu_children()
    p = subprocess.run(args, capture_output=True, text=True, check=False,
                       cwd=Path(__file__).resolve().parents[1])
    out = Outcome(cpu_s=cpu_children() - c0,
                  rss_mb=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    text = p.stdout
    if "\n}" not in text:
        out.error = f"p4fabric exit {p.returncode}: {(p.stderr or text).strip()[-300:]}"
        return out
    s = json.loads(text[:text.index("\n}") + 2])
    out.tail_us, out.min_us = s["fct_tail_us"], s["fct_min_us"]
    out.flows, out.finished = s["flows"], s["flows"] - s["flows_unfinished"]
    out.retx, out.trims, out.timeouts = s["retransmissions"], s["trims"], s["timeouts"]
    out.nacks = s["nacks"]
    out.hops = s.get("packet_hops")
    return out


def _f(v: float | None, spec: str = "{:.1f}") -> str:
    return "–" if v is None else spec.format(v)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", nargs="*", default=["perm", "incast", "alltoall"],
                    choices=["perm", "incast", "alltoall", "allreduce"])
    ap.add_argument("--tm", nargs="*", default=[], metavar="FILE", help="matrices to run too")
    ap.add_argument("--k", type=int, default=4, help="fat tree of the built workloads")
    ap.add_argument("--size", default="2MB", help="bytes per flow (AllReduce: the buffer)")
    ap.add_argument("--fan-in", type=int, default=8, help="incast senders")
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--mtu", type=int, default=4150, help="both sides' packet size (htsim's "
                    "default)")
    ap.add_argument("--queue", type=int, default=64, help="egress queue, packets, both sides")
    ap.add_argument("--end-us", type=float, default=100_000.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1, help="p4fabric's processes (sim)")
    ap.add_argument("--pipeline", default="native", choices=["python", "native", "both"],
                    help="what runs fabric.p4 in p4fabric's simulator (python -m sim "
                         "--pipeline); both: a line for each, against the same htsim run")
    ap.add_argument("--core", default="c", choices=["c", "python", "both"],
                    help="what runs p4fabric's event loop and switch hop (python -m sim "
                         "--core); both: a line for each, against the same htsim run")
    a = ap.parse_args(argv)
    kinds = [(p, c) for p in (["python", "native"] if a.pipeline == "both" else [a.pipeline])
             for c in (["c", "python"] if a.core == "both" else [a.core])]
    several = len(kinds) > 1
    exe, why = htsim_path()
    if exe is None:
        print(f"skipped: {why}")
        return 0
    try:
        size = parse_size(a.size)
    except ValueError as e:
        ap.error(str(e))
    nodes = a.k ** 3 // 4
    with tempfile.TemporaryDirectory(prefix="vs-htsim-cm-") as tmp:
        files: list[tuple[str, Path]] = []
        for w in a.workload:
            text = {"perm": lambda: permutation(nodes, size, a.seed),
                    "incast": lambda: incast(nodes, size, min(a.fan_in, nodes - 1)),
                    "alltoall": lambda: alltoall(nodes, size),
                    "allreduce": lambda: allreduce(nodes, size)}[w]()
            p = Path(tmp) / f"{w}.cm"
            p.write_text(text)
            files.append((f"{w} k={a.k}", p))
        files += [(Path(f).name, Path(f)) for f in a.tm]
        print(f"htsim: {exe}")
        print(f"{'workload':<18} {'variant':<11} {'tail µs htsim/p4f':>19} "
              f"{'spread htsim/p4f':>17} {'retx htsim/p4f':>15} {'NACKs htsim/p4f':>15} "
              f"{'trims':>6} {'RTOs':>5} "
              f"{'CPU s htsim/p4f':>16} {'ratio':>7} {'p4f hops/CPU s':>14} "
              f"{'max RSS MB':>10}")
        for label, cm in files:
            m = read_cm(cm)
            k = k_for(m.nodes)
            for v in a.variants:
                if any(f.recv_done is not None for f in m.flows):
                    h = Outcome(error=HTSIM_RECV_DONE)
                else:
                    h = run_htsim(exe, cm, k ** 3 // 4, v, a.mtu, a.queue, a.end_us, a.seed)
                for pipe, core in kinds:
                    f = run_p4fabric(cm, k, v, a.mtu, a.queue, a.end_us, a.seed, a.workers,
                                     pipe, core)
                    _print_row(label, f"{v}/{pipe}/{core}" if several else v, h, f,
                               a.end_us)
    return 0


def _print_row(label: str, v: str, h: Outcome, f: Outcome, end_us: float) -> None:
    """One workload and variant: htsim's figures and p4fabric's side by side."""
    for side, o in (("htsim", h), ("p4fabric", f)):
        if o.error:
            print(f"{label:<18} {v:<11} {side}: {o.error}")
        elif o.finished < o.flows:
            print(f"{label:<18} {v:<11} {side}: {o.finished}/{o.flows} flows "
                  f"finished by {end_us:g} µs (tail of the finished ones)")
    ratio = f.cpu_s / h.cpu_s if h.cpu_s > 0 else None
    print(f"{label:<18} {v:<11} "
          f"{_f(h.tail_us):>9}/{_f(f.tail_us):<9} "
          f"{_f(h.spread, '{:.2f}'):>8}/{_f(f.spread, '{:.2f}'):<8} "
          f"{_f(h.retx, '{}'):>7}/{_f(f.retx, '{}'):<7} "
          f"{_f(h.nacks, '{}'):>7}/{_f(f.nacks, '{}'):<7} {_f(f.trims, '{}'):>6} "
          f"{_f(f.timeouts, '{}'):>5} "
          f"{h.cpu_s:>7.2f}/{f.cpu_s:<8.2f} {_f(ratio, '{:.1f}x'):>7} "
          f"{_f(f.hops / f.cpu_s if f.hops and f.cpu_s else None, '{:.0f}'):>14} "
          f"{_f(f.rss_mb, '{:.0f}'):>10}", flush=True)

if __name__ == "__main__":
    sys.exit(main())
