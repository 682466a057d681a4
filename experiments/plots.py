"""The experiment's figures: one function per figure, each taking the tidy tables of
experiments.metrics and returning a matplotlib ``Figure`` (None when there is no data to draw,
so a partial run still gets the figures it can support). ``save`` writes one as PNG and SVG.

The figures are built on ``matplotlib.figure.Figure`` directly, not through pyplot: no display
and no backend is needed to draw or save them, nothing accumulates in pyplot's global state,
and a notebook shows a returned figure like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .metrics import cdf, time_unit

FORMATS = ("png", "svg")


def save(fig: Figure | None, stem: Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write ``fig`` as ``stem``.png and .svg (``formats``); returns the files written
    (none for no figure)."""
    if fig is None:
        return []
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for fmt in formats:
        p = stem.with_suffix(f".{fmt}")
        fig.savefig(p, dpi=110, bbox_inches="tight")
        out.append(p)
    return out


def _grid(n: int, width: float = 5.0, height: float = 3.4) -> tuple[Figure, list[Any]]:
    cols = min(n, 2)
    rows = -(-n // cols)
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def cct_bars(table: pd.DataFrame) -> Figure | None:
    """Mean job CCT per scheme with 95 % confidence intervals (Student t over repetitions;
    none with one repetition), one panel per workload, in the table's time unit; the dashed
    line is the topology's ideal bound."""
    if table.empty or table["mean"].isna().all():
        return None
    unit, scale = time_unit(table)
    err = table["ci95"] if "ci95" in table else table["std"]
    workloads = list(dict.fromkeys(table["workload"]))
    fig, axes = _grid(len(workloads))
    for ax, w in zip(axes, workloads, strict=True):
        g = table[table["workload"] == w]
        x = np.arange(len(g))
        ax.bar(x, g["mean"] * scale, yerr=err[g.index].fillna(0) * scale, capsize=4,
               color=matplotlib.colormaps["tab10"](x % 10))
        ax.set_xticks(x, g["scheme"], rotation=20, ha="right")
        ax.set_ylabel(f"CCT ({unit})")
        ax.set_title(w)
        if "ideal_s" in g and g["ideal_s"].notna().any():
            ax.axhline(float(g["ideal_s"].iloc[0]) * scale, ls="--", color="k", lw=1,
                       label="ideal bound")
            ax.legend(loc="lower right", fontsize=8)
    fig.suptitle("Collective completion time per scheme (mean ± 95 % CI over repetitions)")
    return fig


def fct_cdf(flows: pd.DataFrame) -> Figure | None:
    """CDF of flow completion times per scheme, one panel per workload."""
    if flows.empty or "fct" not in flows:
        return None
    workloads = list(dict.fromkeys(flows["workload"]))
    fig, axes = _grid(len(workloads))
    for ax, w in zip(axes, workloads, strict=True):
        g = flows[flows["workload"] == w]
        for scheme, gs in g.groupby("scheme", sort=False):
            x, y = cdf(gs["fct"] * 1e3)
            ax.step(x, y, where="post", label=str(scheme))
        ax.set_xlabel("FCT (ms)")
        ax.set_ylabel("fraction of flows")
        ax.set_title(w)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Flow completion time CDF")
    return fig


def uplink_heatmap(util: pd.DataFrame, workload: str) -> Figure | None:
    """Utilisation of every uplink (rows) over time (columns), one panel per scheme: hashing
    shows hot rows next to idle ones, spraying an even band."""
    u = util[(util["workload"] == workload) & util["uplink"]] if not util.empty else util
    if u.empty:
        return None
    schemes = list(dict.fromkeys(u["scheme"]))
    # one colour scale for every panel, up to the busiest link seen (a CPU-bound emulation may
    # never get near line rate; a fixed 0..1 scale would then show nothing)
    vmax = max(0.05, float(np.nanmax(u["util"].to_numpy(dtype=float))))
    fig, axes = _grid(len(schemes), width=5.5, height=4.0)
    im = None
    for ax, s in zip(axes, schemes, strict=True):
        g = u[u["scheme"] == s].copy()
        if "repetition" in g:
            g = g[g["repetition"] == g["repetition"].min()]
        g["link"] = g["src"] + "→" + g["dst"]
        g["t0"] = g["t"] - g["t"].min()
        piv = g.pivot_table(index="link", columns="t0", values="util", aggfunc="mean")
        piv = piv.reindex(sorted(piv.index, key=lambda n: (n.split("→")[0][:3] != "edg", n)))
        im = ax.imshow(piv.to_numpy(dtype=float), aspect="auto", vmin=0, vmax=vmax,
                       cmap="viridis", interpolation="nearest",
                       extent=(0, float(piv.columns.max()) if len(piv.columns) else 1,
                               len(piv.index), 0))
        ax.set_yticks(np.arange(len(piv.index)) + 0.5, piv.index, fontsize=5)
        ax.set_xlabel("time (s)")
        ax.set_title(str(s))
    if im is not None:
        fig.colorbar(im, ax=axes, label="utilisation (fraction of link rate)", shrink=0.8)
    fig.suptitle(f"{workload}: per-uplink utilisation over time")
    return fig


def queue_depth(queues: pd.DataFrame, workload: str) -> Figure | None:
    """The deepest egress queue of the fabric at each sample, per scheme."""
    q = queues[queues["workload"] == workload] if not queues.empty else queues
    if q.empty:
        return None
    fig = Figure(figsize=(6, 3.4), layout="constrained")
    ax = fig.subplots()
    for s, g in q.groupby("scheme", sort=False):
        if "repetition" in g:
            g = g[g["repetition"] == g["repetition"].min()]
        per_t = g.groupby("t")["qdepth_max"].max()
        ax.plot(per_t.index - per_t.index.min(), per_t.to_numpy(), marker=".", label=str(s))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("max queue depth (packets)")
    ax.set_title(f"{workload}: deepest egress queue over time")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def sweep_bars(df: pd.DataFrame) -> Figure | None:
    """A sweep's CCT by scheme (mean and spread over repetitions), one group per grid point x
    workload (``df``: a sweep's runs.csv, grid parameters in dotted columns)."""
    skip = {"scheme", "repetition", "task", "cct"}
    tag_cols = [c for c in df.columns if c in ("workload",) or c.count(".")]
    tag_cols = [c for c in tag_cols if c not in skip]
    d = df[df["cct"].notna()].copy() if "cct" in df else pd.DataFrame()
    if d.empty:
        return None
    d["point"] = d[tag_cols].astype(str).agg(" ".join, axis=1) if tag_cols else "all"
    stats = d.groupby(["point", "scheme"])["cct"].agg(["mean", "std"]).reset_index()
    points = list(dict.fromkeys(stats["point"]))
    schemes = list(dict.fromkeys(stats["scheme"]))
    unit, scale = ("µs", 1e6) if stats["mean"].max() < 1e-3 else ("ms", 1e3)
    width = 0.8 / max(1, len(schemes))
    fig = Figure(figsize=(max(6, 1.5 * len(points) * len(schemes) ** 0.5), 4),
                 layout="constrained")
    ax = fig.subplots()
    for i, s in enumerate(schemes):
        sub = stats[stats["scheme"] == s].set_index("point").reindex(points)
        ax.bar([p + i * width for p in range(len(points))], sub["mean"] * scale, width,
               yerr=sub["std"].fillna(0) * scale, label=s, capsize=2)
    ax.set_xticks([p + width * (len(schemes) - 1) / 2 for p in range(len(points))], points,
                  rotation=20, ha="right")
    ax.set_ylabel(f"CCT ({unit})")
    ax.legend(fontsize="small")
    return fig
