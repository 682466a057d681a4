"""The experiment's figures (matplotlib, Agg backend: no display needed), each as PNG and SVG.

One function per figure, each taking the tidy tables of experiments.metrics and an output path
stem; they return the files written (nothing when there is no data to draw, so a partial run
still gets the figures it can support).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .metrics import cdf, time_unit  # noqa: E402

FORMATS = ("png", "svg")


def _save(fig: plt.Figure, stem: Path) -> list[Path]:
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for fmt in FORMATS:
        p = stem.with_suffix(f".{fmt}")
        fig.savefig(p, dpi=110, bbox_inches="tight")
        out.append(p)
    plt.close(fig)
    return out


def _grid(n: int, width: float = 5.0, height: float = 3.4) -> tuple[plt.Figure, list]:
    cols = min(n, 2)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False,
                             layout="constrained")
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def cct_bars(table: pd.DataFrame, stem: Path) -> list[Path]:
    """Mean job CCT per scheme with 95 % confidence intervals (Student t over repetitions;
    none with one repetition), one panel per workload, in the table's time unit; the dashed
    line is the topology's ideal bound."""
    if table.empty or table["mean"].isna().all():
        return []
    unit, scale = time_unit(table)
    err = table["ci95"] if "ci95" in table else table["std"]
    workloads = list(dict.fromkeys(table["workload"]))
    fig, axes = _grid(len(workloads))
    for ax, w in zip(axes, workloads, strict=True):
        g = table[table["workload"] == w]
        x = np.arange(len(g))
        ax.bar(x, g["mean"] * scale, yerr=err[g.index].fillna(0) * scale, capsize=4,
               color=plt.cm.tab10(x % 10))
        ax.set_xticks(x, g["scheme"], rotation=20, ha="right")
        ax.set_ylabel(f"CCT ({unit})")
        ax.set_title(w)
        if "ideal_s" in g and g["ideal_s"].notna().any():
            ax.axhline(float(g["ideal_s"].iloc[0]) * scale, ls="--", color="k", lw=1,
                       label="ideal bound")
            ax.legend(loc="lower right", fontsize=8)
    fig.suptitle("Collective completion time per scheme (mean ± 95 % CI over repetitions)")
    return _save(fig, stem)


def fct_cdf(flows: pd.DataFrame, stem: Path) -> list[Path]:
    """CDF of flow completion times per scheme, one panel per workload."""
    if flows.empty or "fct" not in flows:
        return []
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
    return _save(fig, stem)


def uplink_heatmap(util: pd.DataFrame, workload: str, stem: Path) -> list[Path]:
    """Utilisation of every uplink (rows) over time (columns), one panel per scheme: hashing
    shows hot rows next to idle ones, spraying an even band."""
    u = util[(util["workload"] == workload) & util["uplink"]] if not util.empty else util
    if u.empty:
        return []
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
    return _save(fig, stem)


def queue_depth(queues: pd.DataFrame, workload: str, stem: Path) -> list[Path]:
    """The deepest egress queue of the fabric at each sample, per scheme."""
    q = queues[queues["workload"] == workload] if not queues.empty else queues
    if q.empty:
        return []
    fig, ax = plt.subplots(figsize=(6, 3.4), layout="constrained")
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
    return _save(fig, stem)
