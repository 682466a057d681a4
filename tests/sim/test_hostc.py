"""sim.hostc (the hosts' per-packet transport in C) in lock-step with the Python hosts.

Both run the same runs on the C core — every golden case, and NSCC, DCTCP and the fixed
window under trimming, tail drops, timeouts, a link failure, path policies, collectives that
reuse connections, a split run — and must give the same results byte for byte: every frame
every switch took in with its time, every flow's record (FCT, retransmissions, timeouts,
NACKs, RTT, window, entropies), every receive's record, the hosts' and queues' counters."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import pytest

# tests/sim/golden.py, importable as a sibling (see test_sim_fabric.py)
from golden import GOLDEN, cases, run_case  # noqa: E402

from model.spec import fat_tree
from sim.core import CoreLoop
from sim.host import SIM_TRANSPORT, HostConfig, SimHost
from sim.hostc import CHost
from sim.network import LinkFailure, SimConfig, SimNetwork
from traffic.congestion.nscc import uec_preset
from traffic.policies import PolicySpec
from traffic.schedules import alltoall, moe_alltoall, ring_allreduce


@pytest.mark.parametrize("name", list(cases()))
def test_c_hosts_give_the_golden_fingerprints(name: str) -> None:
    """Every golden case with the hosts in C: the golden digest, as with the hosts in
    Python (tests/sim/golden.py runs them on the Python pipeline, where no host is in C)."""
    want = json.loads(GOLDEN.read_text())[name]
    assert run_case(name, pipeline="native", core="c", host_path="c") == want
    assert run_case(name, pipeline="native", core="c", host_path="python") == want


def _run(host_path: str, schedule: Any, scheme: str = "random", failures: tuple = (),
         **cfg: Any) -> tuple[type, tuple[Any, ...], dict[str, int]]:
    """One run's everything, hashed where it is long; and the counts that show what the run
    exercised (retransmissions, timeouts, NACKs, trims)."""
    net = SimNetwork(fat_tree(4, bw_mbps=100_000), scheme,
                     SimConfig(record_ingress=True, host_path=host_path, **cfg))
    res = net.run(schedule, until_us=1e6, failures=list(failures))
    h = hashlib.sha256()
    for sw, t, port, frame in sorted(net.ingress_log, key=lambda e: e[0]):
        h.update(f"{sw} {t!r} {port} ".encode())
        h.update(frame)
    records = []
    for r in res.ranks:
        records.append((r.rank, r.completed, r.start, r.finish, r.error))
        records += [dataclasses.astuple(f) for f in sorted(r.flows, key=lambda f: f.flow)]
        records += [dataclasses.astuple(x) for x in sorted(r.received, key=lambda x: x.flow)]
    hosts = [(n, x.frames_sent, x.bytes_sent, x.frames_received, x.bad_frames)
             for n, x in net.hosts.items()]
    queues = [(n, p, dataclasses.astuple(q.stats)) for n, s in net.switches.items()
              for p, q in s._q.items()]
    flows = [f for r in res.ranks for f in r.flows]
    seen = {"retransmissions": sum(f.retransmissions for f in flows),
            "timeouts": sum(f.timeouts for f in flows), "nacks": sum(f.nacks for f in flows),
            "trims": res.trims, "tail_drops": res.tail_drops}
    kind: Any = type(next(iter(net.hosts.values())))
    if net.split is None:
        assert isinstance(net.loop, CoreLoop)
    else:   # the forked parts ran the events
        kind = net.split.loops
    return kind, (res.ok, res.cct_s, res.packet_hops, res.events, h.hexdigest(), records,
                  hosts, queues), seen


def _nscc(**params: float) -> HostConfig:
    return HostConfig(transport=SIM_TRANSPORT.with_cc("nscc", params or {"init_cwnd": 32}))


RUNS: dict[str, tuple[dict[str, Any], set[str]]] = {
    # name: (the run, what it must have exercised)
    "nscc-spray-trim": ({"schedule": alltoall(16, 16 * 40_000), "trim": True,
                         "queue_depth": 4, "host": _nscc()}, {"trims", "nacks"}),
    "nscc-uec-ecmp-drops": ({"schedule": alltoall(16, 16 * 40_000), "scheme": "ecmp",
                             "queue_depth": 6, "host": HostConfig(
                                 transport=SIM_TRANSPORT.with_cc("nscc", {
                                     **uec_preset(False), "init_cwnd": 64},
                                     base_rtt=10e-6))},
                            {"tail_drops", "retransmissions"}),
    "dctcp-failure": ({"schedule": alltoall(16, 16 * 40_000), "scheme": "wam",
                       "failures": (LinkFailure("agg1", "core1", at_us=5.0,
                                                reroute_after_us=400.0),),
                       "host": HostConfig(transport=SIM_TRANSPORT.with_cc(
                           "dctcp", {"init_cwnd": 64}))}, {"timeouts"}),
    "fixed-random-entropy": ({"schedule": moe_alltoall(16, 16 * 20_000, seed=2),
                              "scheme": "ecmp", "queue_depth": 8, "host": HostConfig(
                                  transport=SIM_TRANSPORT.with_cc("none"),
                                  path_policy=PolicySpec("entropy-spray", 8, mode="random"))},
                             {"tail_drops"}),
    "dctcp-pinned-split-ring": ({"schedule": ring_allreduce(16, 16 * 30_000),
                                 "scheme": "ecmp", "host": HostConfig(
                                     transport=SIM_TRANSPORT.with_cc("dctcp"),
                                     path_policy=PolicySpec("split", 4, pin=True))}, set()),
    "nscc-spray-split-run": ({"schedule": alltoall(16, 16 * 40_000), "trim": True,
                              "queue_depth": 4, "workers": 2, "host": _nscc()},
                             {"trims"}),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_c_hosts_equal_python_hosts(name: str) -> None:
    cfg, exercised = dict(RUNS[name][0]), RUNS[name][1]
    c_kind, c, seen = _run("c", **dict(cfg))
    py_kind, py, _ = _run("python", **dict(cfg))
    if "workers" in cfg:
        assert (c_kind, py_kind) == (["CoreLoop+hostc"] * 2, ["CoreLoop"] * 2)
    else:
        assert (c_kind, py_kind) == (CHost, SimHost)
    assert c[0], "every rank finished"
    assert all(seen[k] > 0 for k in exercised), seen
    assert c == py


@pytest.mark.parametrize("host", [
    HostConfig(transport=SIM_TRANSPORT.with_cc("dcqcn")),
    HostConfig(path_policy=PolicySpec("ecn-adaptive", 4)),
])
def test_what_c_does_not_run_stays_on_the_python_hosts(host: HostConfig) -> None:
    """A paced algorithm or a policy with per-packet feedback: the Python hosts, on the C
    core, the same results as asked for explicitly."""
    sched = alltoall(16, 16 * 8_000)
    kinds = []
    outs = []
    for hp in ("c", "python"):
        net = SimNetwork(fat_tree(4, bw_mbps=100_000), "random",
                         SimConfig(host=host, host_path=hp))
        res = net.run(sched, until_us=1e6)
        kinds.append(type(next(iter(net.hosts.values()))))
        outs.append((res.ok, res.cct_s, res.packet_hops, res.events))
    assert kinds == [SimHost, SimHost]
    assert outs[0] == outs[1] and outs[0][0]


def test_a_bad_host_path_is_refused() -> None:
    net = SimNetwork(fat_tree(4, bw_mbps=100_000), "ecmp", SimConfig(host_path="rust"))
    with pytest.raises(ValueError, match="host_path"):
        net.run(alltoall(16, 16 * 1_000), until_us=1e6)


@pytest.mark.parametrize("name,workers", [("ecmp-drops", 2), ("wam-failure", 3),
                                          ("random-moe", 2)])
def test_c_hosts_split_over_processes_give_the_golden_fingerprints(name: str,
                                                                   workers: int) -> None:
    """Split runs on the C core with the hosts in C (the parts hand each other their frames
    as FrameBlobs): the golden digest, as one loop."""
    want = json.loads(GOLDEN.read_text())[name]
    assert run_case(name, workers=workers, pipeline="native", core="c", host_path="c") == want
