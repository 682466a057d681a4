"""The experiment file's ``transport:`` block: validation naming the field, what each backend
makes of it (the agents' flags, the simulator's hosts and marking), dilation of its times."""

from __future__ import annotations

import copy

import pytest

from experiments import config
from experiments.backends import MininetBackend, SimBackend
from experiments.config import ConfigError
from model.dilation import dilate
from sim.host import SIM_TRANSPORT
from topo.session import transport_args
from traffic.run import parser as traffic_parser
from traffic.transport import TransportConfig

BASE = {
    "name": "t",
    "topology": {"kind": "fattree", "k": 4, "bw_mbps": 10},
    "schemes": ["ecmp"],
    "workloads": [{"schedule": "ring_allreduce", "size": "64KB", "window": 64}],
}


def _cfg(transport: object = None, **top: object) -> config.ExperimentConfig:
    d = copy.deepcopy(BASE)
    if transport is not None:
        d["transport"] = transport
    d.update(top)
    return config.from_dict(d)


def test_default_is_dctcp_with_the_backends_timers() -> None:
    t = _cfg().transport
    assert (t.cc, t.params, t.min_rto_us, t.max_rto_us, t.ecn_threshold) == \
        ("dctcp", {}, None, None, None)


@pytest.mark.parametrize("block, field, text", [
    ({"cc": "cubic"}, "transport.cc", "not one of"),
    ({"cc": "dctcp", "params": {"g": 3}}, "transport.params.g", "must be in"),
    ({"cc": "dctcp", "params": {"kmin": 3}}, "transport.params.kmin", "not a parameter of dctcp"),
    ({"cc": "dcqcn", "params": {"rate_timer_us": "x"}}, "transport.params.rate_timer_us",
     "not a number"),
    ({"min_rto_us": 0}, "transport.min_rto_us", "must be > 0"),
    ({"min_rto_us": 500, "max_rto_us": 100}, "transport.max_rto_us", "must be >= min_rto_us"),
    ({"ecn_threshold": -1}, "transport.ecn_threshold", "must be in"),
    ({"ecn_threshold": 8, "ecn_kmin": 9}, "transport.ecn_kmin", "must be <= ecn_threshold"),
    ({"ecn_threshold": 0, "ecn_kmin": 2}, "transport.ecn_kmin", "a ramp needs marking"),
    ({"window": 4}, "transport.window", "unknown field"),
    ("dctcp", "transport", "expected a mapping"),
])
def test_bad_transport_fields_are_named(block: object, field: str, text: str) -> None:
    with pytest.raises(ConfigError, match=text) as e:
        _cfg(block)
    assert e.value.field == field


def test_the_agents_get_the_block_as_flags() -> None:
    cfg = _cfg({"cc": "dcqcn", "params": {"g": 0.01}, "min_rto_us": 5000,
                "max_rto_us": 400000})
    be = MininetBackend(cfg, cfg.spec())
    t = be.transport_config(TransportConfig(), cfg.workloads[0])
    assert (t.cc, dict(t.cc_params), t.window) == ("dcqcn", {"g": 0.01}, 64)
    assert (t.min_rto, t.max_rto) == pytest.approx((0.005, 0.4))
    args = []
    for k, v in transport_args(t).items():
        if v is not None:
            args += ["--" + k.replace("_", "-"), str(v)]
    a = traffic_parser().parse_args(["--schedule", "ring_allreduce", *args])
    assert (a.cc, a.cc_params) == ("dcqcn", {"g": 0.01})
    assert (a.min_rto_ms, a.max_rto_ms) == pytest.approx((5.0, 400.0))
    assert a.base_rtt_us == pytest.approx(t.base_rtt * 1e6)


def test_the_simulator_keeps_its_timers_unless_the_block_sets_them() -> None:
    cfg = _cfg({"cc": "nscc"})
    be = SimBackend(cfg, cfg.spec())
    t = be.transport_config(SIM_TRANSPORT, cfg.workloads[0])
    assert (t.cc, t.min_rto, t.max_rto, t.ack_every) == ("nscc", 200e-6, 0.5, 8)
    assert t.base_rtt > 0


def test_marking_threshold_from_algorithm_and_rate_or_as_given() -> None:
    fabric = {"link_rate": "100G", "prop_delay_us": 1.0}
    top = {"topology": {"kind": "fattree", "k": 4}, "fabric": fabric}
    dctcp = _cfg({"cc": "dctcp"}, **top)
    k = SimBackend(dctcp, dctcp.spec()).ecn_threshold(64)(100e9)
    assert 8 <= k <= 32                             # C·RTT/7 at 100 Gb/s, ~13 µs RTT
    assert SimBackend(dctcp, dctcp.spec()).ecn_threshold(64)(400e9) > k   # per port rate
    nscc = _cfg({"cc": "nscc", "params": {"target_qdelay_pkts": 6}}, **top)
    assert SimBackend(nscc, nscc.spec()).ecn_threshold(64)(100e9) == 6
    fixed = _cfg({"ecn_threshold": 9})
    assert SimBackend(fixed, fixed.spec()).ecn_threshold(64) == 9
    off = _cfg({"ecn_threshold": 0})
    assert SimBackend(off, off.spec()).ecn_threshold(64) is None


def test_block_times_are_fabric_times_and_dilate() -> None:
    top = {"topology": {"kind": "fattree", "k": 4},
           "fabric": {"link_rate": "100G"}, "parameters": {"tdf": 100}}
    cfg = _cfg({"cc": "dcqcn", "params": {"rate_timer_us": 55, "g": 0.01}}, **top)
    assert cfg.transport.min_rto_us == 200.0        # a fabric file's default: fabric units
    emu = dilate(cfg, 100)
    assert emu.transport.min_rto_us == 20_000.0
    assert emu.transport.params == {"rate_timer_us": 5500, "g": 0.01}
    # K = C·RTT/7 does not move under dilation (C ÷ TDF, RTT × TDF)
    k = [SimBackend(c, c.spec()).ecn_threshold(64)(c.topology.bw_mbps * 1e6)
         for c in (cfg, emu)]
    assert k[0] == k[1]


def test_the_controller_sizes_each_ports_threshold_by_its_link_rate() -> None:
    import dataclasses

    from model.entries import ECN_CONFIG
    from model.routing import compute_fabric_entries
    from model.spec import fat_tree
    from traffic.congestion import fabric_marking

    spec = fat_tree(4, bw_mbps=100_000)
    fast = next(i for i, lk in enumerate(spec.links) if {lk.a, lk.b} == {"agg1", "core1"})
    lk = spec.links[fast]
    spec.links[fast] = dataclasses.replace(lk, bw_mbps=400_000)
    marking = fabric_marking(spec, "dctcp", 1e-6, 1500)
    entries = compute_fabric_entries(spec, "ecmp", ecn_threshold=marking)
    k = {(name, dict(e.match)["standard_metadata.egress_port"].value): dict(e.params)["qdepth"]
         for name, se in entries.switches.items() for e in se.entries if e.table == ECN_CONFIG}
    assert k[(lk.a, lk.a_port)] == k[(lk.b, lk.b_port)] == marking(400e9)
    assert marking(400e9) > marking(100e9)
    others = {v for (sw, port), v in k.items() if (sw, port) not in
              {(lk.a, lk.a_port), (lk.b, lk.b_port)}}
    assert others == {marking(100e9)}
    assert not [e for se in compute_fabric_entries(spec, "ecmp", ecn_threshold=None)
                .switches.values() for e in se.entries if e.table == ECN_CONFIG]


def test_ecn_kmin_makes_a_ramp_under_the_threshold_on_either_backend() -> None:
    """``ecn_kmin`` turns the step into a ramp up to the threshold, a given one or the one the
    algorithm sizes per port; without it the marking is the step as before."""
    from model.routing import EcnRamp

    fixed = _cfg({"ecn_threshold": 16, "ecn_kmin": 4})
    assert SimBackend(fixed, fixed.spec()).ecn_threshold(64)(None) == (4, 16)
    sized = _cfg({"cc": "dctcp", "ecn_kmin": 2})
    ramp = SimBackend(sized, sized.spec()).ecn_threshold(64)
    step = SimBackend(_cfg({"cc": "dctcp"}), sized.spec()).ecn_threshold(64)
    assert isinstance(ramp, EcnRamp) and ramp(100e9) == (2, step(100e9))
    assert _cfg({"ecn_threshold": 9}).transport.marking(fixed.spec(), 1e-6, 1500, 64) == 9
