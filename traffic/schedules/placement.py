"""Rank -> host placement. Where ranks sit decides which flows cross the fabric core."""

from __future__ import annotations

from enum import StrEnum

import numpy as np

from .format import Schedule, ScheduleError


class Placement(StrEnum):
    """The placement policies: the one vocabulary of the agents' ``--placement`` and of an
    experiment's workload ``placement``."""

    BLOCK = "block"
    """Consecutive ranks share a host (ranks / hosts per host); one rank per host: rank r on
    the r-th host."""
    ROUND_ROBIN = "round_robin"
    """Rank r on host r mod H (one rank per host: the same as block)."""
    RANDOM = "random"
    """A seeded shuffle of the block placement."""


POLICIES: tuple[str, ...] = tuple(p.value for p in Placement)


def place(s: Schedule, hosts: list[str], policy: str = Placement.BLOCK,
          seed: int = 0) -> Schedule:
    """Assign each rank a host. block: consecutive ranks share a host (ranks/hosts per host);
    round_robin: rank r on host r mod H; random: a seeded shuffle of the block placement."""
    if not hosts:
        raise ScheduleError("hosts", "no hosts given")
    if policy not in POLICIES:
        raise ScheduleError("placement", f"unknown policy {policy!r}, choose from "
                            f"{', '.join(POLICIES)}")
    n, h = s.ranks, len(hosts)
    if policy == Placement.ROUND_ROBIN:
        s.placement = [hosts[r % h] for r in range(n)]
    else:
        per = -(-n // h)
        block = [hosts[r // per] for r in range(n)]
        if policy == Placement.RANDOM:
            block = [block[i] for i in np.random.default_rng(seed).permutation(n)]
        s.placement = block
    return s
