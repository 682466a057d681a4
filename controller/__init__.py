"""Fabric controller: per-switch P4Runtime connections, routing, LB schemes, control loops.

``FabricController`` (controller.fabric) is the API experiment scripts use; routing and schemes
are pure and shared with the simulator (``controller.pipeline_target.install_on_pipeline``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fabric import ControlEvent, FabricController

__all__ = ["ControlEvent", "FabricController"]


def __getattr__(name: str) -> Any:
    # lazy: routing/schemes users (the simulator, tests) need not import grpc and pandas
    if name in __all__:
        from . import fabric

        return getattr(fabric, name)
    raise AttributeError(name)
