"""How fast can this machine run the emulated fabric? Per switch target and time-dilation
factor, the demo's collectives (ring AllReduce and MoE AllToAll on k=4) run on one Mininet
fabric and the fidelity guard judges each run: the valid fraction, the hosts' send lag p99 and
the switches' ingress lag p99, in fabric µs, side by side (issue 33's capacity table).

It runs what ``make calibrate`` runs — the same dilated file (experiments.calibrate's
``ramp_config``), the same probe (``probe_run``: the spraying scheme, one run judged by
topo/guard.py) — so the two agree: ``cal`` is the fraction valid with calibration's halved
thresholds; a TDF whose ``cal`` is 1 for the first workload is one calibration may pick.
Each run also says who held the CPU (``/proc/PID/schedstat``): the host agents' run-queue
delay and CPU time, per agent and second of wall time, and the switches' CPU.

    sudo .venv/bin/python bench/capacity.py [--targets p4switch,ebpf]
        [--tdfs 100000,50000,20000,10000,5000] [--reps 2] [--config experiments/configs/demo.yaml]

Needs root (Mininet) and takes the machine-wide fabric lock while each target's fabric is up.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments.calibrate import HEADROOM, probe_run, probe_scheme, ramp_config  # noqa: E402
from experiments.config import ConfigError, ExperimentConfig, load  # noqa: E402
from topo import priority  # noqa: E402
from topo.guard import SEND_LAG_FRAMES, frame_time_us  # noqa: E402

DEFAULT_TDFS = (100_000, 50_000, 20_000, 10_000, 5_000)


def schedstat(pid: int) -> tuple[int, int] | None:
    """(CPU ns, run-queue wait ns) of every thread of ``pid`` so far; None: gone."""
    cpu = wait = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
                a, b, _ = fh.read().split()
        except (OSError, ValueError):
            continue
        cpu, wait = cpu + int(a), wait + int(b)
    return cpu, wait


@dataclass
class Sched:
    """Per-process scheduler figures between two reads (shares of the wall time)."""

    t: float = field(default_factory=time.monotonic)
    before: dict[int, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def start(cls, pids: list[int]) -> Sched:
        return cls(before={p: s for p in pids if (s := schedstat(p)) is not None})

    def finish(self) -> dict[str, float]:
        """Mean and max over the processes of CPU and run-queue wait per wall second."""
        wall = max(time.monotonic() - self.t, 1e-9) * 1e9
        cpu, wait = [], []
        for pid, (c0, w0) in self.before.items():
            s = schedstat(pid)
            if s is not None:
                cpu.append((s[0] - c0) / wall)
                wait.append((s[1] - w0) / wall)
        if not cpu:
            return {}
        return {"cpu_mean": sum(cpu) / len(cpu), "cpu_max": max(cpu),
                "wait_mean": sum(wait) / len(wait), "wait_max": max(wait)}


def _with_target(cfg: ExperimentConfig, target: str) -> ExperimentConfig:
    return dataclasses.replace(cfg, parameters=dataclasses.replace(cfg.parameters,
                                                                   target=target))


@dataclass
class Run:
    """One probe run of the benchmark: what the guard said (fabric µs) and who had the CPU."""

    target: str
    tdf: float
    workload: str
    rep: int
    load1: float
    """The machine's 1-minute load average as the run started."""
    valid: bool
    valid_calibration: bool
    invalid_reason: str | None
    send_lag_p99_us: float | None
    ingress_lag_p99_us: float | None
    egress_delay_p99_us: float | None
    cct_us: float | None
    frames_switched: int
    wall_s: float
    agents: dict[str, float] = field(default_factory=dict)
    """Sched.finish() of the host agents' processes."""
    switches: dict[str, float] = field(default_factory=dict)


def run_target(cfg: ExperimentConfig, tdfs: list[float], reps: int, out: Path,
               log: Any = print) -> list[Run]:
    """Every workload of ``cfg`` ``reps`` times at each TDF on one fabric of its target."""
    from experiments.backends import MininetBackend

    assert cfg.fabric is not None
    pick = probe_scheme(cfg)
    emu0 = ramp_config(cfg, tdfs[0])
    be = MininetBackend(emu0, emu0.spec(), tdfs[0])
    rows: list[Run] = []
    try:
        be.up(emu0.schemes[pick])
        log(f"  fabric up ({cfg.parameters.target}, switches: {be.priority}, agents: "
            f"{_count(be.net.agents.applied.values())})")
        for tdf in tdfs:
            emu = ramp_config(cfg, tdf)
            be.tdf = tdf
            be.retune(emu)
            be.set_scheme(emu.schemes[pick])
            for wi, w in enumerate(cfg.workloads):
                hosts = cfg.hosts_of(w, cfg.spec())
                for n in range(reps):
                    agents = list(be.net.agents.pids().values())
                    switches = [p for sw in be.net.switches
                                if (p := getattr(sw, "proc_pid", None))]
                    sa, ss = Sched.start(agents), Sched.start(switches)
                    load = os.getloadavg()[0]
                    d = out / cfg.parameters.target / f"tdf{tdf:g}" / w.name / f"rep{n}"
                    r = probe_run(be, cfg, emu, wi, hosts, tdf, d, 1.0)
                    g = r.guard
                    run = Run(cfg.parameters.target, tdf, w.name, n, load, r.valid,
                              r.valid_calibration, r.invalid_reason,
                              g.send_lag_p99_us if g else None,
                              g.ingress_lag_p99_us if g else None,
                              g.egress_delay_p99_us if g else None, r.cct_us,
                              int(g.frames_switched or 0) if g else 0, r.wall_s,
                              sa.finish(), ss.finish())
                    rows.append(run)
                    log("  " + progress(run))
    finally:
        be.down()
    return rows


def _count(xs: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return out


def _us(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def progress(r: Run) -> str:
    a = r.agents
    return (f"{r.target} TDF {r.tdf:g} {r.workload} #{r.rep}: "
            + ("valid" if r.valid else f"INVALID ({r.invalid_reason})")
            + f"; send p99 {_us(r.send_lag_p99_us)} µs, ingress p99 "
            f"{_us(r.ingress_lag_p99_us)} µs (fabric), CCT {_us(r.cct_us)} µs; "
            f"agents cpu {a.get('cpu_mean', 0):.0%} wait {a.get('wait_mean', 0):.0%} "
            f"(max {a.get('wait_max', 0):.0%}); load {r.load1:.1f}, wall {r.wall_s} s")


def _worst(vals: list[float | None]) -> float | None:
    got = [v for v in vals if v is not None]
    return max(got) if got else None


def _mean(vals: list[float | None]) -> float | None:
    got = [v for v in vals if v is not None]
    return sum(got) / len(got) if got else None


def table(rows: list[Run], fabric_bps: float) -> str:
    """One line per target and TDF, the workloads side by side: valid (guard) / valid with
    calibration's margin, send lag p99 and ingress lag p99 (the worst repetition, fabric µs),
    the agents' run-queue wait per second and the load average."""
    workloads = list(dict.fromkeys(r.workload for r in rows))
    thr = SEND_LAG_FRAMES * frame_time_us(fabric_bps)
    head = f"{'target':<9} {'TDF':>7} {'Mb/s':>5} |"
    for w in workloads:
        head += f" {w[:14]:<14} valid  cal  send99 ingr99 wait |"
    lines = [f"fabric µs; send lag threshold {thr:.3g} µs (4 frame times); cal: valid "
             f"with thresholds x{HEADROOM:g} (make calibrate); wait: agents' run-queue "
             "share of wall time", head + " load"]
    keys = list(dict.fromkeys((r.target, r.tdf) for r in rows))
    for target, tdf in keys:
        mine = [r for r in rows if r.target == target and r.tdf == tdf]
        line = f"{target:<9} {tdf:>7g} {fabric_bps / tdf / 1e6:>5.3g} |"
        for w in workloads:
            ws = [r for r in mine if r.workload == w]
            if not ws:
                line += " " * 44 + "|"
                continue
            ok = sum(r.valid for r in ws)
            cal = sum(r.valid_calibration for r in ws)
            wait = _mean([r.agents.get("wait_mean") for r in ws])
            line += (f" {'':<14} {ok}/{len(ws):<3} {cal}/{len(ws):<2}"
                     f" {_us(_worst([r.send_lag_p99_us for r in ws])):>6} "
                     f"{_us(_worst([r.ingress_lag_p99_us for r in ws])):>6} "
                     f"{'-' if wait is None else f'{wait:.0%}':>4} |")
        load = _mean([r.load1 for r in mine])
        lines.append(line + f" {load:.1f}" if load is not None else line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/capacity.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", type=Path, default=ROOT / "experiments/configs/demo.yaml")
    p.add_argument("--targets", default="p4switch",
                   help="comma-separated switch targets (p4switch, ebpf, bmv2)")
    p.add_argument("--tdfs", default=",".join(str(t) for t in DEFAULT_TDFS),
                   help="comma-separated time-dilation factors")
    p.add_argument("--reps", type=int, default=2, help="runs per workload and TDF")
    p.add_argument("--workloads", default="", help="comma-separated names (default: all)")
    p.add_argument("--agents-normal", action="store_true",
                   help="leave the host agents under the normal scheduler (the old way)")
    p.add_argument("--switch-rt", type=int, default=None,
                   help="SCHED_RR priority of the switches (topo/priority.py's by default)")
    p.add_argument("--agent-rt", type=int, default=None,
                   help="SCHED_RR priority of the agents (topo/priority.py's by default)")
    p.add_argument("--out", type=Path, default=Path("results") / "capacity" /
                   time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    a = p.parse_args(argv)
    try:
        cfg = load(a.config)
        tdfs = [float(x) for x in a.tdfs.split(",") if x.strip()]
    except (ConfigError, ValueError) as e:
        p.error(str(e))
    if cfg.fabric is None:
        p.error(f"{a.config}: no fabric block (the benchmark needs a file in fabric units)")
    fabric_bps = cfg.fabric.link_bps
    if a.workloads:
        want = a.workloads.split(",")
        cfg = dataclasses.replace(cfg, workloads=tuple(w for w in cfg.workloads if w.name in want))
        if not cfg.workloads:
            p.error(f"no workload named {a.workloads} in {a.config}")
    if os.geteuid() != 0:
        print("capacity: needs root (Mininet); skipped")
        return 0
    if a.agents_normal:
        priority.AGENTS_LIKE_SWITCHES = False
    if a.switch_rt is not None:
        priority.RT_PRIORITY = a.switch_rt
    if a.agent_rt is not None:
        priority.AGENT_RT_PRIORITY = a.agent_rt
    rows: list[Run] = []
    t0 = time.time()
    print(f"capacity: {a.config.name}, TDFs {a.tdfs}, {a.reps} run(s) each; switches "
          f"SCHED_RR {priority.RT_PRIORITY}, agents "
          + (f"SCHED_RR {priority.AGENT_RT_PRIORITY}" if priority.AGENTS_LIKE_SWITCHES
             else "normal") + f"; load average {os.getloadavg()[0]:.1f}", flush=True)
    for target in a.targets.split(","):
        print(f"target {target}:", flush=True)
        try:
            rows += run_target(_with_target(cfg, target), tdfs, a.reps, a.out,
                               log=lambda s: print(s, flush=True))
        except Exception as e:  # noqa: BLE001 - one target failing leaves the others' rows
            print(f"  target {target} failed: {e}", flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "capacity.json").write_text(json.dumps([dataclasses.asdict(r) for r in rows],
                                                   indent=1))
    print()
    print(table(rows, fabric_bps))
    print(f"\n{len(rows)} runs in {time.time() - t0:.0f} s; rows in {a.out / 'capacity.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
