"""Which process simulates which node of a fabric, when a run is split (sim.parallel).

Cut so that the parts are alike and few links cross: a fat-tree's pods are split into ``parts``
runs of consecutive pods, its core switches into as many runs by index; a leaf-spine's leaves
and spines likewise by index; each host goes with the switch it hangs off. At k=16 and 2 parts
each part then has 8 pods and 32 core switches: the same share of switches, hosts and (for
AllToAll and every other schedule symmetric over pods) traffic; the links that cross are
aggregation-core links, each a propagation delay long — the lookahead.
"""

from __future__ import annotations

from collections import defaultdict

from model.spec import FabricSpec


def partition(spec: FabricSpec, parts: int) -> dict[str, int]:
    """Node name -> part (0 .. parts-1) for every switch and host of ``spec``."""
    if parts < 1:
        raise ValueError(f"parts must be >= 1, not {parts}")
    part: dict[str, int] = {}
    pods = sorted({s.pod for s in spec.switches.values() if s.pod is not None})
    pod_part = {p: i * parts // len(pods) for i, p in enumerate(pods)}
    by_role: dict[str, list[str]] = defaultdict(list)
    for name, s in spec.switches.items():
        if s.pod is not None:
            part[name] = pod_part[s.pod]
        else:
            by_role[s.role].append(name)
    for names in by_role.values():
        names.sort(key=lambda n: (spec.switches[n].index, n))
        for i, n in enumerate(names):
            part[n] = i * parts // len(names)
    for lk in spec.links:
        for h, other in ((lk.a, lk.b), (lk.b, lk.a)):
            if h in spec.hosts and other in spec.switches and h not in part:
                part[h] = part[other]
    for i, h in enumerate(sorted(n for n in spec.hosts if n not in part)):  # unconnected
        part[h] = i % parts
    return part
