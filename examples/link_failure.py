"""Cut a link in the middle of a collective: see the controller's failure loop find it, reroute
around it, and what the failure cost.

By default on the simulator (no root, ~20 s): the controller's own failure loop runs in virtual
time (probes every 20 µs; a link is down after 2 missed rounds), an agg-core link is cut 30 µs
into a ring AllReduce, and the run is compared with the same ring on the intact fabric. With
``--emulated`` (root) the same on Mininet through a ``FabricSession``: the link is taken down
(both interfaces) while the collective runs, and the failure loop notices on its own.

    python examples/link_failure.py
    sudo .venv/bin/python examples/link_failure.py --emulated --tdf 100000
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

LINK = ("agg1", "core1")
HOSTS = ["h1", "h3", "h5", "h7", "h9", "h11", "h13", "h15"]


def on_simulator(out: Path) -> None:
    from experiments.config import from_dict
    from experiments.report import load_results
    from experiments.runner import run_experiment

    ring = {"schedule": "ring_allreduce", "size": "256KB", "hosts": HOSTS, "rto_ms": 0.02}
    cfg = from_dict({
        "name": "link_failure", "backend": "sim",
        "fabric": {"link_rate": "100G", "prop_delay_us": 0.1, "queue_packets": 64},
        "topology": {"kind": "fattree", "k": 4},
        "schemes": ["ecmp", "random"],
        "workloads": [{"name": "intact", **ring},
                      # at_s: seconds of the modelled fabric after the collective started
                      {"name": "cut", **ring, "failure": {"link": list(LINK), "at_s": 30e-6}}],
        "transport": {"cc": "dctcp", "min_rto_us": 20, "max_rto_us": 200},
        "repetitions": 1,
        "parameters": {"seed": 1, "loops": ["failure"], "control_period_s": 20e-6},
    })
    r = load_results(run_experiment(cfg, out, report=False).root)
    # what happened, in order: the cut, the loop's verdict, the reroute it wrote
    ev = r.events[r.events["workload"] == "cut"]
    for e in ev.itertuples():
        print(f"{e.scheme:7s} {e.time * 1e6:6.1f} µs  [{e.loop}] {e.what}")
    runs = r.runs.set_index(["workload", "scheme"])
    for scheme in ("ecmp", "random"):
        intact, cut = runs.loc[("intact", scheme)], runs.loc[("cut", scheme)]
        print(f"{scheme:7s} intact {intact.cct * 1e6:6.1f} µs, cut {cut.cct * 1e6:6.1f} µs "
              f"(+{(cut.cct / intact.cct - 1) * 100:.0f} %), rerouted "
              f"{cut.reroute_s * 1e6:.0f} µs after the cut, "
              f"{int(cut.retransmissions)} retransmissions")


def on_emulated_fabric(tdf: float | str, out: Path) -> None:
    from topo.session import FabricSession

    with FabricSession(k=4, link_rate="100G", prop_delay_us=0.1, tdf=tdf,
                       scheme="random", lock_timeout_s=600) as s:   # wall: wait for a fabric
        print("\n".join(s.describe()))
        intact = s.collective("ring_allreduce", "256KB", hosts=HOSTS, out_dir=out / "intact")
        print("intact:", intact.summary())
        # cut the link a third of the way through a run as long as the intact one (wall time)
        wall_s = (intact.cct_us or 0) * s.tdf / 1e6
        timer = threading.Timer(wall_s / 3, s.cut, LINK)
        timer.start()
        try:
            cut = s.collective("ring_allreduce", "256KB", hosts=HOSTS, out_dir=out / "cut")
        finally:
            timer.cancel()
            s.restore(*LINK)
        print("cut:   ", cut.summary())
        # The guard judges a collective alone: it is not told of this cut, so the frames lost
        # on the dead link and the failure loop's reroute of it count against the run.
        # (The experiment runner's `failure:` workloads tell it, and such runs stay valid.)
        for e in s.events():
            if e.loop == "failure":
                print(f"  [{e.loop}] {e.what}")
        if intact.cct_us and cut.cct_us:
            print(f"the failure cost {cut.cct_us - intact.cct_us:.1f} µs of fabric time")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--emulated", action="store_true", help="on Mininet (root)")
    ap.add_argument("--tdf", default="auto", help="--emulated: time dilation")
    ap.add_argument("--out", type=Path, default=Path("results/examples"))
    a = ap.parse_args(argv)
    if a.emulated:
        on_emulated_fabric(a.tdf if a.tdf == "auto" else float(a.tdf), a.out)
    else:
        on_simulator(a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
