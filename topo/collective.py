"""Run a collective from ``traffic/`` across the fabric's hosts and collect its metrics.

Every participating host's agent (topo.agents: started at the fabric's first collective, kept
until the fabric stops) is handed traffic.run's arguments (one rank per host, block placement
in the order given) with the same ``--start-at``; the agents' own READY barrier then starts the
job together, so the margin only has to cover one round trip to the agents. Each writes its
per-rank JSON and flows CSV to ``<out_dir>/<host>`` and sends the ranks' metrics back over its
control socket; the result merges them. An agent that died or hung is an error of the result.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from traffic.metrics import RankMetrics


@dataclass
class CollectiveResult:
    """``cct_s``: job-wide completion time (last rank's finish - first rank's start, the CCT
    of docs/traffic.md); ``rank_cct_s``: each rank's own; ``ok``: every rank completed."""

    schedule: str
    size: str
    hosts: list[str]
    out_dir: Path
    ok: bool
    cct_s: float | None
    rank_cct_s: dict[int, float] = field(default_factory=dict)
    metrics: dict[int, RankMetrics] = field(default_factory=dict)
    flows: pd.DataFrame = field(default_factory=pd.DataFrame)
    returncodes: dict[str, int | None] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if self.cct_s is None:
            return (f"{self.schedule} {self.size} on {len(self.hosts)} hosts: FAILED "
                    f"({'; '.join(self.errors[:3]) or 'no metrics'}); logs in {self.out_dir}")
        state = "ok" if self.ok else "INCOMPLETE"
        retx = sum(m.totals().retransmissions for m in self.metrics.values())
        return (f"{self.schedule} {self.size} on {len(self.hosts)} hosts: CCT "
                f"{self.cct_s * 1e3:.2f} ms ({state}; {retx} retransmissions; {self.out_dir})")


def _traffic_args(extra: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for k, v in extra.items():
        flag = "--" + k.replace("_", "-")
        if v is True:
            out.append(flag)
        elif v is not None and v is not False:
            out += [flag, str(v)]
    return out


def run_collective(net, schedule: str = "ring_allreduce", size: str = "64KB",
                   hosts: list[str] | None = None, timeout: float = 60.0,
                   out_dir: str | Path | None = None, start_margin: float = 1.0,
                   **traffic_run_args: Any) -> CollectiveResult:
    """Run ``schedule`` (a traffic generator name or a schedule file) over ``hosts`` (default
    all, spec order) of a started FabricNet. Extra keyword arguments become traffic.run flags
    (``rate="200M"`` -> ``--rate 200M``)."""
    spec = net.spec
    names = list(hosts or spec.hosts)
    unknown = [h for h in names if h not in spec.hosts]
    if unknown:
        raise ValueError(f"unknown host(s): {', '.join(unknown)}")
    if len(names) < 2:
        raise ValueError("a collective needs at least 2 hosts")
    out = Path(out_dir) if out_dir else net.run_dir / f"collective-{schedule}-{time.time():.0f}"
    out.mkdir(parents=True, exist_ok=True)
    host_list = ",".join(spec.hosts[h].ip for h in names)  # rank i on names[i] (block)
    start_at = time.time() + start_margin
    base = ["--schedule", schedule,
            "--ranks", str(len(names)), "--size", str(size), "--hosts", host_list,
            "--placement", "block", "--start-at", f"{start_at:.3f}",
            "--timeout", str(timeout), *_traffic_args(traffic_run_args)]
    argv = {h: [*base, "--out", str(out / h)] for h in names}
    replies = net.agents.run(argv, timeout + start_margin + 30)
    for h, r in replies.items():
        (out / f"{h}.log").write_text(r.log + (f"agent: {r.error}\n" if r.error else ""))
    return collect(schedule, str(size), names, out, {h: r.rc for h, r in replies.items()},
                   agent_errors={h: r.error for h, r in replies.items() if r.error},
                   ranks={rk: m for r in replies.values() for rk, m in r.ranks.items()})


def collect(schedule: str, size: str, hosts: list[str], out: Path,
            returncodes: dict[str, int | None], agent_errors: dict[str, str] | None = None,
            ranks: dict[int, RankMetrics] | None = None) -> CollectiveResult:
    """Merge one run's per-host results: the ranks' metrics as the agents sent them back
    (``ranks``; else each host's rank<r>.json), the flows from the hosts' CSVs, and what
    went wrong (``agent_errors``: an agent that died or did not answer)."""
    metrics: dict[int, RankMetrics] = dict(ranks or {})
    frames = []
    errors = [f"{h}: {e}" for h, e in (agent_errors or {}).items()]
    for h in hosts:
        d = out / h
        if ranks is None:
            for jp in sorted(d.glob("rank*.json")):
                try:
                    m = RankMetrics.from_json(json.loads(jp.read_text()), str(jp))
                except ValueError as e:   # a RecordError, or not JSON
                    errors.append(f"{h}: {e}")
                    continue
                metrics[m.rank] = m
        for cp in sorted(d.glob("rank*_flows.csv")):
            df = pd.read_csv(cp)
            df.insert(0, "rank", int(cp.stem.removeprefix("rank").removesuffix("_flows")))
            df.insert(1, "host", h)
            frames.append(df)
        if returncodes.get(h) not in (0, None) and not list(d.glob("rank*.json")):
            tail = (out / f"{h}.log").read_text(errors="replace").strip().splitlines()[-1:]
            errors.append(f"{h}: exit {returncodes[h]}: {' '.join(tail)}")
    errors += [f"rank {r} ({m.host}): {m.error}" for r, m in sorted(metrics.items())
               if m.error]
    colls = [c for m in metrics.values() for c in m.collectives]
    cct = (max(c.finish for c in colls) - min(c.start for c in colls)) if colls else None
    rank_cct = {r: sum(c.cct for c in m.collectives) for r, m in metrics.items()}
    ok = (len(metrics) == len(hosts) and all(m.completed for m in metrics.values())
          and all(rc == 0 for rc in returncodes.values()))
    return CollectiveResult(schedule=schedule, size=size, hosts=hosts, out_dir=out, ok=ok,
                            cct_s=cct, rank_cct_s=rank_cct, metrics=metrics,
                            flows=pd.concat(frames, ignore_index=True) if frames else
                            pd.DataFrame(), returncodes=returncodes, errors=errors)
