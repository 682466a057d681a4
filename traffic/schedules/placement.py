"""Rank -> host placement. Where ranks sit decides which flows cross the fabric core."""

from __future__ import annotations

import numpy as np

from .format import Schedule, ScheduleError

POLICIES = ("block", "round_robin", "random")


def place(s: Schedule, hosts: list[str], policy: str = "block", seed: int = 0) -> Schedule:
    """Assign each rank a host. block: consecutive ranks share a host (ranks/hosts per host);
    round_robin: rank r on host r mod H; random: a seeded shuffle of the block placement."""
    if not hosts:
        raise ScheduleError("hosts", "no hosts given")
    if policy not in POLICIES:
        raise ScheduleError("placement", f"unknown policy {policy!r}, choose from "
                            f"{', '.join(POLICIES)}")
    n, h = s.ranks, len(hosts)
    if policy == "round_robin":
        s.placement = [hosts[r % h] for r in range(n)]
    else:
        per = -(-n // h)
        block = [hosts[r // per] for r in range(n)]
        if policy == "random":
            block = [block[i] for i in np.random.default_rng(seed).permutation(n)]
        s.placement = block
    return s
