"""Write one Tofino switch's fabric state over P4Runtime: ``python -m controller.tofino``.

The switch already runs p4src/tna/fabric.p4 (loaded by its own software: docs/tofino.md); this
computes the fabric's entries for the switch it is told it is, translates them for the TNA
program (``model.tna``), encodes them with the P4Info ``make tofino`` wrote and writes them with
the controller's P4Runtime client. ``--dry-run`` stops before connecting and prints what it
would write. Errors are one line.

    python -m controller.tofino --switch edge1 --addr 10.0.0.5:9559 \\
        --p4info build/tofino/tofino/p4info.txtpb --scheme wam --port-map 1=128,2=136,3=144,4=152
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from model.routing import compute_fabric_entries
from model.schemes import DEFAULT_SCHEME, SCHEMES, scheme_from_name
from model.spec import FabricSpec, fat_tree, leaf_spine
from model.tna import CELL_BYTES, cells_per_packet, tna_entries

from .connection import SwitchConnection, SwitchError
from .p4rt_codec import P4Schema
from .tna_codec import install_updates

PROG = "python -m controller.tofino"


def port_map(text: str) -> dict[int, int]:
    """``"1=128,2=136"`` -> {1: 128, 2: 136} (spec port = device port)."""
    out: dict[int, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        spec_port, sep, dev = part.partition("=")
        try:
            if not sep:
                raise ValueError
            out[int(spec_port)] = int(dev)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected SPEC_PORT=DEV_PORT[,...], got {part!r}") from None
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--switch", required=True, help="which switch of the fabric this one is")
    p.add_argument("--p4info", type=Path, required=True,
                   help="the P4Info the Tofino compiler wrote (text format)")
    p.add_argument("--addr", help="the switch's P4Runtime server, host:port")
    p.add_argument("--device-id", type=int, default=1)
    p.add_argument("--topo", choices=("fattree", "leafspine"), default="fattree")
    p.add_argument("--k", type=int, default=4, help="fat-tree arity")
    p.add_argument("--scheme", choices=sorted(SCHEMES), default=DEFAULT_SCHEME)
    p.add_argument("--port-map", type=port_map, default=None,
                   help="spec port -> device port, e.g. 1=128,2=136 (default: the same numbers)")
    p.add_argument("--chip", choices=sorted(CELL_BYTES), default="tofino",
                   help="Tofino 1 or 2: ECN thresholds are written in its queue cells (80 or "
                   "176 bytes; one MTU frame = 19 or 9 cells)")
    p.add_argument("--dry-run", action="store_true", help="compute and encode, do not connect")
    return p


def build_spec(topo: str, k: int) -> FabricSpec:
    return fat_tree(k) if topo == "fattree" else leaf_spine()


def load_p4info(path: Path) -> p4info_pb2.P4Info:
    try:
        return text_format.Parse(path.read_text(), p4info_pb2.P4Info())
    except (OSError, text_format.ParseError) as e:
        raise ValueError(f"cannot read P4Info {path}: {e}") from None


def run(args: argparse.Namespace,
        connect: Callable[[str, str, int], SwitchConnection] = SwitchConnection) -> str:
    """Compute, encode and (unless --dry-run) write; returns the one-line summary."""
    spec = build_spec(args.topo, args.k)
    if args.switch not in spec.switches:
        raise ValueError(f"no switch {args.switch!r} in {spec.name} "
                         f"(e.g. {', '.join(list(spec.switches)[:3])})")
    fabric = compute_fabric_entries(spec, scheme_from_name(args.scheme))
    tna = tna_entries(fabric[args.switch].entries, args.switch, args.port_map,
                      cells_per_packet(args.chip))
    updates = install_updates(P4Schema(load_p4info(args.p4info)), tna)
    kinds = Counter(u.entity.WhichOneof("entity") for u in updates)
    what = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    if args.dry_run:
        return f"{args.switch}: would write {len(updates)} updates ({what})"
    if not args.addr:
        raise ValueError("--addr is needed to write (or use --dry-run)")
    conn = connect(args.switch, args.addr, args.device_id)
    try:
        conn.connect()
        conn.write(updates)
    finally:
        conn.close()
    return f"{args.switch}: wrote {len(updates)} updates ({what}) to {args.addr}"


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        print(run(args))
    except (ValueError, KeyError, SwitchError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"{PROG}: {msg}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
