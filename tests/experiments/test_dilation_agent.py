"""Dilation of the host agent's own timers: every time-like field of the transport's and the
agent's configs declares its dimension (enumerated, not sampled); a dilated AgentConfig has
each fabric time × TDF and each rate ÷ TDF, the machine's bounds as they were; and an
experiment file's ``transport:`` timers reach the agents' configs, through the Mininet
backend's traffic.run flags, as the fabric value × TDF."""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing

import pytest

from experiments.backends import MininetBackend
from experiments.config import ConfigError, from_dict
from model.dilation import DIM, TIME_LIKE, Dim, dilate, knobs
from topo.session import transport_args
from traffic.agent import AgentConfig
from traffic.policies import PolicySpec
from traffic.run import agent_config
from traffic.run import parser as traffic_parser
from traffic.transport import TransportConfig

TDF = 1000.0
CONFIGS = (TransportConfig, AgentConfig, PolicySpec)


def _numeric(tp: object) -> bool:
    """A float (or optional float) annotation: a quantity that may be a time or a rate."""
    args = typing.get_args(tp)
    return tp is float or (isinstance(tp, types.UnionType) and float in args)


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_float_and_every_time_like_field_declares_its_dimension(cls: type) -> None:
    hints = typing.get_type_hints(cls)
    missing = [f.name for f in dataclasses.fields(cls)
               if DIM not in f.metadata and (_numeric(hints[f.name]) or TIME_LIKE.search(f.name))]
    assert not missing, f"{cls.__name__}: fields without a Dim: {missing}"


def test_the_agents_module_constants_are_counts_or_named_here() -> None:
    """A timer written as a module constant escapes the fields' declarations: the only float
    constants left in the agent's modules are these, each with its reason."""
    allowed = {
        ("traffic.transport", "PACE_SLACK"),   # numerical slack (1 ps) of a float comparison
        ("traffic.agent", "PACE_SLACK"),       # the same, imported for the inline pacer hold
        ("traffic.tcpagent", "_RETRY"),        # tcp mode: kernel TCP, whose timers are not ours
    }
    mods = [importlib.import_module(f"traffic.{m}")
            for m in ("agent", "agentd", "run", "transport", "tcpagent")]
    found = {(m.__name__, name) for m in mods for name, v in vars(m).items()
             if isinstance(v, float) or (isinstance(v, tuple) and v and
                                         all(isinstance(x, float) for x in v))}
    assert found <= allowed, found - allowed


def test_a_dilated_agent_config_scales_fabric_times_and_rates_only() -> None:
    t = TransportConfig().with_cc("dcqcn", {"rate_timer_us": 55.0, "g": 0.5}, base_rtt=4e-6)
    cfg = AgentConfig(rate_bps=100e9, transport=t, start_at=1.7e9, tcp_rate_bps=50e9,
                      path_policy=PolicySpec(hold=20e-6))
    emu = dilate(cfg, TDF)
    pairs = list(zip(knobs(cfg), knobs(emu), strict=True))
    assert all(k.dim is not None for k, _ in pairs), [k.path for k, _ in pairs if not k.dim]
    by = {k.path: (k, e) for k, e in pairs}
    for p in ("transport.rto", "transport.ack_delay", "transport.tick", "transport.min_rto",
              "transport.max_rto", "transport.base_rtt", "transport.cc_params.rate_timer_us",
              "transport.pace_credit", "pace_credit", "path_policy.hold"):
        fab, em = by[p]
        assert fab.dim is Dim.TIME and em.value == pytest.approx(fab.value * TDF), p
    for p in ("rate_bps", "tcp_rate_bps"):
        fab, em = by[p]
        assert fab.dim is Dim.RATE and em.value == pytest.approx(fab.value / TDF), p
    for p in ("timeout", "linger", "start_at", "beacon_gap", "beacon_gap_max", "linger_rtos",
              "transport.nack_gap"):
        fab, em = by[p]
        assert fab.dim in (Dim.WALL, Dim.COUNT) and em.value == fab.value, p
    assert dict(emu.transport.cc_params)["g"] == 0.5   # not a duration


FABRIC_FILE = {
    "name": "f", "backend": "mininet", "topology": {"kind": "fattree", "k": 4},
    "fabric": {"link_rate": "100G", "prop_delay_us": 1.0},
    "schemes": ["ecmp"],
    "workloads": [{"name": "ring", "schedule": "ring_allreduce", "size": "64KB",
                   "rto_ms": 0.05}],
    "transport": {"cc": "dctcp", "min_rto_us": 40, "ack_delay_us": 30, "tick_us": 3,
                  "pace_credit_us": 2},
    "parameters": {"tdf": TDF},
}


def _agent_from_file(d: dict[str, object]) -> AgentConfig:
    """What a host agent runs with: the file dilated, the Mininet backend's flags for it,
    traffic.run's parsing of them."""
    emu = dilate(from_dict(d), TDF)
    be = MininetBackend(emu, emu.spec())
    w = emu.workloads[0]
    kw = transport_args(be.transport_config(TransportConfig(), w))
    kw["rto_ms"] = w.rto_ms
    if emu.transport.pace_credit_us is not None:
        kw["pace_credit_ms"] = emu.transport.pace_credit_us * 1e-3
    argv = ["--schedule", "ring_allreduce"]
    for k, v in kw.items():
        if v is not None:
            argv += ["--" + k.replace("_", "-"), str(v)]
    return agent_config(traffic_parser().parse_args(argv))


def test_the_files_timers_reach_the_agent_times_tdf() -> None:
    a = _agent_from_file(FABRIC_FILE)
    t = a.transport
    assert t.ack_delay == pytest.approx(30e-6 * TDF)
    assert t.tick == pytest.approx(3e-6 * TDF)
    assert t.min_rto == pytest.approx(40e-6 * TDF)
    assert t.rto == pytest.approx(50e-6 * TDF)
    assert a.pace_credit == t.pace_credit == pytest.approx(2e-6 * TDF)   # both pacers
    assert (a.beacon_gap, a.linger) == (AgentConfig.beacon_gap, AgentConfig.linger)  # WALL


def test_a_fabric_file_states_default_timers_in_fabric_units() -> None:
    d = {**FABRIC_FILE, "transport": {"cc": "dctcp"}}
    t = from_dict(d).transport
    assert (t.ack_delay_us, t.tick_us, t.pace_credit_us) == (50.0, 20.0, 1.0)  # 200 µs / 10
    short = from_dict({**d, "transport": {"cc": "dctcp", "min_rto_us": 20}}).transport
    assert (short.ack_delay_us, short.tick_us) == (5.0, 2.0)   # below the RTO floor
    a = _agent_from_file(d)
    assert a.transport.tick == pytest.approx(20e-6 * TDF)
    assert a.transport.ack_delay == pytest.approx(50e-6 * TDF)
    plain = {k: v for k, v in d.items() if k not in ("fabric", "parameters")}
    plain["topology"] = {"kind": "fattree", "k": 4, "bw_mbps": 10}
    t = from_dict(plain).transport
    assert (t.ack_delay_us, t.tick_us, t.pace_credit_us) == (None, None, None)  # the agent's


@pytest.mark.parametrize("field, value, text", [
    ("tick_us", 0, "must be > 0"), ("ack_delay_us", "soon", "not a number"),
    ("pace_credit_us", -1, "must be >= 0"),
])
def test_bad_timer_fields_are_named(field: str, value: object, text: str) -> None:
    with pytest.raises(ConfigError, match=text) as e:
        from_dict({**FABRIC_FILE, "transport": {"cc": "dctcp", field: value}})
    assert e.value.field == f"transport.{field}"


@pytest.mark.parametrize("flag", ["--tick-ms", "--ack-delay-ms", "--beacon-gap-ms"])
def test_bad_timer_flags_are_named(flag: str) -> None:
    a = traffic_parser().parse_args(["--schedule", "ring_allreduce", flag, "0"])
    with pytest.raises(ValueError, match=f"{flag} must be > 0"):
        agent_config(a)
