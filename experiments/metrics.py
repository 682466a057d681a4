"""Experiment metrics: pure functions from the runner's raw tables to the numbers a paper shows.

No I/O and no clock: the runner stores raw samples (host records, counter/queue/link reads with
their sample time), and these functions turn them into CCT statistics, slowdown against an ideal
bound computed from the topology, per-uplink utilisation and imbalance over time, queue depths,
drops, retransmissions and reordering. Keeping them pure lets the same code read a stored run
again (``python -m experiments.report``) and lets the tests check them on synthetic data.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import pandas as pd

from model.spec import FabricSpec
from traffic.metrics import CollectiveTime
from traffic.schedules import Schedule

from .critical_path import Framing, critical_path

FRAME_HEADER_BYTES = 14 + 20 + 8 + 28
"""Ethernet + IPv4 + UDP + CollectiveHeader in front of every data packet's payload
(traffic/frames.py); the wire bytes the ideal bound and the counter cross-check account for."""
ACK_FRAME_BYTES = FRAME_HEADER_BYTES + 16
"""An ACK: the same headers plus CollectiveAck (cum, base, 64-bit SACK)."""
UPLINK_TIERS = {("edge", "agg"), ("agg", "core"), ("leaf", "spine")}
"""Switch-role pairs whose direction is "up": the links a load-balancing group spreads over."""


# ---- collective completion time --------------------------------------------------------------
def quantile_stats(values: pd.Series) -> dict[str, float]:
    v = values.dropna().astype(float)
    if v.empty:
        return {"n": 0, "mean": math.nan, "std": math.nan, "p50": math.nan, "p99": math.nan,
                "min": math.nan, "max": math.nan}
    return {"n": int(v.size), "mean": float(v.mean()), "std": float(v.std(ddof=0)),
            "p50": float(v.quantile(0.5)), "p99": float(v.quantile(0.99)),
            "min": float(v.min()), "max": float(v.max())}


def cct_stats(ccts: pd.DataFrame, by: Sequence[str] = ("workload", "scheme", "name"),
              value: str = "cct") -> pd.DataFrame:
    """Mean, std, p50, p99 of CCT over repetitions (and iterations when ``by`` omits them).

    ``ccts``: one row per (workload, scheme, repetition, collective) with the CCT in seconds;
    rows whose collective did not complete (``ok`` False) are left out and counted in
    ``failed`` so that a timeout cannot masquerade as a fast run.
    """
    by = [c for c in by if c in ccts.columns]
    rows = []
    for key, g in ccts.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        ok = g["ok"].astype(bool) if "ok" in g else pd.Series(True, index=g.index)
        rows.append({**dict(zip(by, key, strict=True)), **quantile_stats(g.loc[ok, value]),
                     "failed": int((~ok).sum())})
    return pd.DataFrame(rows)


def job_cct(collectives: Sequence[CollectiveTime]) -> float | None:
    """THE CCT of a job (one definition for the progress line, the table and the plots): its
    collectives' completion times summed, each from the first rank's start to the last rank's
    finish (compute phases between collectives excluded). None: nothing completed."""
    if not collectives:
        return None
    return float(sum(c.finish - c.start for c in collectives))


def scheme_table(ccts: pd.DataFrame, ideal: pd.DataFrame | None = None,
                 invalid: Iterable[tuple[str, str, int]] = ()) -> pd.DataFrame:
    """The summary table: per workload and scheme, the job's CCT (sum over its collectives per
    repetition), its mean ± 95 % t-interval (``ci95``, the half-width) over repetitions, the
    slowdown vs the ideal bound (``slowdown``: wire time only) and vs the unloaded bound
    (``vs_unloaded``: the schedule's waits on an idle fabric too), the ratio to the best
    scheme of that workload (1.00 = the fastest) and ``rank``: groups of schemes whose intervals overlap (or means are within
    5 %) share a rank (experiments.stats). Repetitions listed in ``invalid`` ((workload, scheme, repetition):
    the fidelity guard's verdict) are left out and counted in ``invalid``."""
    from .stats import rank_table, t_interval

    if ccts.empty:
        return pd.DataFrame()
    keys = ["workload", "scheme", "repetition"]
    ok = ccts.groupby(keys, sort=False)["ok"].all()
    job = ccts.groupby(keys, sort=False)["cct"].sum()   # = job_cct of each repetition
    df = pd.DataFrame({"cct": job, "ok": ok}).reset_index()
    bad = {(str(w), str(s), int(r)) for w, s, r in invalid}
    dropped = pd.Series([(str(w), str(s), int(r)) in bad for w, s, r in
                         zip(df["workload"], df["scheme"], df["repetition"], strict=True)],
                        index=df.index, dtype=bool)
    n_invalid = df[dropped].groupby(["workload", "scheme"]).size()
    df = df[~dropped]
    if df.empty:
        return pd.DataFrame()
    t = cct_stats(df, by=("workload", "scheme"))
    t["ci95"] = [t_interval(df.loc[(df["workload"] == w) & (df["scheme"] == s)
                                   & df["ok"].astype(bool), "cct"]).half
                 for w, s in zip(t["workload"], t["scheme"], strict=True)]
    t["invalid"] = [int(n_invalid.get((w, s), 0))
                    for w, s in zip(t["workload"], t["scheme"], strict=True)]
    if ideal is not None and not ideal.empty:
        per_w = ideal.groupby("workload")["ideal_s"].sum()
        t["ideal_s"] = t["workload"].map(per_w)
        t["slowdown"] = t["mean"] / t["ideal_s"]
        if "unloaded_s" in ideal:    # runs stored before the bound existed have none
            per_w = ideal.groupby("workload")["unloaded_s"].sum()
            t["unloaded_s"] = t["workload"].map(per_w)
            t["vs_unloaded"] = t["mean"] / t["unloaded_s"]
    best = t.groupby("workload")["mean"].transform("min")
    t["vs_best"] = t["mean"] / best
    return rank_table(t)


def winners(table: pd.DataFrame) -> pd.DataFrame:
    """Per workload: the fastest scheme, the slowest, and how much faster the winner is."""
    rows = []
    for w, g in table.dropna(subset=["mean"]).groupby("workload", sort=False):
        g = g.sort_values("mean")
        best, worst = g.iloc[0], g.iloc[-1]
        rows.append({"workload": w, "best": best["scheme"], "best_s": best["mean"],
                     "worst": worst["scheme"], "worst_s": worst["mean"],
                     "speedup": worst["mean"] / best["mean"] if best["mean"] else math.nan})
    return pd.DataFrame(rows)


# ---- ideal bounds from the topology -----------------------------------------------------------
def bisection(spec: FabricSpec) -> tuple[frozenset[str], frozenset[str]]:
    """The two host halves: first half of the hosts in position order (fat-tree: pods
    0..k/2-1) vs the rest — the cut the fat-tree's full-bisection claim is about."""
    hosts = sorted(spec.hosts, key=lambda h: spec.hosts[h].index)
    half = len(hosts) // 2
    return frozenset(hosts[:half]), frozenset(hosts[half:])


def cut_capacity_bps(spec: FabricSpec, a: Iterable[str], b: Iterable[str]) -> float:
    """Max flow (bits/s, one direction) from host set ``a`` to host set ``b`` with every link
    at its ``bw_mbps``: the bisection bandwidth when a, b are the bisection halves."""
    g = nx.DiGraph()
    for lk in spec.links:
        cap = (lk.bw_mbps or math.inf) * 1e6
        for u, v in ((lk.a, lk.b), (lk.b, lk.a)):
            prev = g.get_edge_data(u, v, {"capacity": 0.0})["capacity"]
            g.add_edge(u, v, capacity=prev + cap)
    for h in a:
        g.add_edge("_src", h)          # no capacity attribute = infinite
    for h in b:
        g.add_edge(h, "_dst")
    return float(nx.maximum_flow_value(g, "_src", "_dst"))


@functools.cache
def framing(mss: int = 1400) -> Framing:
    """How this project's transport frames a message (traffic/frames.py); one per ``mss``."""
    return Framing(mss, FRAME_HEADER_BYTES, ACK_FRAME_BYTES)


def wire_bytes(payload: int, mss: int = 1400) -> int:
    """Bytes on the wire for a ``payload``-byte message: one frame header per packet."""
    return framing(mss).wire_bytes(payload)


@dataclass(slots=True)
class _Load:
    """One collective's wire bytes across the bisection (each way) and per host (sent,
    received), for :func:`ideal_bounds`."""

    ab: int = 0
    ba: int = 0
    sent: dict[str, int] = field(default_factory=dict)
    recv: dict[str, int] = field(default_factory=dict)


def ideal_bounds(spec: FabricSpec, schedule: Schedule, hosts: Sequence[str],
                 mss: int = 1400, prop_delay_s: float = 0.0) -> pd.DataFrame:
    """Per collective, lower bounds on its CCT that no load balancing can beat.

    bisection_bound_s: wire bytes crossing the bisection in the busier direction / the
    bisection bandwidth; nic_bound_s: the busiest host's wire bytes sent or received / its link
    rate; ideal_s: the larger of the two (the bandwidth bound: wire time only). path_bound_s:
    the longest chain of the schedule's step dependencies on an idle fabric, each wait paying
    the path's store-and-forward latency and ``prop_delay_s`` per link
    (experiments.critical_path); unloaded_s: the larger of ideal_s and path_bound_s — the CCT
    an idle, perfectly balanced fabric and a line-rate transport would give at best, as an
    unloaded FCT normalises a flow's. ``hosts[r]`` is rank r's host name. Sends between
    ranks on one host never touch the network and are left out.
    """
    paths = critical_path(spec, schedule, hosts, framing(mss), prop_delay_s)
    half_a, _ = bisection(spec)
    cap_ab = cut_capacity_bps(spec, *bisection(spec))
    cap_ba = cut_capacity_bps(spec, *reversed(bisection(spec)))
    nic_bps = {h.name: (lk.bw_mbps or math.inf) * 1e6
               for h in spec.hosts.values() for lk in spec.node_links(h.name)}
    names = {c.id: c.name for c in schedule.collectives}
    acc: dict[int, _Load] = {}
    for r, prog in enumerate(schedule.programs):
        for st in prog:
            c = acc.setdefault(st.collective, _Load())
            for s in st.sends:
                src, dst = hosts[r], hosts[s.dst]
                if src == dst:
                    continue
                wb = wire_bytes(s.bytes, mss)
                c.sent[src] = c.sent.get(src, 0) + wb
                c.recv[dst] = c.recv.get(dst, 0) + wb
                if (src in half_a) != (dst in half_a):
                    if src in half_a:
                        c.ab += wb
                    else:
                        c.ba += wb
    rows = []
    for cid in sorted(acc):
        c = acc[cid]
        bis = max(c.ab * 8 / cap_ab, c.ba * 8 / cap_ba)
        nic = max([b * 8 / nic_bps[h] for h, b in (*c.sent.items(), *c.recv.items())],
                  default=0.0)
        path = paths.get(cid, 0.0)
        rows.append({"collective": cid, "name": names.get(cid, ""),
                     "bisection_bytes": max(c.ab, c.ba), "bisection_bps": cap_ab,
                     "bisection_bound_s": bis, "nic_bound_s": nic, "ideal_s": max(bis, nic),
                     "path_bound_s": path, "unloaded_s": max(bis, nic, path)})
    return pd.DataFrame(rows)


# ---- links: utilisation and imbalance --------------------------------------------------------
def tier_of(spec: FabricSpec, src: str, dst: str) -> str:
    """``edge->agg`` etc. from the switch roles (``host`` for a host end)."""
    def role(n: str) -> str:
        return spec.switches[n].role if n in spec.switches else "host"
    return f"{role(src)}->{role(dst)}"


def is_uplink(spec: FabricSpec, src: str, dst: str) -> bool:
    rs = spec.switches[src].role if src in spec.switches else "host"
    rd = spec.switches[dst].role if dst in spec.switches else "host"
    return (rs, rd) in UPLINK_TIERS


def link_utilisation(samples: pd.DataFrame, spec: FabricSpec) -> pd.DataFrame:
    """Per link direction and sampling interval: bytes sent, rate and utilisation.

    ``samples``: successive ``ctl.read_links()`` results stacked with a ``t`` column (seconds)
    and any grouping columns (scheme, workload, repetition). Counters only grow, so the
    interval's bytes are differences of consecutive samples; a counter that went backwards (a
    restarted switch) counts from zero.
    """
    if samples.empty:
        return pd.DataFrame(columns=["t", "src", "dst", "tier", "uplink", "bytes", "bps",
                                     "util"])
    keys = [c for c in ("workload", "scheme", "repetition") if c in samples.columns]
    df = samples.sort_values([*keys, "src", "src_port", "dst", "t"]).copy()
    grp = df.groupby([*keys, "src", "src_port", "dst"], sort=False)
    df["bytes"] = grp["tx_bytes"].diff()
    df["dt"] = grp["t"].diff()
    df.loc[df["bytes"] < 0, "bytes"] = df["tx_bytes"]
    df = df.dropna(subset=["bytes", "dt"])
    df = df[df["dt"] > 0]
    bw = {(lk.a, lk.b): lk.bw_mbps for lk in spec.switch_links()}
    bw.update({(b, a): v for (a, b), v in list(bw.items())})
    df["bps"] = df["bytes"] * 8 / df["dt"]
    cap = df.apply(lambda r: (bw.get((r["src"], r["dst"])) or math.nan) * 1e6, axis=1)
    df["util"] = df["bps"] / cap
    df["tier"] = [tier_of(spec, s, d) for s, d in zip(df["src"], df["dst"], strict=True)]
    df["uplink"] = [is_uplink(spec, s, d) for s, d in zip(df["src"], df["dst"], strict=True)]
    return df.drop(columns=["dt"]).reset_index(drop=True)


def imbalance(util: pd.DataFrame, uplinks_only: bool = True) -> pd.DataFrame:
    """Per sample time and tier: max/mean of the links' bytes (1.0 = perfectly even; with n
    links and all traffic on one, n). Intervals where the tier carried nothing are left out:
    an idle tier is not imbalanced."""
    if util.empty:
        return pd.DataFrame(columns=["t", "tier", "imbalance", "max_util", "mean_util"])
    df = util[util["uplink"]] if uplinks_only else util
    keys = [c for c in ("workload", "scheme", "repetition") if c in df.columns]
    rows = []
    for key, g in df.groupby([*keys, "t", "tier"], sort=True):
        mean = g["bytes"].mean()
        if mean <= 0:
            continue
        rows.append({**dict(zip([*keys, "t", "tier"], key, strict=True)),
                     "imbalance": float(g["bytes"].max() / mean),
                     "max_util": float(g["util"].max()), "mean_util": float(g["util"].mean())})
    return pd.DataFrame(rows)


def total_imbalance(util: pd.DataFrame) -> pd.DataFrame:
    """Per run and uplink tier: max/mean of each link's bytes summed over the whole run (how
    unevenly the scheme spread the run's traffic, independent of the sampling period)."""
    if util.empty:
        return pd.DataFrame(columns=["tier", "imbalance"])
    df = util[util["uplink"]]
    keys = [c for c in ("workload", "scheme", "repetition") if c in df.columns]
    per_link = df.groupby([*keys, "tier", "src", "src_port", "dst"])["bytes"].sum().reset_index()
    out = per_link.groupby([*keys, "tier"])["bytes"].agg(["max", "mean"]).reset_index()
    out["imbalance"] = out["max"] / out["mean"].where(out["mean"] > 0)
    return out.drop(columns=["max", "mean"])


# ---- queues, drops, counters ------------------------------------------------------------------
def max_queue_depth(queues: pd.DataFrame) -> pd.DataFrame:
    """Per run: the deepest any egress queue got (packets) and on which switch port."""
    if queues.empty:
        return pd.DataFrame(columns=["qdepth_max", "switch", "port"])
    keys = [c for c in ("workload", "scheme", "repetition") if c in queues.columns]
    idx = queues.groupby(keys)["qdepth_max"].idxmax() if keys else [queues["qdepth_max"].idxmax()]
    return queues.loc[idx, [*keys, "qdepth_max", "switch", "port"]].reset_index(drop=True)


def counter_delta(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """What a run added to every counter cell (``ctl.read_counters()`` before and after)."""
    key = [c for c in ("switch", "counter", "index", "port", "group", "member", "reason")
           if c in after.columns]
    b = before.copy()
    a = after.copy()
    for df in (a, b):
        df[key] = df[key].astype(str)   # NaN-safe join keys
    m = a.merge(b[[*key, "packets", "bytes"]], on=key, how="left", suffixes=("", "_before"))
    for col in ("packets", "bytes"):
        m[col] = m[col] - m[f"{col}_before"].fillna(0)
    return m.drop(columns=["packets_before", "bytes_before"])


def drops(delta: pd.DataFrame) -> int:
    """Packets the switches dropped in a run: counter cells with a drop reason (or a counter
    named like a drop counter)."""
    if delta.empty:
        return 0
    has_reason = delta["reason"].notna() & ~delta["reason"].astype(str).isin(["", "nan"]) \
        if "reason" in delta else pd.Series(False, index=delta.index)
    named = delta["counter"].astype(str).str.contains("drop", case=False)
    return int(delta.loc[has_reason | named, "packets"].fillna(0).sum())


def drop_reasons(delta: pd.DataFrame) -> dict[str, int]:
    """Pipeline drops of a run per reason (only reasons that occurred)."""
    if delta.empty or "reason" not in delta:
        return {}
    d = delta[delta["reason"].notna()]
    per = d.groupby(d["reason"].astype(str))["packets"].sum()
    return {str(k): int(v) for k, v in per.items() if v}


def host_port_bytes(delta: pd.DataFrame, spec: FabricSpec, hosts: Iterable[str]) -> int:
    """Bytes the edge switches received from these hosts in a run (port_rx counters of the
    host-facing ports): what the hosts put on their links, as the P4 program counted it."""
    want = {(spec.hosts[h].switch, spec.hosts[h].switch_port) for h in hosts}
    rx = delta[delta["counter"].astype(str).str.startswith("port_rx")]
    return int(sum(b for sw, p, b in zip(rx["switch"], rx["port"], rx["bytes"], strict=True)
                   if (sw, int(p)) in want))


def data_wire_bytes(schedule: Schedule, hosts: Sequence[str], mss: int = 1400) -> int:
    """Wire bytes of every data message that leaves its host once (no retransmission)."""
    return sum(wire_bytes(s.bytes, mss) for r, _, s in schedule.sends()
               if hosts[r] != hosts[s.dst])


def fct_table(flows: pd.DataFrame) -> pd.DataFrame:
    """Sent flows with their FCT (the CDF plot's input); local (same-host) flows dropped."""
    if flows.empty:
        return flows
    df = flows[flows["direction"] == "send"] if "direction" in flows else flows
    return df.dropna(subset=["fct"]).reset_index(drop=True)


def cdf(values: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted values and their empirical CDF (i/n)."""
    v = np.sort(np.asarray(list(values), dtype=float))
    return v, np.arange(1, v.size + 1) / max(v.size, 1)


def inter_edge_wire_bytes(spec: FabricSpec, schedule: Schedule, hosts: Sequence[str],
                          mss: int = 1400) -> int:
    """Data wire bytes that must cross an edge->agg (leaf->spine) link: every flow between
    hosts on different edge switches goes up exactly once. The lower bound the switch
    counters are checked against (ACKs and retransmissions only add to it)."""
    total = 0
    for r, _, s in schedule.sends():
        a, b = spec.hosts[hosts[r]], spec.hosts[hosts[s.dst]]
        if a.switch != b.switch:
            total += wire_bytes(s.bytes, mss)
    return total


def time_unit(table: pd.DataFrame) -> tuple[str, float]:
    """("µs", 1e6), ("ms", 1e3) or ("s", 1): the unit in which the table's mean CCTs read
    best (at least 1, below 10,000)."""
    m = table["mean"].dropna() if "mean" in table else pd.Series(dtype=float)
    top = float(m.max()) if not m.empty else 1.0
    if top < 10e-3:
        return "µs", 1e6
    if top < 10.0:
        return "ms", 1e3
    return "s", 1.0
