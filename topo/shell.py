"""``python -m topo.shell SW`` (``make shell SW=edge1``): p4runtime-shell on one fabric switch.

Finds the switch's gRPC address and device id in the newest run dir's fabric.json. The shell
does not push a pipeline (that would wipe the controller's entries): it reads the P4Info from
the switch, which is the one the run dir keeps in p4info.txtpb. It joins with election id 0,0,
below the controller's, so it is a backup with read access and never steals primary.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .rundir import RunDir, latest_run_dir


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m topo.shell", description=__doc__)
    p.add_argument("switch", help="switch name, e.g. edge1")
    p.add_argument("--run-dir", type=Path, help="fabric run dir (default: the newest)")
    p.add_argument("--election-id", default="0,0", help="HIGH,LOW (default 0,0: backup)")
    a = p.parse_args(argv)
    rd = RunDir(a.run_dir) if a.run_dir else latest_run_dir()
    if rd is None or not (rd.path / "fabric.json").exists():
        p.error("no fabric run dir found under /tmp/p4fabric (is `make topo` running?)")
    switches = rd.manifest()["switches"]
    if a.switch not in switches:
        p.error(f"no switch {a.switch!r} in {rd.path.name} (have: {', '.join(switches)})")
    sw = switches[a.switch]
    info = rd.path / "p4info.txtpb"
    print(f"{a.switch}: {sw['grpc_addr']} device {sw['device_id']}"
          + (f"; P4Info also in {info}" if info.exists() else ""))
    from p4runtime_sh import shell

    sys.argv = ["p4runtime-shell", "--grpc-addr", sw["grpc_addr"], "--device-id",
                str(sw["device_id"]), "--election-id", a.election_id]
    shell.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
