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

from . import metrics, plots

TABLES = ("ccts", "flows", "links", "queues", "ideal", "runs")


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


def summary_table(r: Results) -> pd.DataFrame:
    """One row per (workload, scheme): CCT stats, slowdown, ratio to the best scheme, and the
    fabric-side explanations (uplink imbalance, deepest queue, drops, retransmissions,
    reordering)."""
    t = metrics.scheme_table(r.ccts, r.ideal if not r.ideal.empty else None)
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
            {c: "max" if c == "qdepth_max" else _sum_or_nan
             for c in ("qdepth_max", "drops", "retransmissions", "reordered")
             if c in r.runs}).reset_index()
        t = t.merge(agg, on=keys, how="left")
    return t


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
    files: list[Path] = []
    files += plots.cct_bars(table, out / "cct")
    if not r.flows.empty:
        files += plots.fct_cdf(metrics.fct_table(r.flows), out / "fct_cdf")
    spec = _spec(r)
    workloads = list(dict.fromkeys(r.ccts["workload"])) if not r.ccts.empty else []
    if spec is not None and not r.links.empty:
        util = metrics.link_utilisation(r.links, spec)
        for w in workloads:
            files += plots.uplink_heatmap(util, w, out / f"uplinks_{w}")
    if not r.queues.empty:
        for w in workloads:
            files += plots.queue_depth(r.queues, w, out / f"queues_{w}")
    return files


# ---- rendering --------------------------------------------------------------------------------
COLUMNS = [("workload", "workload", "{}"), ("scheme", "scheme", "{}"),
           ("mean", "CCT ms", "ms"), ("std", "±", "ms"), ("p50", "p50", "ms"),
           ("p99", "p99", "ms"), ("vs_best", "vs best", "{:.2f}x"),
           ("slowdown", "vs ideal", "{:.2f}x"), ("imbalance", "uplink max/mean", "{:.2f}"),
           ("qdepth_max", "max queue", "{:.0f}"), ("drops", "drops", "{:.0f}"),
           ("retransmissions", "retx", "{:.0f}"), ("reordered", "reordered", "{:.0f}"),
           ("n", "runs", "{}"), ("failed", "failed", "{}")]


def _fmt(v: Any, spec: str) -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "–"
    if spec == "ms":
        return f"{float(v) * 1e3:.1f}"
    return spec.format(v)


def rows(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    cols = [c for c in COLUMNS if c[0] in table.columns]
    return ([c[1] for c in cols],
            [[_fmt(rec[c[0]], c[2]) for c in cols] for rec in table.to_dict("records")])


def rich_table(table: pd.DataFrame, title: str = "") -> Table:
    head, body = rows(table)
    t = Table(title=title)
    for i, h in enumerate(head):
        t.add_column(h, justify="left" if i < 2 else "right")
    for row in body:
        t.add_row(*row)
    return t


def markdown_table(table: pd.DataFrame) -> str:
    head, body = rows(table)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def verdicts(table: pd.DataFrame) -> list[str]:
    """One sentence per workload: who won, by how much over the slowest and over ECMP."""
    out = []
    for w in metrics.winners(table).to_dict("records"):
        g = table[table["workload"] == w["workload"]].set_index("scheme")
        line = (f"**{w['workload']}**: {w['best']} wins ({w['best_s'] * 1e3:.1f} ms), "
                f"{w['speedup']:.2f}x faster than the slowest, {w['worst']} "
                f"({w['worst_s'] * 1e3:.1f} ms)")
        if "ecmp" in g.index and w["best"] != "ecmp" and pd.notna(g.loc["ecmp", "mean"]):
            line += f"; ECMP is {g.loc['ecmp', 'mean'] / w['best_s']:.2f}x the winner's CCT"
        failed = [str(s) for s, n in g["failed"].items() if n] if "failed" in g else []
        if failed:
            line += f"; did not complete: {', '.join(failed)}"
        out.append(line + ".")
    return out


def write_report(root: str | Path) -> tuple[Path, Path, pd.DataFrame]:
    """Build figures, report.md and report.html in ``root``; return their paths and the
    summary table."""
    r = load_results(root)
    table = summary_table(r)
    if not table.empty:
        table.to_csv(r.root / "table.csv", index=False)
    figs = [p for p in figures(r, table, r.root / "plots") if p.suffix == ".png"]
    cfg = r.meta.get("config", {})
    title = f"Experiment {cfg.get('name', r.root.parent.name)} — {r.root.name}"
    md = [f"# {title}", ""]
    if cfg.get("description"):
        md += [str(cfg["description"]).strip(), ""]
    topo = cfg.get("topology", {})
    md += [f"Topology: {topo}; backend {r.meta.get('backend', cfg.get('backend', '?'))}; "
           f"repetitions {cfg.get('repetitions', 1)}; git {r.meta.get('versions', {}).get('git', '?')}.",
           ""]
    if r.meta.get("interrupted"):
        md += [f"**Incomplete run**: {r.meta['interrupted']}. The tables hold what was "
               "measured before it stopped.", ""]
    md += ["## Summary", ""]
    md += [markdown_table(table) if not table.empty else "No collective completed.", ""]
    md += [f"- {v}" for v in verdicts(table)] if not table.empty else []
    bsp = bsp_table(r)
    if not bsp.empty:
        md += ["", "## BSP iterations (compute + collective, wall time)", "",
               "| " + " | ".join(bsp.columns) + " |", "|" + "---|" * len(bsp.columns)]
        md += ["| " + " | ".join(str(v) for v in rec) + " |"
               for rec in bsp.itertuples(index=False)]
    md += ["", "CCT: the job's collectives summed, per repetition (first rank's start to last "
           "rank's finish of each). *vs ideal*: CCT over the larger of the bisection bound and "
           "the per-host NIC bound. *uplink max/mean*: bytes on the busiest uplink of a tier "
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
    a = p.parse_args(argv)
    if not (a.results / "experiment.json").exists():
        p.error(f"{a.results}: not an experiment results directory (no experiment.json)")
    md, page, table = write_report(a.results)
    console = Console()
    if console.width < 150:
        console = Console(width=150)   # the table's 15 columns, also when piped
    console.print(rich_table(table, title=str(a.results)))
    print(f"wrote {md} and {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
