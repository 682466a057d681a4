"""What a configuration value measures (its dimension), declared on the dataclass field.

Time dilation (model/dilation.py) scales every fabric duration × TDF and every rate ÷ TDF
on the emulation; it finds them by this declaration, never by name, so a knob cannot be
forgotten. The declaration lives at the bottom layer because the configs that carry it are at
every layer: the transport's and the host agent's (traffic/), the experiments' (experiments/).
"""

from __future__ import annotations

import dataclasses
from enum import StrEnum
from typing import Any


class Dim(StrEnum):
    """What a config value measures, hence how dilation treats it."""

    TIME = "time"
    """A fabric duration (timer, gap, period): × TDF on the emulation."""
    RATE = "rate"
    """A fabric rate (link, pacing): ÷ TDF on the emulation."""
    WALL = "wall"
    """A bound or mechanism of the machine, not of the fabric (lock wait, start-up margin, hard
    timeout, the agents' start barrier): never scaled."""
    COUNT = "count"
    """A number of something time-like (RTOs, packets of a gap): a ratio, the same in any time
    unit, never scaled."""
    PARAMS = "params"
    """A mapping (or sorted (name, value) pairs) whose ``*_us`` / ``*_ms`` / ``*_s`` keys are
    fabric durations (a scheme's or a congestion control's parameters, a path policy)."""


DIM = "dim"
"""The field-metadata key that holds a field's Dim."""


def dim(d: Dim, default: Any = dataclasses.MISSING, **kw: Any) -> Any:
    """A dataclass field of dimension ``d``."""
    if default is dataclasses.MISSING and "default_factory" not in kw:
        return dataclasses.field(metadata={DIM: d}, **kw)
    return dataclasses.field(default=default, metadata={DIM: d}, **kw)
