"""The calibrated link rate of this machine: the cache ``make calibrate`` fills
(experiments/calibrate.py) and ``make topo`` reads for its default ``--bw``.

An entry says: on this machine (host name, cores, CPU model), this topology and switch target
keep a fabric of ``fabric_rate`` link-bound when it runs ``tdf`` times slower, i.e. with links
at ``emulated_mbps``. Stored as JSON in ``~/.cache/p4fabric/calibration.json`` (``$XDG_CACHE_HOME``
honoured); a different machine, topology or target finds nothing and calibrates again.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from .owner import give_back


def cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "p4fabric" / "calibration.json"


def machine_id() -> str:
    """Host name, core count and CPU model (a resized VM calibrates again)."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.node()}/{os.cpu_count()}cpu/{model}"


def topology_key(kind: str, k: int = 4, leaves: int = 4, spines: int = 2,
                 hosts_per_leaf: int = 2, uplinks: int = 1) -> str:
    if kind == "fattree":
        return f"fattree-k{k}"
    return f"leafspine-{leaves}x{spines}x{hosts_per_leaf}x{uplinks}"


def cache_key(topology: str, target: str, fabric_rate: str) -> str:
    return f"{machine_id()}|{topology}|{target}|{fabric_rate}"


def read_cache() -> dict[str, Any]:
    try:
        data = json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def store(key: str, entry: dict[str, Any]) -> None:
    p = cache_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    data = read_cache()
    data[key] = entry
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(p)
    give_back(p, upto=p.parent)   # a cache in a sudo user's home stays theirs


def lookup(topology: str, target: str, fabric_rate: str | None = None) -> dict[str, Any] | None:
    """This machine's entry for a topology and target (any fabric rate when None: the most
    recently measured one)."""
    prefix = f"{machine_id()}|{topology}|{target}|"
    data = read_cache()
    if fabric_rate is not None:
        return data.get(prefix + fabric_rate)
    mine = [e for k, e in data.items() if k.startswith(prefix) and isinstance(e, dict)]
    return max(mine, key=lambda e: e.get("measured", 0), default=None)
