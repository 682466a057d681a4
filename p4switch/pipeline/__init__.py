"""v1model pipeline of p4switch: ``Pipeline(program)`` implements ``api.PipelineAPI``.

Importing the package loads nothing: ``api`` (the contract) is standard library alone, and
``Pipeline`` with its code generators loads on first use. The v1model externs are declared into
the extern registry when the first pipeline (or P4Info) is built (``v1model.declare_once``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .emit import BuildError
    from .pipeline import Pipeline

_LAZY = {"Pipeline": "p4switch.pipeline.pipeline", "BuildError": "p4switch.pipeline.emit"}

__all__ = ["BuildError", "Pipeline"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
