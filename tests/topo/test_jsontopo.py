"""The p4lang/tutorials topology.json loader: explicit and implicit ports, host options,
gateways from commands, bandwidth, the latency warning, and errors that name the item."""

from __future__ import annotations

import json
import logging

import pytest

from model.spec import SpecError
from topo import jsontopo
from topo.jsontopo import load_topology_json, parse_topology

TUTORIAL_STYLE = {
    "hosts": {
        "h1": {"ip": "10.0.1.1/24", "mac": "08:00:00:00:01:11",
               "commands": ["route add default gw 10.0.1.10 dev eth0",
                            "arp -i eth0 -s 10.0.1.10 08:00:00:00:01:00"]},
        "h2": {"ip": "10.0.2.2/24", "mac": "08:00:00:00:02:22",
               "commands": ["route add default gw 10.0.2.20 dev eth0",
                            "arp -i eth0 -s 10.0.2.20 08:00:00:00:02:00"]},
        "h3": {"ip": "10.0.3.3/24", "mac": "08:00:00:00:03:33"},
    },
    "switches": {"s1": {"runtime_json": "s1-runtime.json"}, "s2": {}, "s3": {}},
    "links": [["h1", "s1-p1"], ["h2", "s2-p1"], ["s3", "h3"],
              ["s1-p2", "s2-p2", "0ms", 10], ["s1", "s3"], ["s2-p3", "s3"]],
}


def test_tutorials_file(tmp_path) -> None:
    f = tmp_path / "topology.json"
    f.write_text(json.dumps(TUTORIAL_STYLE))
    spec = load_topology_json(f)
    assert spec.name == "topology" and spec.kind == "custom"
    assert [s.device_id for s in spec.switches.values()] == [1, 2, 3]
    h1 = spec.hosts["h1"]
    assert (h1.ip, h1.prefixlen, h1.mac) == ("10.0.1.1", 24, "08:00:00:00:01:11")
    assert (h1.switch, h1.switch_port) == ("s1", 1)
    assert (h1.gateway_ip, h1.gateway_mac) == ("10.0.1.10", "08:00:00:00:01:00")
    assert len(h1.commands) == 2
    assert spec.hosts["h3"].gateway_ip is None
    # implicit ports: the next port not used explicitly, in link order
    assert spec.ports("s3") == {1: ("h3", 0), 2: ("s1", 3), 3: ("s2", 3)}
    assert spec.ports("s1") == {1: ("h1", 0), 2: ("s2", 2), 3: ("s3", 2)}
    (lk,) = spec.links_between("s1", "s2")
    assert lk.bw_mbps == 10
    assert spec.links_between("s1", "s3")[0].bw_mbps is None


def test_implicit_port_skips_explicit_ones() -> None:
    data = {"hosts": {"h1": {}, "h2": {}}, "switches": {"s1": {}},
            "links": [["h1", "s1"], ["h2", "s1-p1"]]}
    spec = parse_topology(data)
    assert spec.hosts["h2"].switch_port == 1 and spec.hosts["h1"].switch_port == 2
    # generated addresses for list-style / empty hosts
    assert spec.hosts["h1"].ip == "10.0.1.1" and spec.hosts["h2"].ip == "10.0.2.1"


def test_latency_warns_once(caplog, monkeypatch) -> None:
    monkeypatch.setattr(jsontopo, "_warned_latency", False)
    data = {"hosts": {"h1": {}, "h2": {}}, "switches": {"s1": {}, "s2": {}},
            "links": [["h1", "s1"], ["h2", "s2"], ["s1", "s2", "5ms", 100],
                      ["s1", "s2", "2ms"]]}
    with caplog.at_level(logging.WARNING, logger="topo.jsontopo"):
        parse_topology(data)
    assert sum("not emulated" in r.message for r in caplog.records) == 1


@pytest.mark.parametrize("data, message", [
    ({"hosts": {"h1": {}}, "switches": {"s1": {}}, "links": [["h1", "s9"]]},
     "links[0]: unknown node 's9'"),
    ({"hosts": {"h1": {}, "h2": {}}, "switches": {"s1": {}},
      "links": [["h1", "s1-p1"], ["h2", "s1-p1"]]}, "port 1 of s1 used twice"),
    ({"hosts": {"h1": {}, "h2": {}}, "switches": {}, "links": [["h1", "h2"]]},
     "host-to-host"),
    ({"hosts": {"h1": {}}, "switches": {"s1": {}}, "links": []}, "hosts.h1: not attached"),
    ({"hosts": {"h1": {"ip": "10.0.0.300"}}, "switches": {"s1": {}}, "links": [["h1", "s1"]]},
     "hosts.h1.ip: bad IPv4"),
    ({"hosts": {"h1": {}}, "switches": {"s1": {}}, "links": [["h1", "s1", "0ms", "fast"]]},
     "links[0]: bandwidth must be a number"),
    ({"hosts": {"h1": {}}, "switches": {"s1": {}}, "links": [["h1"]]}, "links[0]: expected"),
    ([], "expected a JSON object"),
])
def test_errors_name_the_item(data, message) -> None:
    with pytest.raises(SpecError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_topology(data)


def test_bad_json_file_has_position(tmp_path) -> None:
    f = tmp_path / "t.json"
    f.write_text('{"hosts": {,}')
    with pytest.raises(SpecError, match=r"t\.json:1:\d+: error:"):
        load_topology_json(f)
    with pytest.raises(SpecError, match="No such file"):
        load_topology_json(tmp_path / "missing.json")
