"""A topology of your own: an asymmetric leaf-spine built link by link, run on the simulator
(and with ``--emulated``, root, on Mininet through a ``FabricSession``).

Three leaves with two hosts each, two spines; leaf3 has one link to spine1 but two to spine2,
so its load-balancing group has three members, two of them towards the same spine. The
controller's routing (model.routing) works on any such graph: groups, entries and the P4 are
the same as for the built-in fat-tree. Each scheme runs an AllToAll and the script prints how
leaf3 split its traffic over its three uplinks. No root for the default run; ~20 s.

    python examples/custom_topology.py
    sudo .venv/bin/python examples/custom_topology.py --emulated --tdf 100000
"""

from __future__ import annotations

import argparse
from pathlib import Path

from model.spec import FabricSpec, HostSpec, LinkSpec, SwitchSpec, host_mac

RATE_MBPS = 100_000   # 100 Gb/s on every link


def asymmetric_leaf_spine() -> FabricSpec:
    spec = FabricSpec(name="asym-3x2", kind="custom")
    leaves = [spec.add_switch(SwitchSpec(name=f"leaf{i}", role="leaf", device_id=i, index=i - 1,
                                         ip=f"10.1.{i - 1}.1", subnet=f"10.1.{i - 1}.0/24"))
              for i in (1, 2, 3)]
    for s in (1, 2):
        spec.add_switch(SwitchSpec(name=f"spine{s}", role="spine", device_id=10 + s,
                                   index=s - 1, ip=f"10.2.{s - 1}.1"))
    n = 0
    for li, leaf in enumerate(leaves):
        for port in (1, 2):                      # hosts on ports 1 and 2 of each leaf
            n += 1
            ip = f"10.1.{li}.{port + 1}"
            h = spec.add_host(HostSpec(name=f"h{n}", ip=ip, prefixlen=24, mac=host_mac(ip),
                                       switch=leaf.name, switch_port=port, gateway_ip=leaf.ip,
                                       gateway_mac=leaf.port_mac(port), index=n - 1))
            spec.add_link(LinkSpec(h.name, 0, leaf.name, port, RATE_MBPS))
    # uplinks (leaf, leaf port, spine, spine port): leaf3 has a second link to spine2
    for a, ap, b, bp in [("leaf1", 3, "spine1", 1), ("leaf1", 4, "spine2", 1),
                         ("leaf2", 3, "spine1", 2), ("leaf2", 4, "spine2", 2),
                         ("leaf3", 3, "spine1", 3), ("leaf3", 4, "spine2", 3),
                         ("leaf3", 5, "spine2", 4)]:
        spec.add_link(LinkSpec(a, ap, b, bp, RATE_MBPS))
    spec.validate()                              # ports, addresses, links: a clear error if not
    return spec


def on_simulator(spec: FabricSpec) -> None:
    from sim.network import SimConfig, SimNetwork
    from sim.results import member_counters
    from traffic.schedules import alltoall

    for scheme in ("ecmp", "random", "wam"):
        net = SimNetwork(spec, scheme, SimConfig(prop_delay_us=0.1, seed=1))
        res = net.run(alltoall(len(spec.hosts), 6 * 64_000))   # 64 KB to every other host
        m = member_counters(net)
        up = m[m["switch"] == "leaf3"].groupby("port")["packets"].sum()
        split = ", ".join(f"port {p}: {n}" for p, n in up.items())
        cct = f"{res.cct_s * 1e6:6.1f} µs" if res.cct_s is not None else "(incomplete)"
        print(f"{scheme:7s} CCT {cct}; leaf3's uplinks carried {split}")


def on_emulated_fabric(spec: FabricSpec, tdf: float | str, out: Path) -> None:
    from topo.session import FabricSession

    # lock_timeout_s (wall): wait for another fabric on this machine to finish
    with FabricSession(spec, link_rate="100G", prop_delay_us=0.1, tdf=tdf,
                       lock_timeout_s=600) as s:
        print("\n".join(s.describe()))
        for scheme in ("ecmp", "random", "wam"):
            s.set_scheme(scheme)
            print(f"{scheme:7s}", s.collective("alltoall", "384KB", out_dir=out / scheme).summary())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--emulated", action="store_true", help="on Mininet (root)")
    ap.add_argument("--tdf", default="auto", help="--emulated: time dilation")
    ap.add_argument("--out", type=Path, default=Path("results/examples/custom_topology"))
    a = ap.parse_args(argv)
    spec = asymmetric_leaf_spine()
    print(f"{spec.name}: {len(spec.switches)} switches, {len(spec.hosts)} hosts, "
          f"{len(spec.links)} links")
    if a.emulated:
        on_emulated_fabric(spec, a.tdf if a.tdf == "auto" else float(a.tdf), a.out)
    else:
        on_simulator(spec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
