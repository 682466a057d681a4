"""What the hosts of one run left behind, read back: their rank files, merged into the run's
summary, and the fidelity guard's verdict on the run. Shared by the runner, the calibration
ramp and the fidelity experiment (so that none of them imports another for it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from traffic import metrics as traffic_metrics

from . import metrics
from .backends import RunSamples
from .config import WorkloadConfig


def load_ranks(out: Path) -> list[dict[str, Any]]:
    """Every rank<r>.json under a run's traffic directory (one per rank)."""
    return [json.loads(p.read_text()) for p in sorted(out.rglob("rank*.json"))]


def merge_ranks(ranks: list[dict[str, Any]], expected: int) -> dict[str, Any]:
    """traffic.metrics.merge_ranks over ranks from many host directories, plus what a run of
    the runner needs: completion against the expected rank count, agents' errors, packets."""
    summ = traffic_metrics.merge_ranks(ranks)
    summ.update(
        completed=len(ranks) == expected and summ["completed"],
        errors=[f"rank {r['rank']}: {r['error']}" for r in ranks if r.get("error")],
        packets_sent=sum(r["totals"].get("packets_sent", 0) for r in ranks),
        tcp_total_retrans=_tcp_sum(ranks, "tcp_total_retrans"),
        tcp_reord_seen=_tcp_sum(ranks, "tcp_reord_seen"))
    return summ


def _tcp_sum(ranks: list[dict[str, Any]], key: str) -> int | None:
    vals = [r["totals"][key] for r in ranks if r["totals"].get(key) is not None]
    return sum(vals) if vals else None


def verdict(s: RunSamples, spec: Any, w: WorkloadConfig, tdf: float,
             ranks: list[dict[str, Any]], headroom: float = 1.0) -> dict[str, Any]:
    """The fidelity guard's columns of a run (experiments/guard.py); a backend that measures
    nothing hidden (the simulator: nothing is) gives a valid run."""
    from p4switch.hidden import LogHistogram

    from .guard import judge

    m = s.extra.get("measures")
    if m is None:   # the simulator hides nothing; its queues' tail drops are still a result
        sim = s.extra.get("sim") or {}
        return {"valid": True, "invalid_reason": None,
                **({"drops_p4_queue": sim["tail_drops"]} if "tail_drops" in sim else {})}
    lags = [r["send_lag_us"] for r in ranks if r.get("send_lag_us")]
    if lags:
        m.send_lag_us = LogHistogram()
        for h in lags:
            m.send_lag_us.merge(h)
    account_agents(m, ranks)
    m.false_link_downs = false_link_downs(s.events, w)
    rates = [lk.bw_mbps for lk in spec.links if lk.bw_mbps]
    link_bps = (min(rates) * 1e6 / tdf) if rates else float("inf")
    return judge(m, link_bps, tdf, w.mss + metrics.FRAME_HEADER_BYTES - 14, headroom).row


_DOWN = re.compile(r"^link (\S+?):\d+-(\S+?):\d+ down\b")


def false_link_downs(events: list[dict[str, Any]], w: WorkloadConfig) -> list[str]:
    """The links (``a-b``, sorted names) the failure loop declared down in a run's events
    other than the one the workload cuts (``w.failure``; none when it cuts nothing)."""
    cut = frozenset(w.failure.link) if w.failure is not None else None
    out = []
    for e in events:
        if e.get("loop") != "failure":
            continue
        mt = _DOWN.match(str(e.get("what") or ""))
        if mt and frozenset(mt.groups()) != cut:
            out.append("-".join(sorted(mt.groups())))
    return out


def account_agents(m: Any, ranks: list[dict[str, Any]]) -> None:
    """The agents' side of a run's drop accounting into ``m`` (guard.Measures): their own
    drop counts, and (UDP transport) the data frames they sent over the network and those
    that arrived."""
    agents = [r["agent_drops"] for r in ranks if r.get("agent_drops")]
    if agents:
        m.agent_drops = {}
        for a in agents:
            for k, v in a.items():
                if v is not None:
                    m.agent_drops[k] = m.agent_drops.get(k, 0) + int(v)
    # the agent's own transport only: TCP's segment counts come from the kernel's TCP_INFO,
    # and its stack's own drops (TcpExt) are not among the sites
    if ranks and all(r.get("transport", "udp") == "udp" and
                     all("arrivals" in x for x in r["received"]) for r in ranks):
        m.data_sent = sum(f["packets_sent"] for r in ranks for f in r["flows"] if not f["local"])
        m.data_arrived = sum(x["arrivals"] for r in ranks for x in r["received"])
