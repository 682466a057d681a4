"""A fabric's run directory and what ``make stop`` needs to undo a crashed fabric.

``/tmp/p4fabric/<spec name>-<launcher pid>/`` holds per-switch logs, pcaps and control sockets,
and the records of everything the fabric created: ``pids/<node>.pid`` (pid and kernel start
time, so a recycled pid is never killed), ``intfs.txt`` (root-namespace interfaces it made) and
``fabric.json`` (switch names, gRPC addresses, device ids, P4Info path for ``make shell``).
:func:`stop_leftovers` reads only these records: it never touches what the fabric did not make.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

RUN_ROOT = Path("/tmp/p4fabric")


def proc_start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may contain spaces: split after its closing parenthesis
    return int(stat.rsplit(")", 1)[1].split()[19])


def alive(pid: int, start: int | None) -> bool:
    """The process that was recorded (same pid and start time) still runs (a zombie that
    its parent has not reaped yet counts as gone)."""
    now = proc_start_time(pid)
    if now is None or (start is not None and now != start):
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@dataclass
class RunDir:
    path: Path

    @classmethod
    def create(cls, name: str, path: Path | str | None = None) -> RunDir:
        p = Path(path) if path else RUN_ROOT / f"{name}-{os.getpid()}"
        (p / "pids").mkdir(parents=True, exist_ok=True)
        rd = cls(p)
        rd.record_pid("launcher", os.getpid())
        return rd

    # ---- records --------------------------------------------------------------------------------
    def record_pid(self, node: str, pid: int) -> None:
        (self.path / "pids").mkdir(parents=True, exist_ok=True)
        (self.path / "pids" / f"{node}.pid").write_text(f"{pid} {proc_start_time(pid) or 0}\n")

    def forget_pid(self, node: str) -> None:
        (self.path / "pids" / f"{node}.pid").unlink(missing_ok=True)

    def pids(self) -> dict[str, tuple[int, int | None]]:
        out: dict[str, tuple[int, int | None]] = {}
        for f in sorted((self.path / "pids").glob("*.pid")):
            parts = f.read_text().split()
            if parts and parts[0].isdigit():
                start = int(parts[1]) if len(parts) > 1 and parts[1] != "0" else None
                out[f.stem] = (int(parts[0]), start)
        return out

    def record_intfs(self, names: list[str]) -> None:
        (self.path / "intfs.txt").write_text("".join(f"{n}\n" for n in names))

    def intfs(self) -> list[str]:
        f = self.path / "intfs.txt"
        return f.read_text().split() if f.exists() else []

    def write_manifest(self, data: dict) -> None:
        (self.path / "fabric.json").write_text(json.dumps(data, indent=1))

    def manifest(self) -> dict:
        return json.loads((self.path / "fabric.json").read_text())

    def owner_alive(self) -> bool:
        rec = self.pids().get("launcher")
        return rec is not None and alive(*rec)


def run_dirs(root: Path = RUN_ROOT) -> list[RunDir]:
    return [RunDir(p) for p in sorted(root.glob("*")) if (p / "pids").is_dir()]


def latest_run_dir(root: Path = RUN_ROOT) -> RunDir | None:
    """The newest run dir with a manifest (what ``make shell`` connects to)."""
    dirs = [d for d in run_dirs(root) if (d.path / "fabric.json").exists()]
    return max(dirs, key=lambda d: (d.owner_alive(), (d.path / "fabric.json").stat().st_mtime),
               default=None)


def kill_recorded(procs: list[tuple[int, int | None]], grace: float = 2.0) -> list[int]:
    """Stop the recorded processes that still run: SIGTERM and SIGHUP (Mininet's interactive
    helper shells ignore SIGTERM) to all at once, SIGKILL to those alive after ``grace`` s.
    Returns the pids that were alive."""
    live = [(pid, st) for pid, st in procs if alive(pid, st)]
    for pid, _ in live:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p, s) for p, s in live):
        time.sleep(0.05)
    for pid, st in live:
        if alive(pid, st):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return [pid for pid, _ in live]


def intf_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


def stop_leftovers(root: Path = RUN_ROOT, force: bool = False, log=print) -> int:
    """Undo what crashed fabrics left behind; returns how many things were removed.

    A run dir whose launcher is still alive belongs to a running fabric and is skipped unless
    ``force``. Deleting a root-namespace veth end removes its peer (and a Mininet host's
    namespace disappears with its shell, which is a recorded pid)."""
    removed = 0
    for rd in run_dirs(root):
        if rd.owner_alive() and not force:
            pid = rd.pids()["launcher"][0]
            log(f"{rd.path}: fabric still running (pid {pid}); skipped (FORCE=1 stops it)")
            continue
        recs = {node: rec for node, rec in rd.pids().items()
                if not (node == "launcher" and rec[0] == os.getpid())}
        killed = set(kill_recorded(list(recs.values())))
        for node, (pid, _start) in recs.items():
            if pid in killed:
                log(f"{rd.path.name}: killed {node} (pid {pid})")
                removed += 1
            rd.forget_pid(node)
        for name in rd.intfs():
            if intf_exists(name):
                subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)
                log(f"{rd.path.name}: deleted interface {name}")
                removed += 1
        (rd.path / "intfs.txt").unlink(missing_ok=True)
    return removed
