"""`make demo`: the fabric program on the real p4switch, one load-balancing scheme after another.

What it shows, end to end and without root: p4src/fabric.p4 is compiled by p4switch's front end;
the ``p4switch`` command (the same binary a Mininet fabric runs) forwards a pcap of AI-collective
traffic — a few large, low-entropy flows, as a ring AllReduce produces — through a 4-member
load-balancing group; the controller contract of p4src/README.md is installed from an entries
file; and the per-member load shows why hashing a handful of elephant flows (ECMP, flowlet)
leaves links idle while spraying (random, rotation, Whack-a-Mole) evens them out.

The switch runs in batch mode (pcap ports, ``--stop-after-input``): frames arrive back to back, so
the gaps flowlet switching sees are the switch's own processing time between a flow's packets
(timeout 200 µs here); the fabric experiments with real link timing come with the Mininet fabric.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from model.entries import IPV4_LPM, K_DST, Entry
from model.schemes import (
    DstRotation,
    Ecmp,
    Flowlet,
    GroupContext,
    RandomSpray,
    Scheme,
    WhackAMole,
)
from p4switch import LpmMatch, P4CompileError, PcapWriter, compile_file, read_pcap

ROOT = Path(__file__).resolve().parents[1]
FABRIC_P4 = ROOT / "p4src" / "fabric.p4"
HOST_PORT = 5
MEMBER_PORTS = (1, 2, 3, 4)
GROUP = 1
ROCE_PORT = 4791


@dataclass(frozen=True)
class DemoScheme:
    """One row of the demo: a label and the registry scheme the controller would install."""

    name: str
    scheme: Scheme

    @property
    def wam_log2_m(self) -> int:
        return self.scheme.log2_m if isinstance(self.scheme, WhackAMole) else 0


SCHEMES = (
    DemoScheme("ECMP (crc32)", Ecmp(seed=0)),
    DemoScheme("flowlet", Flowlet(timeout_us=200, seed=0)),
    DemoScheme("random spray", RandomSpray()),
    DemoScheme("dst rotation", DstRotation()),
    DemoScheme("Whack-a-Mole", WhackAMole(log2_m=4, a=3, b=5)),
)


def flows(n_flows: int) -> list[tuple[str, str, int]]:
    """Ring-AllReduce-like elephants: rank i sends to rank i+1, one QP (source port) each."""
    return [
        (f"10.0.1.{i + 1}", f"10.0.2.{(i + 1) % n_flows + 1}", 49152 + i) for i in range(n_flows)
    ]


def write_traffic(path: Path, n_flows: int, packets_per_flow: int, seed: int) -> int:
    """Interleave the flows packet by packet (all ranks send at once, as in a collective step),
    in a seeded random order per round: NICs are not in lock-step."""
    frames = [
        bytes(
            Ether(src="00:00:00:00:01:01", dst="02:aa:00:00:00:05")
            / IP(src=src, dst=dst, ttl=64)
            / UDP(sport=sport, dport=ROCE_PORT)
            / (b"\x00" * 64)
        )
        for src, dst, sport in flows(n_flows)
    ]
    rng = random.Random(seed)
    with PcapWriter(path) as pcap:
        for _ in range(packets_per_flow):
            for frame in rng.sample(frames, len(frames)):
                pcap.write(frame)
    return len(frames) * packets_per_flow


def entries(scheme: DemoScheme) -> str:
    """The controller contract of p4src/README.md for one route to a 4-member group, as the
    scheme registry builds it, written as a p4switch ``--entries`` file."""
    group = GroupContext(GROUP, MEMBER_PORTS, tuple(0x020000000000 + p for p in MEMBER_PORTS))
    route = Entry.make(IPV4_LPM, {K_DST: LpmMatch(0x0A000200, 24)}, "MyIngress.set_lb_group",
                       {"group_id": GROUP, "dst_id": 7})
    return "\n".join(e.to_stf() for e in [route, *scheme.scheme.entries(group)]) + "\n"


def run_switch(scheme: DemoScheme, traffic: Path, workdir: Path) -> dict[int, Counter[str]]:
    """Run the real ``p4switch`` command in batch mode; return per-port, per-flow packet counts."""
    out = workdir / scheme.name.split()[0].lower()
    entries_file = workdir / f"{out.name}.entries"
    entries_file.write_text(entries(scheme))
    ports = [f"{HOST_PORT}@pcap:{traffic}"] + [f"{p}@pcap:" for p in MEMBER_PORTS]
    cmd = [sys.executable, "-m", "p4switch", str(FABRIC_P4), "--no-grpc", "--log-level", "warn"]
    cmd += [arg for port in ports for arg in ("-i", port)]
    cmd += ["--entries", str(entries_file), "--pcap", str(out), "--stop-after-input"]
    subprocess.run(cmd, check=True, timeout=300)
    per_port: dict[int, Counter[str]] = {}
    for port in MEMBER_PORTS:
        counts: Counter[str] = Counter()
        out_pcap = out / f"{port}_out.pcap"
        if out_pcap.exists():
            for _, data in read_pcap(out_pcap):
                counts[IP(data[14:]).src] += 1
        per_port[port] = counts
    return per_port


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flows", type=int, default=8, help="elephant flows (default 8)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the interleaving (default 1)")
    parser.add_argument(
        "--packets-per-flow", type=int, default=500, help="packets per flow (default 500)"
    )
    args = parser.parse_args(argv)
    if args.flows < 1 or args.packets_per_flow < 1:
        parser.error("--flows and --packets-per-flow must be at least 1")
    console = Console()

    start = time.perf_counter()
    try:
        program = compile_file(FABRIC_P4)
    except P4CompileError as err:
        console.print(str(err), markup=False)
        return 2
    tables = sum(len(c.tables) for c in program.controls.values())
    console.print(
        f"[bold]compiled[/] {FABRIC_P4.relative_to(ROOT)}: {tables} tables, "
        f"{len(program.actions)} actions in {1000 * (time.perf_counter() - start):.0f} ms"
    )

    table = Table(title=f"{args.flows} elephant flows through a 4-member group on p4switch")
    for col in ("scheme", *(f"port {p}" for p in MEMBER_PORTS), "max/mean", "links per flow"):
        table.add_column(col, justify="right" if col != "scheme" else "left")
    with tempfile.TemporaryDirectory(prefix="p4fabric-demo-") as tmp:
        workdir = Path(tmp)
        traffic = workdir / "collective.pcap"
        total = write_traffic(traffic, args.flows, args.packets_per_flow, args.seed)
        console.print(f"traffic: {total} packets, {args.flows} flows interleaved (UDP {ROCE_PORT})")
        for scheme in SCHEMES:
            with console.status(f"running p4switch with {scheme.name} ..."):
                per_port = run_switch(scheme, traffic, workdir)
            loads = [sum(per_port[p].values()) for p in MEMBER_PORTS]
            mean = sum(loads) / len(loads)
            spread = [
                sum(1 for p in MEMBER_PORTS if per_port[p][src]) for src, _, _ in flows(args.flows)
            ]
            table.add_row(
                scheme.name,
                *(str(n) for n in loads),
                f"{max(loads) / mean:.2f}" if mean else "-",
                f"{min(spread)}-{max(spread)}" if min(spread) != max(spread) else str(spread[0]),
            )
            if sum(loads) != total:
                console.print(f"[red]{scheme.name}: {total - sum(loads)} packets lost[/]")
    console.print(table)
    console.print(
        "max/mean 1.00 is a perfectly even split; 4.00 would be everything on one link. "
        "'links per flow': how many links each flow was spread over (spraying reorders)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
