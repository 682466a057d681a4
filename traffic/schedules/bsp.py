"""BSP training iterations: compute, then a collective, repeated (the LB-BSP setting).

Each iteration every rank computes for `compute_us` x its speed factor x a lognormal jitter, and
stragglers compute `straggler_factor` times longer; the collective that follows cannot finish
before the slowest rank joins, so stragglers and network imbalance compound.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from .format import Collective, Recv, Schedule, ScheduleError, Send, Step


def bsp_training(collective: Callable[[], Schedule], iterations: int, compute_us: float,
                 stragglers: list[int] | None = None, straggler_prob: float = 0.0,
                 straggler_factor: float = 2.0, speeds: list[float] | None = None,
                 jitter: float = 0.0, seed: int = 0) -> Schedule:
    """Repeat `collective()` `iterations` times, each preceded by a compute phase.

    stragglers: ranks slow in every iteration; straggler_prob: chance that any rank straggles
    in a given iteration; speeds: per-rank compute-time factors (heterogeneous GPUs);
    jitter: sigma of the lognormal noise on compute time.
    """
    if iterations < 1:
        raise ScheduleError("iterations", f"must be >= 1, got {iterations}")
    if compute_us < 0:
        raise ScheduleError("compute_us", f"must be >= 0, got {compute_us}")
    if not 0 <= straggler_prob <= 1:
        raise ScheduleError("straggler_prob", f"must be in [0, 1], got {straggler_prob}")
    if straggler_factor < 1:
        raise ScheduleError("straggler_factor", f"must be >= 1, got {straggler_factor}")
    if jitter < 0:
        raise ScheduleError("jitter", f"must be >= 0, got {jitter}")
    base = collective()
    n = base.ranks
    for i, r in enumerate(stragglers or []):
        if not 0 <= r < n:
            raise ScheduleError(f"stragglers[{i}]", f"rank {r} out of range 0..{n - 1}")
    if speeds is not None and len(speeds) != n:
        raise ScheduleError("speeds", f"has {len(speeds)} factors for {n} ranks")
    if speeds is not None and any(x <= 0 for x in speeds):
        raise ScheduleError("speeds", "factors must be > 0")
    rng = np.random.default_rng(seed)
    flows = 1 + max((s.flow for _, _, s in base.sends()), default=-1)
    ncoll = max(1, len(base.collectives))
    programs: list[list[Step]] = [[] for _ in range(n)]
    colls: list[Collective] = []
    compute = np.zeros((iterations, n))
    for it in range(iterations):
        slow = set(stragglers or []) | {r for r in range(n) if rng.random() < straggler_prob}
        for r in range(n):
            t = compute_us * (speeds[r] if speeds else 1.0)
            if jitter:
                t *= float(rng.lognormal(0.0, jitter))
            if r in slow:
                t *= straggler_factor
            compute[it, r] = t
        off = it * flows
        coff = it * ncoll
        for c in base.collectives or [Collective(0, base.name, 0)]:
            colls.append(Collective(c.id + coff, f"{c.name}[{it}]", c.bytes))
        for r in range(n):
            for k, st in enumerate(base.programs[r]):
                programs[r].append(dataclasses.replace(
                    st,
                    sends=[Send(s.dst, s.bytes, s.flow + off) for s in st.sends],
                    recvs=[Recv(x.src, x.flow + off) for x in st.recvs],
                    compute_us=st.compute_us + (float(compute[it, r]) if k == 0 else 0.0),
                    collective=st.collective + coff,
                    label=f"iter {it}: {st.label}"))
    s = Schedule(name=f"bsp_{base.name}", ranks=n, programs=programs, collectives=colls,
                 meta={"iterations": iterations, "collective": base.name, "base": base.meta,
                       "compute_us": compute.round(3).tolist()})
    s.validate()
    return s
