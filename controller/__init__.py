"""Fabric controller: per-switch P4Runtime connections, control loops and ``FabricController``,
the API experiment scripts use.

What the controller computes is pure and lives in ``model`` (routing, entries, schemes); this
package is the part that talks to switches (gRPC) and runs loops (threads, clocks).
"""

from __future__ import annotations

from .fabric import ControlEvent, FabricController
from .tna_fabric import SwitchDevice

__all__ = ["ControlEvent", "FabricController", "SwitchDevice"]
