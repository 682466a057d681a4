"""Result fingerprints of fixed k=4 simulations: the guard for speed work on sim/.

An optimisation of the simulator (fast path, batching, cheaper events, shared pipeline code)
must not change a single result. ``fingerprint`` runs a fixed set of k=4 fat-tree cases — all
five schemes, one case with tail drops and retransmissions, one with a link failure and a
reroute — with a fixed seed and hashes everything that could move: the job CCT, packet-hops,
drops, every flow's finish time and retransmissions, every frame every switch received (in
order, with its time, switch by switch) and every per-member LB counter.
tests/sim/test_sim_fabric.py compares the digests with golden_k4.json, written by this script
(last when same-time events got their split-independent order, sim.events);
tests/sim/test_parallel.py compares them with those of runs split over processes.

When a change is meant to alter results (fabric.p4, transport, congestion control, a model),
regenerate and commit the file with the change, saying why:
``.venv/bin/python tests/sim/golden.py --write``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from model.spec import fat_tree  # noqa: E402
from sim.host import SIM_TRANSPORT, HostConfig  # noqa: E402
from sim.network import LinkFailure, SimConfig, SimNetwork  # noqa: E402
from sim.results import member_counters  # noqa: E402
from traffic.schedules import alltoall, moe_alltoall  # noqa: E402

GOLDEN = Path(__file__).with_name("golden_k4.json")
SCHEMES = ("ecmp", "flowlet", "random", "rotate", "wam")


def cases() -> dict[str, tuple[str, Any, dict[str, Any], list[LinkFailure]]]:
    """name -> (scheme, schedule, SimConfig fields, failures)."""
    out: dict[str, tuple[str, Any, dict[str, Any], list[LinkFailure]]] = {
        s: (s, alltoall(16, 16 * 4_000), {}, []) for s in SCHEMES}
    out["random-moe"] = ("random", moe_alltoall(16, 16 * 3_000, seed=3), {"seed": 5}, [])
    # short queues, big windows: tail drops, retransmissions, the slow path most of the time
    out["ecmp-drops"] = ("ecmp", alltoall(16, 16 * 8_000),
                         {"queue_depth": 8, "host": HostConfig(
                             transport=SIM_TRANSPORT.with_cc("dctcp", {"init_cwnd": 64}))}, [])
    out["wam-failure"] = ("wam", alltoall(16, 16 * 8_000), {},
                          [LinkFailure("agg1", "core1", at_us=20.0, reroute_after_us=50.0)])
    return out


def run_case(name: str, workers: int = 1, ray_address: str | None = None,
             pipeline: str = "python", core: str = "c", host_path: str = "c") -> dict[str, Any]:
    """One case's readable summary plus the digest of everything it produced (the same for
    any number of ``workers``, forked or Ray tasks: sim.parallel, sim.rayparts, with
    either ``pipeline``: p4switch.native, either ``core``: sim.core, and either
    ``host_path``: sim.hostc)."""
    scheme, sched, cfg, failures = cases()[name]
    net = SimNetwork(fat_tree(4, bw_mbps=10_000), scheme,
                     SimConfig(record_ingress=True, workers=workers, ray_address=ray_address,
                              pipeline=pipeline, core=core, host_path=host_path, **cfg))
    res = net.run(sched, until_us=2e6, failures=failures)
    h = hashlib.sha256()

    def put(x: Any) -> None:
        h.update(repr(x).encode())
        h.update(b"\n")

    put((res.ok, res.cct_s, res.end_us, res.packet_hops, res.tail_drops, res.pipeline_drops,
         res.link_losses))
    for r in res.ranks:
        put((r.rank, r.completed, r.start, r.finish))
        for f in sorted(r.flows, key=lambda f: f.flow):
            put((f.flow, f.packets_sent, f.start, f.finish, f.retransmissions, f.timeouts,
                 f.nacks, f.acked_packets, f.sport_packets))
        for x in sorted(r.received, key=lambda x: x.flow):
            put((x.flow, x.packets_received, x.arrivals, x.duplicates, x.reordered, x.finish))
    # switch by switch, each in arrival order (how same-time arrivals at *different*
    # switches interleave in the log is no result)
    for sw, t, port, frame in sorted(net.ingress_log, key=lambda e: e[0]):
        h.update(f"{sw} {t!r} {port} ".encode())
        h.update(frame)
    put(member_counters(net).to_records(index=False).tolist())
    return {"cct_s": res.cct_s, "packet_hops": res.packet_hops, "tail_drops": res.tail_drops,
            "link_losses": res.link_losses, "digest": h.hexdigest()}


def fingerprint(pipeline: str = "python") -> dict[str, dict[str, Any]]:
    return {name: run_case(name, pipeline=pipeline) for name in cases()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"(re)write {GOLDEN.name}")
    ap.add_argument("--pipeline", choices=["python", "native"], default="python")
    args = ap.parse_args(argv)
    fp = fingerprint(args.pipeline)
    if args.write:
        GOLDEN.write_text(json.dumps(fp, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
        return 0
    want = json.loads(GOLDEN.read_text())
    bad = [n for n in fp if fp[n] != want.get(n)]
    for n in fp:
        print(f"{n:12s} {'ok' if n not in bad else 'DIFFERS'} {fp[n]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
