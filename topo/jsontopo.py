"""p4lang/tutorials ``topology.json`` -> :class:`~model.spec.FabricSpec`, so exercise topologies
run on this fabric unchanged.

The format: ``hosts`` maps a name to ``{"ip": "10.0.1.1/24", "mac": ..., "commands": [...]}``
(a plain list of names is accepted too: addresses are then generated as ``10.0.<i>.1/24``);
``switches`` maps a name to options (ignored here: the controller programs every switch);
``links`` are ``[a, b]`` or ``[a, b, latency, bw]``. A switch end is ``"s1-p2"`` (port 2) or
``"s1"`` (the next port not yet used on s1, in link order); a host end is the host's only
interface. ``bw`` is in Mbps. Latency is accepted but **not emulated** (this kernel has no
netem); the loader warns once. A gateway found in a host's commands (``route add default gw``,
``ip route ... via``, ``arp -s``) is recorded in its HostSpec.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
from pathlib import Path
from typing import Any

from model.spec import (
    FabricSpec,
    HostSpec,
    LinkSpec,
    SpecError,
    SwitchSpec,
    host_mac,
    mac_int,
    mac_str,
)

log = logging.getLogger(__name__)
_warned_latency = False

_PORT_END = re.compile(r"^(?P<node>.+)-p(?P<port>\d+)$")
_GW_ROUTE = re.compile(r"(?:route add default gw|ip route (?:add|replace) default via)\s+"
                       r"(?P<ip>\d+\.\d+\.\d+\.\d+)")
_GW_ARP = re.compile(r"arp\s.*-s\s+(?P<ip>\d+\.\d+\.\d+\.\d+)\s+(?P<mac>[0-9a-fA-F:]{17})")


def _warn_latency() -> None:
    global _warned_latency
    if not _warned_latency:
        _warned_latency = True
        log.warning("topology.json link latency is not emulated (this kernel has no netem); "
                    "only bandwidth is shaped")


def _latency_given(value: Any) -> bool:
    if value in (None, "", 0):
        return False
    text = str(value).strip().lower().removesuffix("ms").removesuffix("us")
    try:
        return float(text) != 0
    except ValueError:
        raise SpecError(f"bad link latency {value!r}") from None


def _bw(value: Any, where: str) -> float | None:
    if value in (None, ""):
        return None
    try:
        bw = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{where}: bandwidth must be a number of Mbps, got {value!r}") from None
    if bw <= 0:
        raise SpecError(f"{where}: bandwidth must be > 0 Mbps, got {value!r}")
    return bw


def load_topology_json(path: str | Path, name: str | None = None) -> FabricSpec:
    """Read a tutorials-style topology file; every error is a SpecError naming the item."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except OSError as e:
        raise SpecError(f"{p}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise SpecError(f"{p}:{e.lineno}:{e.colno}: error: {e.msg}") from None
    return parse_topology(data, name or p.stem)


def parse_topology(data: Any, name: str = "custom") -> FabricSpec:
    if not isinstance(data, dict):
        raise SpecError("topology: expected a JSON object with hosts, switches, links")
    hosts = data.get("hosts", {})
    switches = data.get("switches", {})
    links = data.get("links", [])
    if isinstance(hosts, list):
        hosts = {h: {} for h in hosts}
    if isinstance(switches, list):
        switches = {s: {} for s in switches}
    if not isinstance(hosts, dict) or not isinstance(switches, dict) or not isinstance(links, list):
        raise SpecError("topology: hosts/switches must be objects (or lists), links a list")
    spec = FabricSpec(name=name, kind="custom", params={"source": "topology.json"})
    for i, sname in enumerate(switches, start=1):
        spec.add_switch(SwitchSpec(name=str(sname), role="switch", device_id=i, index=i - 1))

    # resolve link ends: explicit ports first, so implicit ones never take an explicit port
    ends: list[tuple[tuple[str, int | None], tuple[str, int | None], float | None]] = []
    used: dict[str, set[int]] = {s: set() for s in spec.switches}
    for li, lk in enumerate(links):
        where = f"links[{li}]"
        if not isinstance(lk, list) or not 2 <= len(lk) <= 4:
            raise SpecError(f"{where}: expected [a, b] or [a, b, latency, bw], got {lk!r}")
        if len(lk) > 2 and _latency_given(lk[2]):
            _warn_latency()
        pair = tuple(_end(str(x), spec, hosts, where) for x in lk[:2])
        for node, port in pair:
            if port is not None and node in used:
                if port in used[node]:
                    raise SpecError(f"{where}: port {port} of {node} used twice")
                used[node].add(port)
        ends.append((pair[0], pair[1], _bw(lk[3] if len(lk) > 3 else None, where)))

    next_port = {s: 1 for s in spec.switches}
    attach: dict[str, tuple[str, int]] = {}
    resolved: list[LinkSpec] = []
    for li, ((a, ap), (b, bp), bw) in enumerate(ends):
        if a in hosts and b in hosts:
            raise SpecError(f"links[{li}]: host-to-host link {a}-{b} (no switch between)")
        ports = []
        for node, port in ((a, ap), (b, bp)):
            if node in hosts:
                ports.append(0)
                continue
            if port is None:
                while next_port[node] in used[node]:
                    next_port[node] += 1
                port = next_port[node]
                used[node].add(port)
            ports.append(port)
        for node, peer, port in ((a, b, ports[1]), (b, a, ports[0])):
            if node in hosts:
                if node in attach:
                    raise SpecError(f"links[{li}]: host {node} has more than one link")
                attach[node] = (peer, port)
        resolved.append(LinkSpec(a, ports[0], b, ports[1], bw))

    for hi, (hname, opts) in enumerate(hosts.items()):
        if hname not in attach:
            raise SpecError(f"hosts.{hname}: not attached to any switch")
        spec.add_host(_host(str(hname), opts or {}, hi, attach[hname]))
    for lk in resolved:
        spec.add_link(lk)
    spec.validate()
    return spec


def _end(text: str, spec: FabricSpec, hosts: dict, where: str) -> tuple[str, int | None]:
    if text in hosts:
        return text, None
    if text in spec.switches:
        return text, None
    m = _PORT_END.match(text)
    if m and m["node"] in spec.switches:
        port = int(m["port"])
        if port < 1:
            raise SpecError(f"{where}: bad port in {text!r}")
        return m["node"], port
    raise SpecError(f"{where}: unknown node {text!r}")


def _host(name: str, opts: dict, index: int, at: tuple[str, int]) -> HostSpec:
    where = f"hosts.{name}"
    if not isinstance(opts, dict):
        raise SpecError(f"{where}: expected an object with ip/mac/commands")
    ip_text = str(opts.get("ip", f"10.0.{index + 1}.1/24"))
    try:
        iface = ipaddress.IPv4Interface(ip_text if "/" in ip_text else f"{ip_text}/24")
    except ValueError:
        raise SpecError(f"{where}.ip: bad IPv4 address {ip_text!r}") from None
    ip = str(iface.ip)
    mac = mac_str(mac_int(str(opts["mac"]))) if "mac" in opts else host_mac(ip)
    commands = opts.get("commands", [])
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        raise SpecError(f"{where}.commands: expected a list of strings")
    gw_ip = gw_mac = None
    for c in commands:
        if m := _GW_ROUTE.search(c):
            gw_ip = m["ip"]
    for c in commands:
        if (m := _GW_ARP.search(c)) and m["ip"] == gw_ip:
            gw_mac = mac_str(mac_int(m["mac"]))
    return HostSpec(name=name, ip=ip, prefixlen=iface.network.prefixlen, mac=mac, switch=at[0],
                    switch_port=at[1], gateway_ip=gw_ip, gateway_mac=gw_mac, index=index,
                    commands=tuple(commands))
