"""A soak of the emulated fabric at the calibrated rate: for ``--minutes`` of wall time, one
k=4 fabric (what ``make topo`` brings up) runs random collectives under random schemes while
links are cut and restored between them, and the fidelity guard judges every collective.

It answers "does the rate calibration picked hold for a long interactive session, not only
for the demo's 30 runs?": the printout is one line per collective (fabric µs, valid or why
not) and, at the end, how many were valid. Links are cut and restored between collectives
and announced to the controller (``notify``), so the runs meet a degraded fabric that the
controller knows about; a cut inside a collective counts its losses against the run (see
examples/link_failure.py).

    sudo .venv/bin/python bench/soak.py [--minutes 20] [--target auto] [--tdf auto] [--seed 1]

Needs root (Mininet) and holds the machine-wide fabric lock for the whole soak.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments.config import concrete_target  # noqa: E402
from model.schemes import SCHEMES  # noqa: E402
from model.targets import AUTO_TARGET, TARGET_NAMES  # noqa: E402
from topo.session import LOOPS_AUTO, FabricSession  # noqa: E402

# the demo's collectives and host settings (experiments/configs/demo.yaml), fabric units
COLLECTIVES: tuple[tuple[str, str, int], ...] = (   # schedule, size, window cap
    ("ring_allreduce", "720KB", 256), ("moe_alltoall", "96KB", 64),
    ("ring_allreduce", "256KB", 256))
HOSTS = [f"h{i}" for i in range(1, 17)]
CUT_EVERY = 4        # a link goes down before every 4th collective ...
CUT_FOR = 2          # ... and comes back after 2 collectives on the degraded fabric


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=20.0, help="wall time of the soak")
    ap.add_argument("--target", default="auto", help="p4switch, ebpf or auto (as make demo)")
    ap.add_argument("--tdf", default="auto", help="time dilation: auto (calibrated) or N")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--loops", default=None,
                    help="the controller's loops, comma-separated (default: the session's, "
                    "failure and reconcile); cuts are announced, so the failure loop is optional")
    ap.add_argument("--out", type=Path, default=Path("results/soak"))
    a = ap.parse_args(argv)
    if a.minutes <= 0:
        ap.error("--minutes must be > 0")
    if a.target not in (*TARGET_NAMES, AUTO_TARGET):
        ap.error(f"--target: {a.target!r} is not one of {', '.join((*TARGET_NAMES, AUTO_TARGET))}")
    try:
        tdf: float | str = a.tdf if a.tdf == "auto" else float(a.tdf)
    except ValueError:
        ap.error(f"--tdf: expected auto or a number, got {a.tdf!r}")
    target = concrete_target(a.target, print)
    rng = random.Random(a.seed)
    verdicts: Counter[str] = Counter()
    invalid: list[str] = []
    cuts = 0
    loads: list[float] = []
    loops = LOOPS_AUTO if a.loops is None else [x for x in a.loops.split(",") if x]
    with FabricSession(k=4, link_rate="100G", prop_delay_us=0.1, tdf=tdf, target=target,
                       scheme="ecmp", lock_timeout_s=900, loops=loops) as s:
        print("\n".join(s.describe()), flush=True)
        links = [(lk.a, lk.b) for lk in s.spec.links      # switch-to-switch links only
                 if lk.a in s.spec.switches and lk.b in s.spec.switches]
        down: tuple[str, str] | None = None
        down_left = 0
        end = time.monotonic() + a.minutes * 60
        i = 0
        while time.monotonic() < end:
            i += 1
            if down is None and links and i % CUT_EVERY == 0:
                down, down_left = rng.choice(links), CUT_FOR
                s.cut(*down, notify=True)
                cuts += 1
            scheme = rng.choice(sorted(SCHEMES))
            s.set_scheme(scheme)
            schedule, size, window = rng.choice(COLLECTIVES)
            hosts = rng.sample(HOSTS, 8)
            run = s.collective(schedule, size, hosts, seed=i, rto_ms=0.02, linger_rtos=3,
                               window=window, out_dir=a.out / f"{i:04d}")
            verdict = "valid" if run.valid else "INVALID: " + "; ".join(run.reasons)
            verdicts["valid" if run.valid else "invalid"] += 1
            cut = f", link {down[0]}-{down[1]} down" if down else ""
            cct = f"{run.cct_us:.1f} µs" if run.cct_us is not None else "no CCT"
            if not run.valid:
                invalid.append(f"[{i}] {schedule} {size} {scheme}: " + "; ".join(run.reasons))
            loads.append(os.getloadavg()[0])
            g = run.guard
            lag = "" if g is None or g.send_lag_p99_us is None else \
                f", send lag p99 {g.send_lag_p99_us:.3f} µs"
            loops = s.ctl.loops
            probe = "" if loops is None else \
                f", probe timeout {loops.round_timeout()} periods"
            print(f"[{i:3d}] {schedule} {size} {scheme:7s}{cut}: {cct}, "
                  f"retx {run.retransmissions}{lag}{probe}, load {loads[-1]:.1f}; {verdict}",
                  flush=True)
            if down is not None:
                down_left -= 1
                if down_left == 0:
                    s.restore(*down, notify=True)
                    down = None
    n = sum(verdicts.values())
    print(f"soak: {n} collectives in {a.minutes:g} min at TDF {s.tdf:g} on {target}: "
          f"{verdicts['valid']} valid, {verdicts['invalid']} invalid; {cuts} link cuts; "
          f"load average (1 min) {min(loads, default=0):.1f}-{max(loads, default=0):.1f}, "
          f"mean {sum(loads) / max(1, len(loads)):.1f}")
    for line in invalid:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
