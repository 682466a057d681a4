"""Host-based load balancing on the real emulated fabric: a pinned split survives a link that
nothing routes around.

k=4 fat-tree of p4switch processes, ECMP, no controller loops (a dead link stays in the
routes). The path model picks the agg-core link that one subflow of each h1 -> h16 flow is
pinned to; the link goes down before the job; a 2-rank ring AllReduce h1 <-> h16 with
split(4,pin) must complete, every first transmission on the dead subflow having been resent
(they cannot have arrived). Needs root and Mininet; holds the fabric lock while it runs.
"""

from __future__ import annotations

import pytest

pytest.importorskip("mininet.net", reason="needs Mininet (Debian package `mininet`)")

from model.paths import PathModel, pinned_flow_ports  # noqa: E402
from model.spec import fat_tree  # noqa: E402
from traffic.schedules import GENERATORS  # noqa: E402

pytestmark = [pytest.mark.root, pytest.mark.mininet]

SIZE = 64_000
JOB = 1


def test_pinned_split_completes_across_a_dead_unrouted_link(tmp_path) -> None:  # noqa: ANN001
    from controller import FabricController
    from topo.collective import run_collective
    from topo.net import FabricNet

    spec = fat_tree(4)
    model = PathModel(spec)
    a, b = spec.hosts["h1"].ip, spec.hosts["h16"].ip
    flows = {f: snd for f, (src, snd) in GENERATORS["ring_allreduce"](2, SIZE)
             .flow_index().items() if src == 0}
    pinned = {f: pinned_flow_ports(model, JOB, 0, f, a, b, 4) for f in flows}
    agg, port = model.path(a, b, pinned[min(flows)][0])[1]     # the agg -> core hop
    core = spec.ports(agg)[port][0]
    dead = {}
    for f, ports in pinned.items():   # each h1 -> h16 flow has exactly one subflow there
        on_link = [i for i, p in enumerate(ports) if (agg, port) in model.path(a, b, p)]
        assert len(on_link) == 1
        dead[f] = on_link[0]

    net = FabricNet(spec, lock_timeout=600)
    ctl = None
    net.start()
    try:
        ctl = FabricController(spec, connect_timeout=120.0)
        ctl.start(scheme="ecmp", loops=())
        net.link_down(agg, core)
        res = run_collective(net, "ring_allreduce", size=str(SIZE), hosts=["h1", "h16"],
                             timeout=60, out_dir=tmp_path, start_margin=4.0, rate="10M",
                             rto_ms=200, path_policy="split(4)", pin=True, fabric="fattree:4",
                             # h16 finishes first and lingers until quiet; h1's retransmissions
                             # of its last packets come up to max_rto (2 s) apart once backed
                             # off, and 1 in 4 dies on the dead link: the default 10 RTOs
                             # (2 s) of quiet lost that race once in a CI run
                             linger_rtos=30)
    finally:
        if ctl is not None:
            ctl.stop()
        net.stop()
    assert res.ok, res.summary()
    sent = {f.flow: f for f in res.metrics[0].flows}
    assert set(sent) == set(flows)
    for f, rec in sent.items():
        assert rec.sports == pinned[f]           # the agent pinned what the model did
        lost = len(range(dead[f], rec.packets, 4))  # first transmissions on the dead link
        assert lost > 0 and rec.retransmissions >= lost
