"""Which interface, source address and next-hop MAC a frame to a destination IP needs.

The agent writes whole Ethernet frames, so it must choose the destination MAC the kernel would:
the destination's own MAC when it is on-link (hosts on a Linux bridge), the gateway's MAC when
the route goes via a router (hosts behind P4 leaf switches). Asking the kernel (`ip route get`,
then the neighbour table) gives the right answer in both cases; if the neighbour is not yet
resolved, one kernel UDP datagram to the destination makes the kernel ARP for the next hop.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

_VALID = {"REACHABLE", "STALE", "DELAY", "PROBE", "PERMANENT", "NOARP"}


class NextHopError(RuntimeError):
    pass


@dataclass(frozen=True)
class Route:
    dev: str
    src_ip: str
    src_mac: str
    nexthop_ip: str
    nexthop_mac: str


def _ip_json(*args: str) -> list[dict]:
    try:
        out = subprocess.run(["ip", "-j", *args], capture_output=True, text=True, timeout=5,
                             check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise NextHopError(f"`ip {' '.join(args)}` failed: {e}") from None
    return json.loads(out or "[]")


def _neighbour(ip: str, dev: str) -> str | None:
    for n in _ip_json("neigh", "show", "to", ip, "dev", dev):
        if n.get("lladdr") and _VALID & set(n.get("state", [])):
            return str(n["lladdr"])
    return None


def resolve(dst_ip: str, nexthop_mac: str | None = None, timeout: float = 2.0) -> Route:
    """Route to `dst_ip`; `nexthop_mac` overrides the neighbour-table answer."""
    routes = _ip_json("route", "get", dst_ip)
    if not routes:
        raise NextHopError(f"no route to {dst_ip}")
    r = routes[0]
    dev = r["dev"]
    if dev == "lo":
        raise NextHopError(f"{dst_ip} is a local address")
    src_ip = r.get("prefsrc", "0.0.0.0")
    src_mac = Path(f"/sys/class/net/{dev}/address").read_text().strip()
    nh = r.get("gateway", dst_ip)
    if nexthop_mac:
        return Route(dev, src_ip, src_mac, nh, nexthop_mac)
    deadline = time.monotonic() + timeout
    mac = _neighbour(nh, dev)
    while mac is None and time.monotonic() < deadline:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.sendto(b"", (dst_ip, 9))  # discard port; only the ARP it triggers matters
            except OSError:
                pass
        time.sleep(0.05)
        mac = _neighbour(nh, dev)
    if mac is None:
        raise NextHopError(f"cannot resolve the MAC of next hop {nh} on {dev} "
                           "(pass --next-hop-mac)")
    return Route(dev, src_ip, src_mac, nh, mac)


def local_addresses() -> set[str]:
    return {a["local"] for i in _ip_json("addr") for a in i.get("addr_info", [])
            if a.get("family") == "inet"}
