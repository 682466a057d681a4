"""Experiment files: the examples load, and every kind of bad field is named in the error."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from experiments import config
from experiments.config import ConfigError
from traffic.schedules import Schedule

CONFIGS = Path(__file__).resolve().parents[2] / "experiments" / "configs"

BASE = {
    "name": "t",
    "topology": {"kind": "fattree", "k": 4, "bw_mbps": 10},
    "schemes": ["ecmp", {"name": "flowlet", "params": {"timeout_us": 200}}],
    "workloads": [
        {"schedule": "ring_allreduce", "size": "64KB"},
        {"name": "moe", "schedule": "moe_alltoall", "size": 4096, "options": {"alpha": 1.1}},
    ],
}


def _with(path: str, value: object) -> dict:
    d = copy.deepcopy(BASE)
    *keys, last = path.split(".")
    node = d
    for k in keys:
        node = node[int(k)] if k.isdigit() else node[k]
    node[int(last) if last.isdigit() else last] = value
    return d


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_example_configs_load(path: Path) -> None:
    c = config.load(path)
    assert c.schemes and c.workloads
    for w in c.workloads:
        hosts = c.hosts_of(w)
        assert len(set(hosts)) == len(hosts) >= 2
        assert w.schedule_for(len(hosts)).ranks == len(hosts)


def test_demo_config_is_the_brief() -> None:
    c = config.load(CONFIGS / "demo.yaml")
    assert (c.topology.kind, c.topology.k) == ("fattree", 4)
    assert [s.name for s in c.schemes] == ["ecmp", "flowlet", "random", "rotate", "wam"]
    assert {w.schedule for w in c.workloads} == {"ring_allreduce", "moe_alltoall"}


def test_defaults_and_values() -> None:
    c = config.from_dict(BASE)
    ring, moe = c.workloads
    assert ring.name == "ring_allreduce" and ring.size == 64000 and ring.transport == "udp"
    assert moe.size == 4096 and moe.options == {"alpha": 1.1}
    assert c.schemes[1].label == "flowlet(timeout_us=200)"
    assert c.repetitions == 1 and c.backend == "mininet" and c.parameters.sim_workers == 1
    assert len(c.hosts_of(ring)) == 16
    assert c.hosts_of(ring)[:3] == ["h1", "h2", "h3"]


def test_random_placement_is_a_seeded_permutation() -> None:
    d = _with("workloads.0.placement", "random")
    a, b = config.from_dict(d), config.from_dict(d)
    ha = a.hosts_of(a.workloads[0])
    assert ha == b.hosts_of(b.workloads[0])
    assert sorted(ha) == sorted(a.hosts_of(a.workloads[1])) and ha != a.hosts_of(a.workloads[1])


@pytest.mark.parametrize(("path", "value", "message"), [
    ("workloads.1.size", "12XB", "workloads[1].size: '12XB' is not a size"),
    ("workloads.0.size", 0, "workloads[0].size: must be >= 1 byte"),
    ("workloads.0.schedule", "ring", "workloads[0].schedule: 'ring' is not one of"),
    ("workloads.0.colour", "red", "workloads[0].colour: unknown field"),
    ("workloads.0.hosts", ["h1", "h99"], "workloads[0].hosts[1]: 'h99' is not a host"),
    ("workloads.0.transport", "quic", "workloads[0].transport: 'quic' is not one of udp, tcp"),
    ("workloads.0.rate", "fast", "workloads[0].rate: 'fast' is not a rate"),
    ("workloads.0.qps", 0, "workloads[0].qps: must be in 1..64"),
    ("workloads.1.options", {"alpha": -1}, "workloads[1].options.alpha: must be >= 0"),
    ("workloads.1.options", {"colour": 1}, "workloads[1].options.colour: not an option"),
    ("workloads.0.bsp", {"iterations": 0}, "workloads[0].bsp.iterations: must be in 1..1000"),
    ("workloads.0.bsp", {"iterations": 2, "stragglers": [16]},
     "workloads[0].bsp.stragglers[0]: rank 16 out of range 0..15"),
    ("workloads.0.failure", {"link": ["agg1", "core3"]},
     "workloads[0].failure.link: no link between agg1 and core3"),
    ("workloads.0.failure", {"link": ["agg1", "sw9"]},
     "workloads[0].failure.link[1]: 'sw9' is not a switch"),
    ("workloads.0.failure", {"link": ["agg1", "core1"], "at_s": 1, "restore_s": 0.5},
     "workloads[0].failure.restore_s: must be after at_s"),
    ("schemes.0", "ecnp", "schemes[0]: unknown scheme 'ecnp'"),
    ("schemes.1", "ecmp", "schemes[1]: ecmp is listed twice"),
    ("topology.k", 5, "topology.k: must be even"),
    ("topology.kind", "torus", "topology.kind: 'torus' is not one of fattree, leafspine"),
    ("topology.spines", 2, "topology.spines: is a leafspine field"),
    ("topology.bw_mbps", -1, "topology.bw_mbps: must be > 0"),
    ("repetitions", 0, "repetitions: must be in 1..1000"),
    ("backend", "ns3", "backend: 'ns3' is not one of mininet, sim"),
    ("parameters", {"loops": ["failure", "magic"]}, "parameters.loops[1]: 'magic' is not one"),
    ("parameters", {"sample_period_s": 0}, "parameters.sample_period_s: must be > 0"),
    ("parameters", {"sim_workers": 0}, "parameters.sim_workers: must be in 1..64"),
    ("parameters", {"sim_ray": 6379}, "parameters.sim_ray: 6379 is not a string"),
    ("name", "a/b", "name: 'a/b' must be a non-empty word"),
])
def test_bad_field_is_named(path: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        config.from_dict(_with(path, value))
    assert str(e.value).startswith(message), str(e.value)


def test_missing_required_field() -> None:
    d = copy.deepcopy(BASE)
    del d["workloads"][0]["size"]
    with pytest.raises(ConfigError, match=r"^workloads\[0\]\.size: required field missing"):
        config.from_dict(d)


def test_load_names_the_file_and_yaml_position(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\ntopology: {kind: fattree\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml:\d+:\d+: not valid YAML"):
        config.load(p)
    p.write_text("name: x\ntopology: {kind: fattree}\nschemes: [ecmp]\n"
                 "workloads: [{schedule: ring_allreduce, size: 12XB}]\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: workloads\[0\]\.size: '12XB'"):
        config.load(p)
    with pytest.raises(ConfigError, match="No such file"):
        config.load(tmp_path / "missing.yaml")


def _received(s: Schedule) -> list[int]:
    """Bytes each rank receives (the MoE's hot experts receive most)."""
    got = [0] * s.ranks
    for _src, _i, snd in s.sends():
        got[snd.dst] += snd.bytes
    return got


def test_repetitions_sample_the_moe_not_one_instance_of_it() -> None:
    """The repetition's seed moves the hot experts (docs/experiments.md, "Seeds per
    repetition"); the same seed gives the same schedule; ``options.seed`` pins one instance;
    a generator without draws (the ring) ignores it."""
    c = config.from_dict(BASE)
    ring, moe = c.workloads
    by_seed = {seed: _received(moe.schedule_for(16, seed=seed)) for seed in (1, 1001, 2001)}
    assert by_seed[1] == _received(moe.schedule_for(16, seed=1))
    hot = {seed: got.index(max(got)) for seed, got in by_seed.items()}
    assert len(set(hot.values())) > 1, hot
    assert sorted(by_seed[1]) == sorted(by_seed[1001])   # the same skew, other experts hot
    pinned = config.from_dict(_with("workloads.1.options", {"alpha": 1.1, "seed": 7}))
    w = pinned.workloads[1]
    assert _received(w.schedule_for(16, seed=1)) == _received(w.schedule_for(16, seed=1001))
    assert [st.sends for p in ring.schedule_for(16, seed=1).programs for st in p] == \
        [st.sends for p in ring.schedule_for(16, seed=1001).programs for st in p]


def test_a_target_override_places_the_simulators_delay_as_the_target_does() -> None:
    from experiments.config import with_target

    base = {"name": "t", "topology": {"kind": "fattree", "k": 4}, "schemes": ["ecmp"],
            "workloads": [{"name": "w", "schedule": "ring_allreduce", "size": "64KB"}]}
    cfg = config.from_dict(base)
    assert cfg.parameters.target == "p4switch" and not cfg.parameters.sim_prop_at_hosts
    ebpf = config.from_dict({**base, "parameters": {"target": "ebpf"}})
    assert ebpf.parameters.sim_prop_at_hosts            # the default for ebpf
    assert not config.from_dict({**base, "parameters": {"target": "ebpf", "sim_prop_at_hosts": False}}
                         ).parameters.sim_prop_at_hosts
    moved = with_target(cfg, "ebpf")
    assert moved.parameters.target == "ebpf" and moved.parameters.sim_prop_at_hosts
    # the file as run records the override, and reading it back gives the same run
    assert moved.source["parameters"]["target"] == "ebpf" and "parameters" not in cfg.source
    assert config.from_dict(moved.source).parameters == moved.parameters
    with pytest.raises(ValueError, match="--target: 'tofino' is not one of"):
        with_target(cfg, "tofino")
    with pytest.raises(ConfigError, match="sim_prop_at_hosts"):
        config.from_dict({**base, "parameters": {"sim_prop_at_hosts": "yes"}})


def test_the_simulators_start_skew_defaults_and_is_checked() -> None:
    from experiments.config import SIM_START_SKEW_S

    base = {"name": "t", "topology": {"kind": "fattree", "k": 4}, "schemes": ["ecmp"],
            "workloads": [{"name": "w", "schedule": "ring_allreduce", "size": "64KB"}]}
    assert config.from_dict(base).parameters.sim_start_skew_s == SIM_START_SKEW_S > 0
    off = config.from_dict({**base, "parameters": {"sim_start_skew_s": 0}})
    assert off.parameters.sim_start_skew_s == 0.0
    with pytest.raises(ConfigError, match="sim_start_skew_s: must be >= 0"):
        config.from_dict({**base, "parameters": {"sim_start_skew_s": -1e-6}})


def test_target_auto_is_the_kernel_data_plane_where_it_can_run_else_p4switch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import p4switch
    from experiments.config import concrete_target
    from model.targets import resolve_auto

    assert resolve_auto("auto", None) == ("ebpf", None)
    assert resolve_auto("auto", "needs root") == ("p4switch", "needs root")
    assert resolve_auto("bmv2", "needs root") == ("bmv2", None)     # only auto is resolved
    notes: list[str] = []
    monkeypatch.setattr(p4switch, "ebpf_unavailable_reason", lambda: "the eBPF target needs clang")
    assert concrete_target("auto", notes.append) == "p4switch"
    assert notes == ["target auto: p4switch (the eBPF target needs clang)"]
    monkeypatch.setattr(p4switch, "ebpf_unavailable_reason", lambda: None)
    assert concrete_target("auto", notes.append) == "ebpf" and notes[-1].startswith(
        "target auto: ebpf")
    assert concrete_target("p4switch", notes.append) == "p4switch" and len(notes) == 2
