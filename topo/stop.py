"""``python -m topo.stop [--force]`` (``make stop``): undo what crashed fabrics left behind.

Reads only the run dirs' records under /tmp/p4fabric (pid files with start times, the
root-namespace veths the fabric created) and removes exactly those; a fabric whose launcher
is still alive is left alone unless --force. Never kills by name.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from .rundir import RUN_ROOT, run_dirs, stop_leftovers


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m topo.stop", description=__doc__)
    p.add_argument("--force", action="store_true",
                   help="also stop fabrics whose launcher is still running")
    p.add_argument("--remove-dirs", action="store_true",
                   help="then delete the run dirs of stopped fabrics (make clean)")
    p.add_argument("--root", type=Path, default=RUN_ROOT, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if not a.root.exists():
        print("make stop: nothing to stop (no run dirs)")
        return 0
    if os.geteuid() != 0:
        p.error("needs root to stop fabric processes and delete their interfaces")
    n = stop_leftovers(a.root, force=a.force)
    print(f"make stop: removed {n} leftover process(es)/interface(s)")
    if a.remove_dirs:
        gone = [rd for rd in run_dirs(a.root) if not rd.owner_alive()]
        for rd in gone:
            shutil.rmtree(rd.path, ignore_errors=True)
        print(f"make clean: removed {len(gone)} run dir(s) under {a.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
