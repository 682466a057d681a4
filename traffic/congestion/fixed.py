"""``none``: no congestion control — the transport's fixed window, for comparison."""

from __future__ import annotations

from dataclasses import dataclass

from .base import CcContext, CongestionControl, register


@dataclass(frozen=True)
class FixedParams:
    """``window``: packets in flight (0: the transport's window, ``TransportConfig.window``)."""

    window: int = 0


@register
class FixedWindow(CongestionControl):
    name = "none"
    uses_ecn = False
    Params = FixedParams

    def __init__(self, params: FixedParams, ctx: CcContext) -> None:
        super().__init__(params, ctx)
        self._w = float(min(params.window, ctx.max_window) if params.window else ctx.max_window)

    @property
    def window(self) -> float:
        return self._w
