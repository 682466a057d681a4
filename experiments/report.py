"""Results directory -> summary table, figures, report.md and a self-contained report.html.

The runner stores only raw tables (results/<experiment>/<timestamp>/*.csv, see
docs/experiments.md); everything here is derived from them, so a report can be rebuilt from a
stored run (``python -m experiments.report DIR``) after the metrics or plots improve.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from model.schemes import BASELINE_SCHEME

from . import metrics, plots, stats
from .metrics import time_unit
from .stepback import StepBackLog, StepTaken

TABLES = ("ccts", "flows", "links", "queues", "ideal", "runs", "events")


@dataclass
class Results:
    """The raw tables of one experiment run (empty DataFrames where nothing was measured)."""

    root: Path
    meta: dict[str, Any]
    ccts: pd.DataFrame = field(default_factory=pd.DataFrame)
    flows: pd.DataFrame = field(default_factory=pd.DataFrame)
    links: pd.DataFrame = field(default_factory=pd.DataFrame)
    queues: pd.DataFrame = field(default_factory=pd.DataFrame)
    ideal: pd.DataFrame = field(default_factory=pd.DataFrame)
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    events: pd.DataFrame = field(default_factory=pd.DataFrame)


def load_results(root: str | Path) -> Results:
    root = Path(root)
    meta_p = root / "experiment.json"
    meta = json.loads(meta_p.read_text()) if meta_p.exists() else {}
    r = Results(root, meta)
    for name in TABLES:
        p = root / f"{name}.csv"
        if p.exists() and p.stat().st_size:
            try:
                setattr(r, name, pd.read_csv(p))
            except pd.errors.EmptyDataError:
                pass
    return r


def invalid_runs(r: Results) -> list[tuple[str, str, int]]:
    """(workload, scheme, repetition) of the runs the fidelity guard called invalid."""
    if r.runs.empty or "valid" not in r.runs:
        return []
    bad = r.runs[r.runs["valid"].astype(str).str.lower() == "false"]
    return sorted({(str(w), str(s), int(k)) for w, s, k in
                   zip(bad["workload"], bad["scheme"], bad["repetition"], strict=True)})


def summary_table(r: Results, include_invalid: bool = False) -> pd.DataFrame:
    """One row per (workload, scheme): CCT mean ± 95 % CI and rank group, slowdown, ratio to
    the best scheme, and the fabric-side explanations (uplink imbalance, deepest queue, drops,
    retransmissions, reordering). Runs the fidelity guard called invalid are left out (and
    counted) unless ``include_invalid``."""
    t = metrics.scheme_table(r.ccts, r.ideal if not r.ideal.empty else None,
                             invalid=() if include_invalid else invalid_runs(r))
    if t.empty:
        return t
    keys = ["workload", "scheme"]
    if not r.links.empty:
        spec = _spec(r)
        if spec is not None:
            util = metrics.link_utilisation(r.links, spec)
            tot = metrics.total_imbalance(util)
            if not tot.empty:
                imb = tot.groupby(keys)["imbalance"].max().rename("imbalance")
                t = t.merge(imb, on=keys, how="left")
    if not r.runs.empty:
        agg = r.runs.groupby(keys).agg(
            {c: "max" if c == "qdepth_max" else "mean" if c in _MEANS else _sum_or_nan
             for c in ("qdepth_max", "drops", "drops_p4_queue", "retransmissions",
                       "reordered", "spurious", "timeouts", "nacks", "trims", *_MEANS)
             if c in r.runs}).reset_index()
        t = t.merge(agg, on=keys, how="left")
    return t


_MEANS = ("ce_fraction", "mean_window", "mean_rate", "fct_tail_us", "fct_spread")
"""Transport columns averaged over a scheme's runs (not summed)."""


def _sum_or_nan(s: pd.Series) -> float:
    """A sum that stays NaN ("not measured", e.g. no switch counters on the simulator) instead
    of turning into a 0 that reads as "none"."""
    return s.sum(min_count=1)


def bsp_table(r: Results) -> pd.DataFrame:
    """BSP workloads: mean iteration wall time (compute + collective) per iteration index, one
    row per (workload, scheme): LB-BSP should shrink the later iterations."""
    if r.ccts.empty or "iteration" not in r.ccts or r.ccts["iteration"].isna().all():
        return pd.DataFrame()
    df = r.ccts.dropna(subset=["iteration"])
    piv = df.pivot_table(index=["workload", "scheme"], columns="iteration",
                         values="iteration_s", aggfunc="mean")
    piv.columns = [f"iter {int(c)} (ms)" for c in piv.columns]
    return (piv * 1e3).round(1).reset_index()


def _spec(r: Results) -> Any:
    topo = r.meta.get("config", {}).get("topology")
    if not topo:
        return None
    from .config import _topology
    return _topology(topo).spec()


def figures(r: Results, table: pd.DataFrame, out: Path) -> list[Path]:
    """Draw every figure the tables support and save each under ``out`` (plots.save)."""
    files: list[Path] = []
    files += plots.save(plots.cct_bars(table), out / "cct")
    if not r.flows.empty:
        files += plots.save(plots.fct_cdf(metrics.fct_table(r.flows)), out / "fct_cdf")
    spec = _spec(r)
    workloads = list(dict.fromkeys(r.ccts["workload"])) if not r.ccts.empty else []
    if spec is not None and not r.links.empty:
        util = metrics.link_utilisation(r.links, spec)
        for w in workloads:
            files += plots.save(plots.uplink_heatmap(util, w), out / f"uplinks_{w}")
    if not r.queues.empty:
        for w in workloads:
            files += plots.save(plots.queue_depth(r.queues, w), out / f"queues_{w}")
    return files


# ---- rendering --------------------------------------------------------------------------------
COLUMNS = [("workload", "workload", "{}"), ("scheme", "scheme", "{}"),
           ("mean", "CCT {unit}", "time"), ("ci95", "± 95% CI", "time"),
           ("rank", "rank", "{:.0f}"), ("p50", "p50", "time"),
           ("vs_best", "vs best", "{:.2f}x"),
           ("slowdown", "vs ideal", "{:.2f}x"), ("vs_unloaded", "vs unloaded", "{:.2f}x"),
           ("imbalance", "uplink max/mean", "{:.2f}"),
           ("qdepth_max", "max queue", "{:.0f}"), ("drops", "drops", "{:.0f}"),
           ("drops_p4_queue", "queue drops", "{:.0f}"),
           ("fct_tail_us", "FCT tail µs", "{:.1f}"), ("fct_spread", "spread", "{:.2f}"),
           ("retransmissions", "retx", "{:.0f}"), ("spurious", "spurious", "{:.0f}"),
           ("timeouts", "RTOs", "{:.0f}"), ("nacks", "NACKs", "{:.0f}"),
           ("trims", "trims", "{:.0f}"),
           ("ce_fraction", "CE", "{:.1%}"), ("mean_window", "cwnd", "{:.1f}"),
           ("mean_rate", "rate/line", "{:.2f}"), ("reordered", "reordered", "{:.0f}"),
           ("n", "runs", "{}"), ("invalid", "invalid", "{}"), ("failed", "failed", "{}")]
"""The summary's columns: (table column, header, format); ``time`` columns are printed in
the unit that suits the table (µs for a 100 Gb/s fabric, ms or s for slower ones)."""


def _fmt(v: Any, spec: str, scale: float = 1e3) -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "–"
    if spec == "time":
        x = float(v) * scale
        return f"{x:.1f}" if abs(x) >= 10 or x == 0 else f"{x:.2f}"
    return spec.format(v)


TERMINAL = ("workload", "scheme", "mean", "ci95", "rank", "vs_best", "slowdown", "qdepth_max",
            "drops", "retransmissions", "timeouts", "n", "invalid", "failed")
"""The columns a terminal shows (~150 characters wide): the rest is in report.md."""


def rows(table: pd.DataFrame, keys: tuple[str, ...] | None = None
         ) -> tuple[list[str], list[list[str]]]:
    """The summary's header and formatted rows (``keys``: only these columns)."""
    unit, scale = time_unit(table)
    cols = [c for c in COLUMNS if c[0] in table.columns and (keys is None or c[0] in keys)]
    return ([c[1].format(unit=unit) for c in cols],
            [[_fmt(rec[c[0]], c[2], scale) for c in cols] for rec in table.to_dict("records")])


def rich_table(table: pd.DataFrame, title: str = "") -> Table:
    """The summary for a terminal: its main columns, so that none is cut to an ellipsis."""
    head, body = rows(table, TERMINAL)
    t = Table(title=title, caption="every column: report.md")
    for i, h in enumerate(head):
        t.add_column(h, justify="left" if i < 2 else "right", no_wrap=i < 2)
    for row in body:
        t.add_row(*row)
    return t


def markdown_table(table: pd.DataFrame) -> str:
    head, body = rows(table)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def verdicts(table: pd.DataFrame) -> list[str]:
    """One sentence per workload: the fastest group (schemes whose 95 % intervals overlap, or
    whose means are within 5 %, are indistinguishable, experiments.stats), how much slower the
    slowest is, and the baseline scheme's (ECMP's) ratio to the fastest."""
    out = []
    unit, scale = time_unit(table)
    for w in metrics.winners(table).to_dict("records"):
        g = table[table["workload"] == w["workload"]].set_index("scheme")
        top = [str(s) for s in g.index[g["rank"] == 1]] if "rank" in g else [w["best"]]
        if len(top) > 1:
            lead = (f"{', '.join(top)} are indistinguishable at the top (95 % intervals "
                    f"overlap or means within 5 %; fastest mean {w['best']}, "
                    f"{w['best_s'] * scale:.1f} {unit})")
        elif "n" in g and g["n"].max() < 2:
            lead = (f"{w['best']} is fastest ({w['best_s'] * scale:.1f} {unit}; one "
                    "repetition: no interval, the order may be noise)")
        else:
            lead = f"{w['best']} wins ({w['best_s'] * scale:.1f} {unit})"
        line = (f"**{w['workload']}**: {lead}, {w['speedup']:.2f}x faster than the slowest, "
                f"{w['worst']} ({w['worst_s'] * scale:.1f} {unit})")
        base = BASELINE_SCHEME
        if base in g.index and w["best"] != base and pd.notna(g.loc[base, "mean"]):
            line += (f"; {base.upper()} is {g.loc[base, 'mean'] / w['best_s']:.2f}x the "
                     "fastest's CCT")
        failed = [str(s) for s, n in g["failed"].items() if n] if "failed" in g else []
        if failed:
            line += f"; did not complete: {', '.join(failed)}"
        if "ci95" in g and "n" in g:
            line += _robustness(g)
        out.append(line + ".")
    return out


def _robustness(g: pd.DataFrame) -> str:
    """How close the grouping is to coming out differently (experiments.stats.close_calls)."""
    ivs = [(str(s), stats.Interval(float(r["mean"]), float(r["ci95"]), int(r["n"])))
           for s, r in g.iterrows() if pd.notna(r["mean"]) and pd.notna(r["n"])]
    if sum(iv.n >= 2 for _, iv in ivs) < 2:
        return ""
    calls = stats.close_calls(ivs)
    among = "" if all(iv.n >= 2 for _, iv in ivs) else " among schemes with ≥ 2 runs"
    if not calls:
        return (f"; grouping robust{among} (every overlap decision ≥ {stats.FRAGILE_SE:g} "
                "standard errors from flipping)")
    c = calls[0]
    more = (f"~{c.repetitions} repetitions each would settle it" if c.repetitions
            else "their means are too close to separate: indistinguishable")
    rest = f", {len(calls) - 1} more close call(s)" if len(calls) > 1 else ""
    if c.unresolved:
        return (f"; grouping unresolved: {c.a} vs {c.b} overlap but their means differ by "
                f"{c.gap:.1%} (> {stats.EQUIVALENCE:.0%}: too few runs to call them equal; "
                f"{more})" + rest)
    return (f"; grouping fragile: {c.a} vs {c.b} is {c.margin_se:.1f} standard errors from "
            f"flipping ({more})" + rest)


FIDELITY_COLUMNS = [("workload", "workload", "{}"), ("scheme", "scheme", "{}"),
                    ("repetition", "rep", "{}"), ("valid", "valid", "{}"),
                    ("hidden_drops", "hidden drops", "{:.0f}"),
                    ("frames_switched", "frames", "{:.0f}"),
                    ("ingress_lag_p50_us", "ingress lag p50 µs", "{:.3g}"),
                    ("ingress_lag_p99_us", "p99 µs", "{:.3g}"),
                    ("egress_delay_p99_us", "P4 egress delay p99 µs", "{:.3g}"),
                    ("send_lag_p99_us", "send lag p99 µs", "{:.3g}"),
                    ("switch_cpu_max", "switch CPU max", "{:.0%}"),
                    ("machine_steal", "CPU steal", "{:.0%}"),
                    ("invalid_reason", "why invalid", "{}")]
STEP_COLUMNS = [("tdf", "TDF", "{:g}"), ("rerun_of", "re-run of rep", "{:.0f}")]
"""Columns the fidelity table adds when the runner stepped the TDF back (experiments/stepback)."""


def fidelity_section(r: Results) -> list[str]:
    """The guard's verdict per run (topo/guard.py), times in fabric µs."""
    if r.runs.empty or "valid" not in r.runs:
        return []
    runs = r.runs
    valid = runs["valid"].astype(str).str.lower() == "true"
    md = ["## Fidelity", "",
          f"{int(valid.sum())} of {len(runs)} runs valid (topo/guard.py: drops outside "
          "the P4 pipeline, ingress lag against the P4 egress delay, host pacing lag, switch "
          "CPU). Invalid runs are left out of the summary and the rankings "
          "(`python -m experiments.report DIR --include-invalid` keeps them).", ""]
    cols = [c for c in FIDELITY_COLUMNS if c[0] in runs.columns]
    if tdf_steps(r.meta):
        cols[4:4] = [c for c in STEP_COLUMNS if c[0] in runs.columns]
    md += ["| " + " | ".join(c[1] for c in cols) + " |", "|" + "---|" * len(cols)]
    for rec in runs.to_dict("records"):
        md.append("| " + " | ".join(_fmt(rec[c[0]], c[2]) for c in cols) + " |")
    return md + [""] + drop_sites_section(runs)


def drop_sites_section(runs: pd.DataFrame) -> list[str]:
    """Drops by site per run (topo/guard.py SITES): where every lost frame died, the
    P4 queues' tail drops (congestion, a result) apart from the hidden sites, and whether
    the data frames the agents lost are all among them (``uncounted`` 0)."""
    from topo.guard import FAULT_SITES, SITES

    sites = [k for k in SITES if f"drops_{k}" in runs.columns]
    if not sites:
        return []
    cols = [("workload", "workload", "{}"), ("scheme", "scheme", "{}"),
            ("repetition", "rep", "{}"),
            ("data_frames_sent", "data sent", "{:.0f}"),
            ("data_frames_arrived", "arrived", "{:.0f}"),
            *[(f"drops_{k}", k.replace("_", " ") + (" †" if k in FAULT_SITES else ""),
               "{:.0f}") for k in sites],
            ("data_frames_uncounted", "uncounted", "{:.0f}")]
    cols = [c for c in cols if c[0] in runs.columns]
    md = ["### Drops by site", "",
          "Every frame lost between two agents, by where it died (`runs.csv` `drops_<site>`, "
          "details in `drops_detail`): " + "; ".join(f"**{k.replace('_', ' ')}**: {v}"
                                                    for k, v in SITES.items() if k in sites)
          + ". † = a fidelity fault, hidden from the P4 program (counts against validity); the "
          "P4 sites are results. *uncounted*: data frames sent minus arrived beyond every drop counted "
          "(0: the accounting closes).", "", _drop_totals(runs, sites), "",
          "| " + " | ".join(c[1] for c in cols) + " |", "|" + "---|" * len(cols)]
    for rec in runs.to_dict("records"):
        md.append("| " + " | ".join(_fmt(rec[c[0]], c[2]) for c in cols) + " |")
    return md + [""]


def _drop_totals(runs: pd.DataFrame, sites: list[str]) -> str:
    """One line: each kind of drop summed over the runs, and in how many the account closed."""
    from topo.guard import FAULT_SITES, RESULT_SITES

    def total(keys: Any) -> int:
        return int(sum(runs[f"drops_{k}"].fillna(0).sum() for k in sites if k in keys))
    line = (f"Over {len(runs)} runs: {total({'p4_queue'})} P4 queue tail drops (congestion), "
            f"{total({'p4_pipeline'})} program drops, {total(FAULT_SITES)} hidden drops "
            f"(faults), {total(set(sites) - FAULT_SITES - RESULT_SITES)} for an agent not "
            "listening")
    if "data_frames_uncounted" in runs:
        u = runs["data_frames_uncounted"].dropna()
        line += f"; the account closed in {int((u == 0).sum())} of {len(u)} measured runs"
    return line + "."


def step_back_log(d: object) -> StepBackLog | None:
    """What the runner's step-back policy did (``d``: experiment.json's ``step_back``; None:
    no policy ran)."""
    return None if d is None else StepBackLog.from_dict(d)


def tdf_steps(meta: dict[str, Any]) -> list[StepTaken]:
    """The runner's steps back of the TDF (experiment.json ``step_back``), oldest first."""
    log = step_back_log(meta.get("step_back"))
    return [] if log is None else log.steps


def tdf_text(meta: dict[str, Any]) -> str:
    """The TDF, and every TDF it stepped back to ("50,000 → 100,000")."""
    return " → ".join(f"{t:g}" for t in [meta.get("tdf", 1.0),
                                          *(s.to_tdf for s in tdf_steps(meta))])


def step_back_lines(meta: dict[str, Any]) -> list[str]:
    """What the runner's step-back did (experiments/stepback.py), for the dilation section."""
    sb = step_back_log(meta.get("step_back"))
    if sb is None:
        return []
    md = []
    for s in sb.steps:
        again = ", ".join(f"{x.workload}/{x.scheme} rep {x.repetition} as rep {x.as_rep}"
                          for x in s.rerun)
        md.append(f"- after run {s.after_runs} ({s.workload} · {s.scheme} · rep "
                  f"{s.repetition}): TDF {s.from_tdf:g} → **{s.to_tdf:g}**, "
                  f"{s.reason}; ran again: {again or 'none'}")
    if md:
        md = [f"The runs turned invalid at the calibrated rate ({sb.invalid} of "
              f"{sb.window} repetitions for the machine's capacity), so the runner "
              "stepped the rate back along calibration's ramp for the rest of the experiment "
              "and ran the invalid repetitions again (experiments/stepback.py):", "", *md, ""]
    if sb.stuck:
        md += [f"Runs still turned invalid at TDF {tdf_text(meta).split(' → ')[-1]}, the "
               f"slowest rate of the ramp ({sb.stuck}): no further step.", ""]
    return md


def dilation_section(meta: dict[str, Any]) -> list[str]:
    """The fabric the experiment models and the factor the emulation ran it slowed by."""
    fabric, tdf = meta.get("fabric"), meta.get("tdf", 1.0)
    if not fabric:
        return []
    from model.dilation import format_rate, parse_rate
    link = parse_rate(fabric["link_rate"])
    md = ["## Fabric units and time dilation", "",
          f"Modelled fabric: {fabric['link_rate']}b/s links, {fabric['prop_delay_us']} µs "
          f"propagation delay, MTU {fabric['mtu']}, {fabric['queue_packets']}-packet egress "
          f"queues. Backend {meta.get('backend', '?')} at **TDF {tdf:g}**: links at "
          f"{format_rate(link / tdf)}b/s, every timer and period × {tdf:g}; every time in "
          "this report is in fabric units (measured ÷ TDF)."]
    emulated = meta.get("prop_delay_emulated_us")
    if tdf != 1 and emulated and meta.get("prop_delay_placement") == "hosts":
        md += [f"The receiving hosts add the propagation delay ({emulated:g} µs wall per link "
               "× the links of the path, traffic/delayline.py): the eBPF target's fabric "
               "cannot delay frames itself, so frames meet the queues on their path without "
               "it (`sim_prop_at_hosts: true` models the same placement)."]
    elif tdf != 1 and emulated:
        md += [f"The switches add each link's propagation delay themselves ({emulated:g} µs "
               "wall per link, p4switch `--port-delay`; a host's link is delayed on the switch "
               "side, twice towards the host), on top of their own per-hop latency."]
    elif tdf != 1:
        md += ["The emulation adds no propagation delay (no netem here): its per-hop latency "
               "is the switch processes' own."]
    dil = meta.get("dilated") or {}
    if dil and tdf != 1:
        md += ["", "| knob | fabric | emulated |", "|---|---|---|"]
        md += [f"| {k} | {v[0]} | {v[1]} |" for k, v in dil.items()]
    steps = step_back_lines(meta)
    return md + ([""] + steps if steps else [""])


def beside_table(emu: pd.DataFrame, sim: pd.DataFrame) -> pd.DataFrame:
    """Per workload and scheme: emulated and simulated mean CCT, their ratio, each side's
    rank group, and per workload whether the two rankings agree (stats.rankings_agree: no
    scheme pair that both sides tell apart ordered one way by one and the other way by the
    other)."""
    from .stats import rankings_agree

    cols = ["workload", "scheme", "mean", "ci95", "rank"]
    m = emu[cols].merge(sim[cols], on=["workload", "scheme"], suffixes=("_emu", "_sim"))
    m["ratio"] = m["mean_emu"] / m["mean_sim"]
    agree = rankings_agree(emu, sim)
    m["rankings_agree"] = m["workload"].map(agree)
    return m


def beside_section(r: Results, table: pd.DataFrame) -> list[str]:
    """Emulation beside simulation for the same file (the simulator's run in ``sim/``)."""
    sim_root = r.root / "sim"
    if table.empty or not (sim_root / "experiment.json").exists():
        return []
    sim = summary_table(load_results(sim_root))
    if sim.empty:
        return []
    b = beside_table(table, sim)
    unit, scale = time_unit(b.rename(columns={"mean_emu": "mean"}))
    md = ["## Emulation beside simulation", "",
          f"The same file on the simulator (TDF 1, `{sim_root.name}/`). CCT in {unit}.", "",
          "| workload | scheme | emulated | rank | simulated | rank | emulated/simulated |",
          "|---|---|---|---|---|---|---|"]
    for rec in b.to_dict("records"):
        md.append(f"| {rec['workload']} | {rec['scheme']} | "
                  f"{_fmt(rec['mean_emu'], 'time', scale)} ± "
                  f"{_fmt(rec['ci95_emu'], 'time', scale)} | {_fmt(rec['rank_emu'], '{:.0f}')}"
                  f" | {_fmt(rec['mean_sim'], 'time', scale)} | "
                  f"{_fmt(rec['rank_sim'], '{:.0f}')} | {_fmt(rec['ratio'], '{:.2f}')} |")
    md.append("")
    for w, g in b.groupby("workload", sort=False):
        same = bool(g["rankings_agree"].iloc[0])
        if g["rank_emu"].nunique() == 1 and len(g) > 1:
            line = (f"- **{w}**: the emulation tells no scheme from another (one group), so "
                    "it neither confirms nor contradicts the simulator's ranking")
        else:
            line = (f"- **{w}**: the two rankings agree (no pair of schemes that both tell "
                    "apart — disjoint intervals, means > 5 % apart — in opposite order)"
                    if same else
                    f"- **{w}**: the two rankings contradict (a pair of schemes both tell "
                    "apart is in opposite order)")
        base = BASELINE_SCHEME
        if base in set(g["scheme"]):
            e = g.set_index("scheme").loc[base]
            best_emu = g[g["scheme"] != base]["mean_emu"].min()
            best_sim = g[g["scheme"] != base]["mean_sim"].min()
            if pd.notna(best_emu) and pd.notna(best_sim):
                line += (f"; {base.upper()} over the best other scheme: emulated "
                         f"{e['mean_emu'] / best_emu:.2f}x, simulated "
                         f"{e['mean_sim'] / best_sim:.2f}x")
        md.append(line + ".")
    return md + [""]


def loops_section(r: Results) -> list[str]:
    """Which control loops ran on this side (and on the simulator's, ``sim/``), and how many
    weight changes and reroutes they made (experiments.loop_report)."""
    from .loop_report import loops_section as section

    sim_root = r.root / "sim"
    sim = None
    if (sim_root / "experiment.json").exists():
        s = load_results(sim_root)
        sim = (s.meta, s.runs, s.events)
    return section(r.meta, r.runs, r.events, sim)


def write_report(root: str | Path, include_invalid: bool = False) \
        -> tuple[Path, Path, pd.DataFrame]:
    """Build figures, report.md and report.html in ``root``; return their paths and the
    summary table."""
    r = load_results(root)
    table = summary_table(r, include_invalid)
    if not table.empty:
        table.to_csv(r.root / "table.csv", index=False)
    figs = [p for p in figures(r, table, r.root / "plots") if p.suffix == ".png"]
    cfg = r.meta.get("config", {})
    title = f"Experiment {cfg.get('name', r.root.parent.name)} — {r.root.name}"
    md = [f"# {title}", ""]
    if cfg.get("description"):
        md += [str(cfg["description"]).strip(), ""]
    topo = cfg.get("topology", {})
    backend = r.meta.get('backend', cfg.get('backend', '?'))
    target = (f", switches on the {cfg.get('parameters', {}).get('target', 'p4switch')} target"
              if backend == "mininet" else "")
    md += [f"Topology: {topo}; backend {backend}{target}; "
           f"repetitions {cfg.get('repetitions', 1)}; TDF {tdf_text(r.meta)}; "
           f"git {r.meta.get('versions', {}).get('git', '?')}.",
           ""]
    if r.meta.get("interrupted"):
        md += [f"**Incomplete run**: {r.meta['interrupted']}. The tables hold what was "
               "measured before it stopped.", ""]
    from .eta import AdaptiveLog, adaptive_text
    d = r.meta.get("adaptive")
    if line := adaptive_text(AdaptiveLog.from_dict(d) if d else None):
        md += [line[0].upper() + line[1:] + ".", ""]
    md += dilation_section(r.meta)
    md += ["## Summary", ""]
    md += [markdown_table(table) if not table.empty else
           "No collective completed (or no valid run).", ""]
    if not include_invalid and not r.ccts.empty:
        shown = set(table["workload"]) if not table.empty else set()
        hidden = [w for w in dict.fromkeys(r.ccts["workload"]) if w not in shown]
        if hidden:
            md += [f"No valid run of {', '.join(hidden)}: every run of it was invalid (see "
                   "Fidelity); `python -m experiments.report DIR --include-invalid` ranks "
                   "them anyway.", ""]
    if include_invalid and invalid_runs(r):
        md += [f"**Includes {len(invalid_runs(r))} runs the fidelity guard called invalid** "
               "(--include-invalid).", ""]
    md += [f"- {v}" for v in verdicts(table)] if not table.empty else []
    md += [""] + beside_section(r, table)
    md += loops_section(r)
    md += fidelity_section(r)
    bsp = bsp_table(r)
    if not bsp.empty:
        md += ["", "## BSP iterations (compute + collective, wall time)", "",
               "| " + " | ".join(bsp.columns) + " |", "|" + "---|" * len(bsp.columns)]
        md += ["| " + " | ".join(str(v) for v in rec) + " |"
               for rec in bsp.itertuples(index=False)]
    md += ["", "CCT: the job's collectives summed, per repetition (first rank's start to last "
           "rank's finish of each; the progress line shows the same number). *± 95% CI*: "
           "half-width of the Student-t interval of the mean over repetitions. *rank*: "
           "schemes whose intervals overlap the group leader's, or whose means are within "
           "5 % of it, share a rank (indistinguishable). *vs ideal*: CCT over the larger of the bisection bound and "
           "the per-host NIC bound (wire time only). *vs unloaded*: CCT over the schedule's "
           "critical path on an idle, perfectly balanced fabric (each wait of a step for a "
           "chunk or an ACK pays the path's propagation and store-and-forward latency; "
           "experiments.critical_path), or the wire-time bound where that is larger. *uplink max/mean*: bytes on the busiest uplink of a tier "
           "over the tier's mean, whole run (1.00 = perfectly even).", "", "## Figures", ""]
    md += [f"![{p.stem}](plots/{p.name})" for p in figs]
    md_path = r.root / "report.md"
    md_path.write_text("\n".join(md) + "\n")
    html_path = r.root / "report.html"
    html_path.write_text(_html(title, md, figs))
    return md_path, html_path, table


def _html(title: str, md: list[str], figs: list[Path]) -> str:
    """A self-contained page: the same text, the table as HTML, the PNGs inlined as base64."""
    body = []
    for line in md:
        if line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("| "):
            cells = [c.strip() for c in line.strip("|").split("|")]
            tag = "th" if not body or not body[-1].startswith("<tr") else "td"
            body.append("<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells)
                        + "</tr>")
        elif line.startswith("|---"):
            continue
        elif line.startswith("!["):
            continue
        elif line:
            text = html.escape(line.removeprefix("- ")).replace("**", "")
            body.append(f"<p>{text}</p>")
    for p in figs:
        data = base64.b64encode(p.read_bytes()).decode()
        body.append(f'<figure><img alt="{p.stem}" src="data:image/png;base64,{data}">'
                    f"<figcaption>{p.stem}</figcaption></figure>")
    out, in_table = [], False
    for b in body:
        if b.startswith("<tr") and not in_table:
            out.append("<table>")
            in_table = True
        if not b.startswith("<tr") and in_table:
            out.append("</table>")
            in_table = False
        out.append(b)
    if in_table:
        out.append("</table>")
    style = ("body{font-family:sans-serif;max-width:70em;margin:auto}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
             "text-align:right}img{max-width:100%}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{style}</style></head><body>\n" + "\n".join(out)
            + "\n</body></html>\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.report",
                                description="Rebuild the table, figures and report of a stored "
                                "experiment run.")
    p.add_argument("results", type=Path, help="results/<experiment>/<timestamp> directory")
    p.add_argument("--include-invalid", action="store_true",
                   help="keep the runs the fidelity guard called invalid in the summary")
    p.add_argument("--against", type=Path, metavar="OTHER",
                   help="another run of the same experiment: say per workload whether the two "
                   "group the schemes the same way (same groups, same order)")
    a = p.parse_args(argv)
    for d in (a.results, a.against):
        if d is not None and not (d / "experiment.json").exists():
            p.error(f"{d}: not an experiment results directory (no experiment.json)")
    md, page, table = write_report(a.results, a.include_invalid)
    console = Console()
    if console.width < 150:
        console = Console(width=150)   # the table's 15 columns, also when piped
    console.print(rich_table(table, title=str(a.results)))
    print(f"wrote {md} and {page}")
    if a.against is not None:
        other = summary_table(load_results(a.against), a.include_invalid)
        agree = stats.rankings_agree(table, other)
        for w, same in stats.same_grouping(table, other).items():
            verdict = "same grouping" if same else "DIFFERENT grouping"
            if not same:   # finer or coarser, or contradicting: which one matters
                verdict += (" (no contradiction: one run leaves together what the other "
                            "separates)" if agree[w] else " (CONTRADICTING: two schemes in "
                            "opposite order)")
            print(f"{w}: {verdict} as {a.against} "
                  f"({_groups_text(table, w)} vs {_groups_text(other, w)})")
    return 0


def _groups_text(table: pd.DataFrame, workload: str) -> str:
    g = table[table["workload"] == workload].sort_values("rank")
    return " < ".join("{" + ", ".join(map(str, x["scheme"])) + "}"
                      for _, x in g.groupby("rank", sort=True))


if __name__ == "__main__":
    sys.exit(main())
