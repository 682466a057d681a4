"""The simulator's check against the schemes' reference models: replay the packets each
simulated switch saw through model/lb.py (via model.schemes) and compare per-member counters
with what fabric.p4 counted in the pipeline (``lb_member_ctr``).

For the deterministic schemes (ECMP, flowlet, rotation, Whack-a-Mole) the two must be equal: the
reference is given the same packets in the same order at the same timestamps. Needs a network
built with ``SimConfig(record_ingress=True)``. ``python -m sim --check`` and the fidelity
experiment (experiments/fidelity.py) use it.
"""


from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import pandas as pd

from model.entries import IPV4_LPM
from model.lb import FlowKey
from model.routing import switch_context, tiers
from model.schemes import GroupContext, Reference

from .results import member_counters

if TYPE_CHECKING:
    from .network import SimNetwork

_IP = struct.Struct("!BBHHHBBHII")
_PORTS = struct.Struct("!HH")


def flow_key(frame: bytes) -> FlowKey | None:
    """The 5-tuple fabric.p4 hashes (ports 0 without TCP/UDP or for non-first fragments)."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None
    vihl, _tos, _tl, _id, frag, _ttl, proto, _c, src, dst = _IP.unpack_from(frame, 14)
    if vihl != 0x45:
        return None
    sport = dport = 0
    if proto in (6, 17) and frag & 0x1FFF == 0 and len(frame) >= 38:
        sport, dport = _PORTS.unpack_from(frame, 34)
    return FlowKey(src, dst, proto, sport, dport)


class _Lpm:
    """One switch's ipv4_lpm entries: longest prefix first."""

    def __init__(self, entries: list) -> None:
        rows = []
        for e in entries:
            if e.table != IPV4_LPM:
                continue
            m = e.match_dict["hdr.ipv4.dstAddr"]
            rows.append((m.prefix_len, m.value, e.action, e.params_dict))
        rows.sort(key=lambda r: -r[0])
        self.rows = rows

    def lookup(self, dst: int) -> tuple[str, dict[str, int]] | None:
        for plen, value, action, params in self.rows:
            mask = ((1 << plen) - 1) << (32 - plen) if plen else 0
            if dst & mask == value & mask:
                return action, params
        return None


def reference_counters(net: SimNetwork) -> pd.DataFrame:
    """Per (switch, group, member index) packet counts the reference models predict for the
    packets in ``net.ingress_log``. Random spraying has no prediction (its rows are absent).
    Uses the entries installed at start: a run with reroutes is not replayable this way."""
    if not net.cfg.record_ingress:
        raise ValueError("build the SimNetwork with SimConfig(record_ingress=True)")
    if any(what.startswith("rerouted") for _t, what in net.events):
        raise ValueError("the entries changed during the run (reroute): not replayable")
    spec = net.spec
    tier_of = tiers(spec)
    lpm: dict[str, _Lpm] = {}
    refs: dict[tuple[str, int], Reference] = {}
    for name, se in net.entries.switches.items():
        lpm[name] = _Lpm(se.entries)
        ctx = switch_context(spec, name, tier_of)
        for gid, g in se.groups.items():
            gctx = GroupContext(gid, g.ports, g.dmacs, (1.0,) * len(g.ports), ctx)
            refs[(name, gid)] = se.scheme[gid].reference(gctx)
    counts: dict[tuple[str, int, int], int] = {}
    for sw_name, t, _port, frame in net.ingress_log:
        key = flow_key(frame)
        if key is None or frame[22] <= 1:  # not routed (TTL expiry is dropped before lpm)
            continue
        hit = lpm[sw_name].lookup(key.dst)
        if hit is None or hit[0] != "MyIngress.set_lb_group":
            continue
        gid, dst_id = hit[1]["group_id"], hit[1]["dst_id"]
        now = int(t + net.switches[sw_name].uptime_us)
        member = refs[(sw_name, gid)].predict(key, now, dst_id)
        if member is None:
            continue
        k = (sw_name, gid, member)
        counts[k] = counts.get(k, 0) + 1
    rows = [{"switch": s, "group": g, "member": m, "packets": n}
            for (s, g, m), n in sorted(counts.items())]
    return pd.DataFrame(rows, columns=["switch", "group", "member", "packets"])


def compare_counters(net: SimNetwork) -> pd.DataFrame:
    """Pipeline counters next to the reference's: columns switch, group, member, packets
    (pipeline), expected (reference; 0 where it predicts none)."""
    got = member_counters(net)[["switch", "group", "member", "packets"]]
    want = reference_counters(net).rename(columns={"packets": "expected"})
    out = got.merge(want, on=["switch", "group", "member"], how="outer").fillna(0)
    out[["packets", "expected"]] = out[["packets", "expected"]].astype(int)
    return out
