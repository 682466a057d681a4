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
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from common.cachedir import cache_path as common_cache_path
from common.jsontypes import JsonObject

from .owner import give_back


@dataclass(frozen=True, slots=True)
class CalibrationEntry:
    """One cached calibration: the TDF that keeps a fabric of ``fabric_rate`` link-bound here
    (``valid`` False: no rate gave a valid run; the slowest that completed, expect invalid
    runs), the links' emulated rate, when (``measured``, time.time()), the load average then,
    the workload probed and the ramp's probe rows (the guard's columns, as runs.csv has them)."""

    tdf: float
    valid: bool = True
    fabric_rate: str | None = None
    emulated_mbps: float | None = None
    measured: float = 0.0
    load: tuple[float, ...] | None = None
    workload: str | None = None
    ramp: list[dict[str, Any]] = field(default_factory=list)
    stepped_back: str | None = None
    """Set when an experiment's runs turned invalid at the TDF calibration chose and the
    runner stepped back (experiments/stepback.py): from which TDF and why. ``tdf`` is then
    the rate it stepped back to, so the next experiment starts there."""

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: object, where: str = "calibration entry") -> CalibrationEntry:
        """An entry as :meth:`to_dict` stored it; ValueError (one line) when it is not one."""
        if not isinstance(d, Mapping):
            raise ValueError(f"{where}: expected an object, got {type(d).__name__}")
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        tdf = d.get("tdf")
        if isinstance(tdf, bool) or not isinstance(tdf, int | float) or not tdf >= 1:
            raise ValueError(f"{where}: tdf must be a number >= 1, got {tdf!r}")
        load = d.get("load")
        ramp = d.get("ramp", [])
        if not isinstance(ramp, list):
            raise ValueError(f"{where}: ramp is not a list")
        stepped = d.get("stepped_back")
        try:
            return cls(float(tdf), bool(d.get("valid", True)), d.get("fabric_rate"),
                       None if d.get("emulated_mbps") is None else float(d["emulated_mbps"]),
                       float(d.get("measured", 0.0)),
                       None if load is None else tuple(float(x) for x in load),
                       d.get("workload"), ramp, None if stepped is None else str(stepped))
        except (TypeError, ValueError):
            raise ValueError(f"{where}: a number that is not one") from None


def cache_path() -> Path:
    return common_cache_path("calibration.json")


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
    """The cache file as stored (key -> entry, not yet parsed); {} when absent or unreadable."""
    try:
        data = json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def store(key: str, entry: CalibrationEntry) -> None:
    p = cache_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    data = read_cache()
    data[key] = entry.to_dict()
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(p)
    give_back(p, upto=p.parent)   # a cache in a sudo user's home stays theirs


def entry(key: str) -> CalibrationEntry | None:
    """The cached entry under ``key``; None when there is none or it does not parse (an
    entry of another version: calibrating again replaces it)."""
    d = read_cache().get(key)
    try:
        return None if d is None else CalibrationEntry.from_dict(d, key)
    except ValueError:
        return None


def lookup(topology: str, target: str, fabric_rate: str | None = None) \
        -> CalibrationEntry | None:
    """This machine's entry for a topology and target (any fabric rate when None: the most
    recently measured one)."""
    prefix = f"{machine_id()}|{topology}|{target}|"
    if fabric_rate is not None:
        return entry(prefix + fabric_rate)
    mine = [e for k in read_cache() if k.startswith(prefix) and (e := entry(k)) is not None]
    return max(mine, key=lambda e: e.measured, default=None)
