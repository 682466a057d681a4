"""Time dilation: an experiment written in the units of the fabric it models, run slower.

A 100 Gb/s fabric does not fit in two CPU cores, but the same fabric slowed down TDF times
does: every link rate ÷ TDF, every timer, gap and period × TDF (transport, flowlet timeouts
written into the switches, control loops, sampler), and every measured time ÷ TDF on the way
back. Bytes, packets and ratios do not change. The simulator runs the same file at TDF 1.

Which knob is which is declared once, on the config field itself (``metadata={"dim": ...}``),
so :func:`dilate` is one generic walk and cannot forget a knob: a field whose name looks
time-like but carries no dimension fails the test that enumerates them all
(tests/experiments/test_dilation.py). ``Dim.WALL`` marks the few bounds that belong to the
machine, not to the fabric (how long to wait for the fabric lock, for interpreters to start, a
hard run timeout): they are never scaled, and say so.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from model.dims import DIM, Dim, dim

__all__ = ["DIM", "Dim", "Knob", "dilate", "dim", "format_rate", "knobs", "parse_rate",
           "to_fabric_time"]


TIME_KEY = re.compile(r"(_us|_ms|_s)$")
"""Keys of a PARAMS mapping that are durations."""
TIME_LIKE = re.compile(r"((_us|_ms|_s|_ns)$|period|timeout|delay|gap|rto|margin|rate|bw|gbps|mbps|"
                       r"(^|_)(tick|linger|hold|credit|interval)|_at$)", re.IGNORECASE)
"""Field names that look like a time or a rate: each must declare its Dim."""
RESULT_TIME_KEYS = frozenset({"start", "finish", "posted", "compute_start", "fct", "cct",
                              "duration", "time", "t", "iteration_s", "srtt", "rto"})
"""Keys of the agents' records (traffic.metrics) and the samples that hold seconds."""


def parse_rate(text: str | float) -> float:
    """``"100G"``, ``"10M"``, ``"2.5e6"`` -> bits/s (ValueError otherwise)."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    t = str(text).strip().upper().removesuffix("BPS").removesuffix("BIT/S")
    units = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    if t and t[-1] in units:
        return float(t[:-1]) * units[t[-1]]
    return float(t)


def format_rate(bps: float) -> str:
    """bits/s -> the shortest of ``"100G"``, ``"2.5M"``, ``"1500"`` (what ``parse_rate``
    reads back exactly)."""
    for unit, f in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if bps >= f:
            return f"{bps / f:.10g}{unit}"
    return f"{bps:.10g}"


def _scale(value: Any, d: Dim, tdf: float) -> Any:
    if value is None:
        return None
    if d is Dim.TIME:
        return type(value)(value * tdf) if isinstance(value, int) else value * tdf
    if d is Dim.RATE:
        if isinstance(value, str):
            return format_rate(parse_rate(value) / tdf)
        return value / tdf
    if d is Dim.PARAMS:
        if isinstance(value, tuple):   # sorted (name, value) pairs (TransportConfig.cc_params)
            return tuple((k, _scale_param(v, tdf) if TIME_KEY.search(k) else v)
                         for k, v in value)
        return {k: (_scale_param(v, tdf) if TIME_KEY.search(k) else v)
                for k, v in value.items()}
    return value


def _scale_param(v: Any, tdf: float) -> Any:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return v
    return round(v * tdf) if isinstance(v, int) else v * tdf


def dilate(obj: Any, tdf: float) -> Any:
    """A copy of a config dataclass (and everything nested in it) with every TIME field × tdf,
    every RATE field ÷ tdf, the duration keys of PARAMS mappings × tdf; WALL and undeclared
    fields as they are. ``tdf == 1`` returns ``obj`` itself."""
    if tdf == 1:
        return obj
    if tdf <= 0:
        raise ValueError(f"TDF must be > 0, got {tdf}")
    return _dilate(obj, tdf)


def _dilate(obj: Any, tdf: float) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            d = f.metadata.get(DIM)
            if d is not None:
                changes[f.name] = _scale(v, Dim(d), tdf)
            elif dataclasses.is_dataclass(v) or isinstance(v, tuple):
                changes[f.name] = _dilate(v, tdf)
        return dataclasses.replace(obj, **changes) if changes else obj
    if isinstance(obj, tuple):
        return tuple(_dilate(x, tdf) for x in obj)
    return obj


@dataclass(frozen=True)
class Knob:
    """One dimensioned value of a config tree (``path`` as in error messages)."""

    path: str
    dim: Dim | None
    value: Any


def knobs(obj: Any, path: str = "") -> Iterator[Knob]:
    """Every field of a config tree that has a dimension or a time-like name (PARAMS mappings
    expanded key by key), depth first: what dilation touches, and what it must not miss."""
    if not (dataclasses.is_dataclass(obj) and not isinstance(obj, type)):
        return
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        p = f"{path}.{f.name}" if path else f.name
        d = f.metadata.get(DIM)
        if d is not None and Dim(d) is Dim.PARAMS:
            for k, x in (dict(v) if isinstance(v, tuple) else v or {}).items():
                if TIME_KEY.search(k):
                    yield Knob(f"{p}.{k}", Dim.TIME, x)
                elif TIME_LIKE.search(k):   # e.g. "timeout" without a unit: cannot be scaled
                    yield Knob(f"{p}.{k}", None, x)
        elif d is not None:
            yield Knob(p, Dim(d), v)
        elif dataclasses.is_dataclass(v):
            yield from knobs(v, p)
        elif isinstance(v, tuple) and v and dataclasses.is_dataclass(v[0]):
            for i, x in enumerate(v):
                yield from knobs(x, f"{p}[{i}]")
        elif TIME_LIKE.search(f.name):
            yield Knob(p, None, v)


def to_fabric_time(record: Any, tdf: float) -> Any:
    """An agent record or sample (nested dicts/lists from traffic.metrics JSON) with every
    seconds-valued key (RESULT_TIME_KEYS) ÷ tdf: wall seconds of the emulation -> fabric
    seconds. Absolute timestamps are divided too, so differences stay consistent."""
    if tdf == 1:
        return record
    if isinstance(record, dict):
        return {k: (v / tdf if k in RESULT_TIME_KEYS and isinstance(v, int | float)
                    and not isinstance(v, bool) else to_fabric_time(v, tdf))
                for k, v in record.items()}
    if isinstance(record, list):
        return [to_fabric_time(x, tdf) for x in record]
    return record
