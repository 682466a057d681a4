"""`make calibrate`: the smallest time-dilation factor at which this machine keeps a fabric
link-bound, found by a short ramp judged by the fidelity guard, and cached.

The ramp brings the experiment's fabric up once and runs its first workload (under a spraying
scheme if the file has one: the most packets per second through the most switches) at
emulated link rates from fast to slow — TDF = fabric rate / emulated rate — until a run is
complete and valid with a margin (topo/guard.py with every threshold halved: nothing
dropped or queued where P4 cannot see it, hosts able to pace) and link-bound: its CCT in
fabric units within ``INVARIANCE`` of the next slower rate's (which is run to check). A
rate that would be chosen is probed twice and judged by the worse probe (``worse``).
That TDF is cached per machine, topology, target and fabric rate in
``~/.cache/p4fabric/calibration.json`` (topo/calibration.py) and used by every experiment with
``tdf: auto``
(``make demo``); ``--force`` measures again (after the machine's load changed).

    sudo .venv/bin/python -m experiments.calibrate experiments/configs/demo.yaml
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

from common.jsontypes import JsonObject, JsonValue
from model.dilation import dilate
from model.schemes import scheme_class
from model.targets import Target
from topo import calibration
from topo.calibration import CalibrationEntry
from topo.guard import GuardRow
from topo.owner import give_back

from . import metrics
from .config import ConfigError, ExperimentConfig, concrete_target, load, with_target

RAMP_MBPS = (8.0, 4.0, 2.0, 1.0, 0.5)
"""Emulated link rates tried, fastest first (each step halves the rate: doubles the TDF), on
the Python switch target: its switches cost 200-400 µs of CPU per frame and hop
(bench/capacity.py), so the demo's ring needs 8-16 CPU-s on 20 switches and is CPU-bound
beyond ~4 Mb/s on 2 cores whatever the hosts do; faster probes would only cost time."""
KERNEL_RAMP_MBPS = (40.0, 20.0, 10.0, 5.0, 2.0, 1.0, 0.5)
"""The ramp of a target whose data plane runs in the kernel (ebpf): no switch process per
frame, the hosts' agents are what limits it. bench/capacity.py on the 2-core machine (load
average 15-21, agents at real-time priority): valid with calibration's margin at 10 Mb/s (send
lag p99 0.04-0.16 fabric µs against 0.24), at 20 only just (0.20-0.33), and at 50 the hosts
cannot pace (0.6-1.3 µs); two ``make calibrate TARGET=ebpf`` runs picked TDF 10,000 and
5,000."""
HEADROOM = 0.5
"""A rate is accepted only if its probe run is valid with every guard threshold halved
(guard.judge's ``headroom``): one probe is one sample of a noisy machine, and the experiment's
runs at that rate must stay valid, not only the probe."""
INVARIANCE = 0.07
"""A valid rate is link-bound, not CPU-bound, when its probe's CCT in fabric units is within
7 % of the next slower rate's: time dilation must not change fabric-unit results. (A machine
that cannot keep up stretches the CCT before the guard's lag figures cross their thresholds:
on a loaded machine the demo's ring took 2-3x its ideal bound with every run valid.) Measured
on the quiet 2-core machine, demo.yaml's ring probe: TDF 100,000 against 200,000 1.01x, 1.02x
(two fresh clones), 1.03x and 1.04x (f9ada03, 0777b53); 50,000 against 100,000 1.20x, 1.31x,
1.117x — and 1.097x at 0777b53 from a fresh clone (the agents no longer spin while blocked),
which the old 10 % accepted: that demo ran at TDF 50,000 and 8 of its 30 runs were invalid
(hosts cannot pace: send lag p99 24-29 ms > 23.5 ms), its rotate ring had no valid run. 7 %
keeps ~3 % on either side of what was seen."""
CANDIDATE_PROBES = 2
"""Probes of a candidate rate (the fastest valid one so far), judged by the worst: one probe
is one sample. A fresh clone at a347bbd took TDF 50,000 on one probe (141.9 µs, 1.047x
the 135.5 µs at 100,000) and its demo's ring runs at 50,000 then took 148.8-160.4 µs
(1.10-1.18x the simulator's), one of them invalid (send lag); the same day's other clone's
probe at 50,000 was invalid and its demo at 100,000 ran 1.01-1.02x the simulator's."""
PROBE_TIMEOUT_S = 40.0
"""Wall-clock bound on one probe run: a run that needs longer is overloaded anyway."""


def cache_key(cfg: ExperimentConfig) -> str:
    t = cfg.topology
    link = cfg.fabric.link_rate if cfg.fabric else f"{t.bw_mbps}M"
    return calibration.cache_key(
        calibration.topology_key(t.kind, t.k, t.leaves, t.spines, t.hosts_per_leaf,
                                 t.uplinks), cfg.parameters.target, link)


def cached(cfg: ExperimentConfig) -> CalibrationEntry | None:
    return calibration.entry(cache_key(cfg))


class CalibrationError(RuntimeError):
    """No rate of the ramp completed a run: there is no TDF to run the experiment at."""


@dataclass
class ProbeRow:
    """One probe of the ramp at ``tdf`` (or the worse of a rate's probes, :func:`worse`): did
    it complete, the guard's verdict with calibration's margin (``valid``; the ramp may
    overrule it: "not link-bound") and with the runs' own thresholds where they differ
    (``valid_calibration``), its CCT in fabric µs and the guard's figures. The cache and
    bench/capacity.py keep it as :meth:`to_dict` (runs.csv's columns)."""

    tdf: float
    emulated_mbps: float | None = None
    completed: bool = False
    wall_s: float = 0.0
    valid: bool = False
    invalid_reason: str | None = None
    valid_calibration: bool = False
    cct_us: float | None = None
    probe_cct_us: list[float | None] | None = None
    """Every probe's CCT when this row merges several (:func:`worse`)."""
    guard: GuardRow | None = None
    """The guard's figures (its verdict is ``valid``/``invalid_reason``: the ramp may
    overrule it)."""

    def to_dict(self) -> JsonObject:
        d: JsonObject = {"tdf": self.tdf, "emulated_mbps": self.emulated_mbps,
                         "completed": self.completed, "wall_s": self.wall_s,
                         "valid": self.valid, "invalid_reason": self.invalid_reason,
                         **(self.guard.figures() if self.guard else {}),
                         "valid_calibration": self.valid_calibration, "cct_us": self.cct_us}
        if self.probe_cct_us is None:
            return d
        probes: list[JsonValue] = list(self.probe_cct_us)
        return {**d, "probe_cct_us": probes}


@dataclass
class Calibration:
    tdf: float | None
    """The smallest valid TDF of the ramp (None: not even the slowest rate was valid)."""
    ramp: list[ProbeRow] = field(default_factory=list)


def ramp_rates(target: str) -> tuple[float, ...]:
    """The emulated link rates calibration tries on switch target ``target``."""
    return KERNEL_RAMP_MBPS if target == Target.EBPF else RAMP_MBPS


def ramp_tdfs(fabric_bps: float, rates_mbps: tuple[float, ...] = RAMP_MBPS) -> list[float]:
    """The ramp's TDFs for links of ``fabric_bps``, fastest rate first (the runner steps back
    along the same list: experiments/stepback.py)."""
    return [fabric_bps / (r * 1e6) for r in sorted(rates_mbps, reverse=True)]


def ramp_config(cfg: ExperimentConfig, tdf: float) -> ExperimentConfig:
    """``cfg`` as a probe runs it at ``tdf``: dilated, without control loops (a probe measures
    the data path; the loops' periods are the experiment's business)."""
    emu = dilate(cfg, tdf)
    return dataclasses.replace(emu, parameters=dataclasses.replace(emu.parameters, loops=()))


def probe_scheme(cfg: ExperimentConfig) -> int:
    """Index of the scheme the probes run: the first that sprays (the most packets per
    second through the most switches), else the first."""
    return next((i for i, s in enumerate(cfg.schemes) if scheme_class(s.name).sprays), 0)


def ramp_backend(cfg: ExperimentConfig, rates_mbps: tuple[float, ...] | None = None) -> Any:
    """A Mininet backend for the ramp (not yet up), at its first (fastest) rate: pass it to
    :func:`run_ramp` (or :func:`calibrated_tdf`) and the experiment can go on running on the
    same fabric afterwards (MininetBackend.adopt) instead of starting another."""
    from .backends import MininetBackend

    if cfg.fabric is None:
        raise ConfigError("fabric", "calibration needs a file in fabric units (a fabric block)")
    rates = rates_mbps or ramp_rates(cfg.parameters.target)
    emu0 = ramp_config(cfg, cfg.fabric.link_bps / (max(rates) * 1e6))
    return MininetBackend(emu0, emu0.spec())


def run_ramp(cfg: ExperimentConfig, rates_mbps: tuple[float, ...] | None = None,
             out: Path | None = None, log: Any = print, backend: Any = None) -> Calibration:
    """The ramp on the Mininet fabric (root): one fabric, one probe run per rate. With
    ``backend`` (from :func:`ramp_backend`, up or not) the ramp runs on it and leaves it up;
    otherwise it brings its own fabric up and down."""
    if cfg.fabric is None:
        raise ConfigError("fabric", "calibration needs a file in fabric units (a fabric block)")
    rates_mbps = rates_mbps or ramp_rates(cfg.parameters.target)
    tdfs = ramp_tdfs(cfg.fabric.link_bps, rates_mbps)
    pick = probe_scheme(cfg)
    hosts = cfg.hosts_of(cfg.workloads[0], cfg.spec())
    out = out or Path("results") / "calibration" / time.strftime("%Y%m%dT%H%M%SZ",
                                                                  time.gmtime())
    be = backend if backend is not None else ramp_backend(cfg, rates_mbps)
    result = Calibration(None)
    decision = RampDecision()
    try:
        if be.net is None:
            be.up(be.cfg.schemes[pick])

        for tdf in tdfs:
            emu = ramp_config(cfg, tdf)
            be.tdf = tdf
            be.retune(emu)
            be.set_scheme(emu.schemes[pick])
            row = probe_run(be, cfg, emu, 0, hosts, tdf, out / f"tdf{tdf:g}", log=log)
            result.ramp.append(row)
            for line in decision.add(row):
                log("  " + line)
            n = 1
            while decision.candidate is row and n < CANDIDATE_PROBES:
                row = decision.repeat(probe_run(be, cfg, emu, 0, hosts, tdf,
                                                out / f"tdf{tdf:g}" / f"probe{n}", log=log,
                                                n=n))
                result.ramp[-1] = row
                n += 1
            if decision.done:
                break
        result.tdf = decision.choice()
    finally:
        if backend is None:
            be.down()
        if out.exists():   # under sudo: the invoking user's, like the experiment's results
            give_back(out, upto=Path("results") if out.is_relative_to("results") else None)
    return result


def probe_run(be: Any, cfg: ExperimentConfig, emu: ExperimentConfig, wi: int,
              hosts: list[str], tdf: float, d: Path, headroom: float = HEADROOM,
              log: Any = None, n: int = 0) -> ProbeRow:
    """One probe: workload ``wi`` of ``cfg`` run once on ``be`` (up, retuned to ``tdf``;
    ``emu``: ``cfg`` dilated by it) into ``d``, judged by the guard with ``headroom``
    (``valid_calibration``: with the ramp's ``HEADROOM``), and said with ``log`` (``n``: the
    probe's number at this rate, 0 the first). The ramp's unit, and bench/capacity.py's (so
    the two agree)."""
    from .runs import load_ranks, merge_ranks, verdict

    w = cfg.workloads[wi]
    w_emu = dataclasses.replace(emu.workloads[wi], timeout_s=min(w.timeout_s, PROBE_TIMEOUT_S))
    sched = w_emu.schedule_for(len(hosts), seed=cfg.parameters.seed)
    t0 = time.time()
    samples = be.run(sched, hosts, w_emu, d)
    ranks = load_ranks(d / "traffic")
    summ = merge_ranks(ranks, sched.ranks)
    guard = verdict(samples, cfg.spec(), w, tdf, ranks, headroom=headroom)
    ok = summ.completed
    fabric_bps = cfg.fabric.link_bps if cfg.fabric else 0.0
    cct = metrics.job_cct(summ.collectives) if ok else None
    valid = guard.valid and ok
    row = ProbeRow(tdf, fabric_bps / tdf / 1e6, ok, round(time.time() - t0, 2), valid,
                   guard.invalid_reason if ok else "; ".join(
                       x for x in ("did not complete", guard.invalid_reason) if x),
                   valid if headroom == HEADROOM else
                   ok and verdict(samples, cfg.spec(), w, tdf, ranks, headroom=HEADROOM).valid,
                   None if cct is None else cct / tdf * 1e6, guard=guard)
    if log is not None:
        log(f"  TDF {tdf:g} ({row.emulated_mbps:g} Mb/s)"
            + (f", probe {n + 1}" if n else "") + ": "
            + (f"valid with thresholds x{headroom:g}" if row.valid
               else f"invalid (thresholds x{headroom:g}): {row.invalid_reason}")
            + (f", CCT {row.cct_us:.1f} fabric µs" if row.cct_us else "")
            + f" (wall {row.wall_s} s)")
    return row


def link_bound(fast: ProbeRow, slow: ProbeRow) -> bool:
    """The faster probe's fabric-unit CCT is within ``INVARIANCE`` of the slower one's."""
    a, b = fast.cct_us, slow.cct_us
    return bool(a and b and slow.completed and a <= (1 + INVARIANCE) * b)


def worse(a: ProbeRow, b: ProbeRow) -> ProbeRow:
    """Probes ``a`` (one, or already merged) and ``b`` of one rate as one row, judged by the
    worse: valid only if both are, the longest CCT (None unless every probe completed), the
    guard figures and reason of ``b`` if it failed and ``a`` did not (else ``a``'s); every
    probe's CCT in ``probe_cct_us``."""
    probes = [*(a.probe_cct_us if a.probe_cct_us is not None else [a.cct_us]), b.cct_us]
    base = b if a.valid and not b.valid else a
    cct = max(c for c in probes if c is not None) if all(c is not None for c in probes) \
        else None
    return dataclasses.replace(base, valid=a.valid and b.valid,
                               completed=a.completed and b.completed, cct_us=cct,
                               probe_cct_us=probes, wall_s=round(a.wall_s + b.wall_s, 2))


@dataclass
class RampDecision:
    """The ramp's choice, fed its probe rows fastest first (pure: tested on hand-made rows).
    The first valid rate is a candidate; the next slower probe confirms it (link-bound) or
    marks it invalid ("not link-bound") and, if valid itself, becomes the next candidate."""

    candidate: ProbeRow | None = None
    chosen: float | None = None
    done: bool = False
    seen: list[ProbeRow] = field(default_factory=list)

    def add(self, row: ProbeRow) -> list[str]:
        """Take one probe row (may mark the previous candidate invalid); what to log."""
        out = []
        self.seen.append(row)
        c = self.candidate
        if c is not None:
            self.candidate = None
            if not row.completed:   # no evidence either way: the candidate stands
                self.chosen, self.done = c.tdf, True
                return [f"TDF {c.tdf:g}: the slower probe did not complete, nothing to "
                        "compare its CCT with; taken"]
            if link_bound(c, row):
                self.chosen, self.done = c.tdf, True
                return [f"TDF {c.tdf:g} is link-bound: CCT {c.cct_us or 0:.1f} µs vs "
                        f"{row.cct_us or 0:.1f} µs at TDF {row.tdf:g}"]
            c.valid = False
            c.invalid_reason = (f"not link-bound: CCT {c.cct_us or 0:.1f} fabric µs > "
                                f"{1 + INVARIANCE:g}x the {row.cct_us or 0:.1f} µs at TDF "
                                f"{row.tdf:g}")
            out.append(f"TDF {c.tdf:g}: {c.invalid_reason}")
        if row.valid:
            self.candidate = row
        elif not row.completed and any(r.completed for r in self.seen[:-1]):
            self.done = True   # slower than a rate that completed and still not done
        return out

    def repeat(self, row: ProbeRow) -> ProbeRow:
        """Another probe of the candidate's rate: the candidate becomes the worse of the two
        (``worse``), and is dropped if that is invalid. Returns the merged row."""
        c = self.candidate
        assert c is not None and c.tdf == row.tdf, "repeat() is for the candidate"
        merged = worse(c, row)
        self.seen[next(i for i, r in enumerate(self.seen) if r is c)] = merged
        self.candidate = merged if merged.valid else None
        return merged

    def choice(self) -> float | None:
        """The chosen TDF; the slowest valid rate when nothing slower could confirm it."""
        if self.chosen is not None:
            return self.chosen
        return self.candidate.tdf if self.candidate is not None else None


def calibrated_tdf(cfg: ExperimentConfig, force: bool = False, log: Any = print,
                   backend: Any = None) -> float:
    """The cached TDF for this machine and fabric, measured first if there is none (on
    ``backend``'s fabric if given: see :func:`run_ramp`)."""
    entry = None if force else cached(cfg)
    if entry is None:
        log(f"calibrating {cache_key(cfg)} (cache: {calibration.cache_path()})")
        cal = run_ramp(cfg, log=log, backend=backend)
        valid = cal.tdf is not None
        tdf = cal.tdf
        if tdf is None:
            # nothing was valid (a loaded machine): fall back to the slowest rate whose run
            # completed, so experiments still run; the guard then marks their runs invalid
            done = [r for r in cal.ramp if r.completed]
            if not done:
                raise CalibrationError("calibration: no emulated rate down to "
                                   f"{min(ramp_rates(cfg.parameters.target))} Mb/s completed a run on this machine: "
                                   + ((cal.ramp[-1].invalid_reason or "?") if cal.ramp
                                      else "no run"))
            tdf = cal.tdf = max(r.tdf for r in done)
            log(f"calibration: no rate gave a valid run (last: {cal.ramp[-1].invalid_reason});"
                f" using TDF {tdf:g}, the slowest that completed: expect invalid runs")
        fabric = cfg.fabric
        assert fabric is not None, "run_ramp refuses a file without a fabric block"
        entry = CalibrationEntry(tdf, valid, fabric.link_rate, fabric.link_bps / tdf / 1e6,
                                 time.time(), os.getloadavg(), cfg.workloads[0].name,
                                 [r.to_dict() for r in cal.ramp])
        calibration.store(cache_key(cfg), entry)
    return entry.tdf


def step_back_cache(cfg: ExperimentConfig, from_tdf: float, to_tdf: float,
                    reason: str) -> CalibrationEntry | None:
    """The runner stepped the experiment back from ``from_tdf`` to ``to_tdf`` (its runs
    invalid for ``reason``): the cached entry takes the slower rate, so that the next
    experiment (the next ``make demo``) starts where this one could keep up instead of at the
    failing rate. Returns the new entry (None: nothing cached, or already as slow)."""
    entry = cached(cfg)
    if entry is None or entry.tdf >= to_tdf or cfg.fabric is None:
        return None
    new = dataclasses.replace(entry, tdf=to_tdf,
                              emulated_mbps=cfg.fabric.link_bps / to_tdf / 1e6,
                              stepped_back=f"TDF {from_tdf:g} -> {to_tdf:g}: {reason}")
    calibration.store(cache_key(cfg), new)
    return new


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.calibrate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", type=Path, help="experiment file in fabric units")
    p.add_argument("--force", action="store_true", help="measure again, ignore the cache")
    p.add_argument("--show", action="store_true", help="print the cached entry and exit")
    p.add_argument("--target", help="override the file's switch target (p4switch, bmv2, "
                   "ebpf; auto: ebpf where this machine can load it, else p4switch)")
    a = p.parse_args(argv)
    try:
        cfg = load(a.config)
        if a.target:
            cfg = with_target(cfg, concrete_target(a.target,
                                                   lambda m: print(m, file=sys.stderr)))
    except (ConfigError, ValueError) as e:
        p.error(str(e))
    if cfg.fabric is None:
        p.error(f"{a.config}: no fabric block: nothing to calibrate (the file is in the "
                "emulation's own units)")
    if a.show:
        entry = cached(cfg)
        print(json.dumps(entry.to_dict(), indent=1) if entry
              else f"nothing cached for {cache_key(cfg)}")
        return 0 if entry else 1
    if os.geteuid() != 0:
        print("experiments.calibrate: the ramp runs the Mininet fabric: run it as root "
              "(sudo make calibrate)", file=sys.stderr)
        return 2
    try:
        tdf = calibrated_tdf(cfg, force=a.force)
    except CalibrationError as e:
        print(f"experiments.calibrate: {e}", file=sys.stderr)
        return 1
    print(f"TDF {tdf:g}: {cfg.fabric.link_rate}b/s fabric links run at "
          f"{cfg.fabric.link_bps / tdf / 1e6:g} Mb/s here (cached in {calibration.cache_path()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
