"""What every part of the elaborator starts from: the base its mixins type-check against (the
composed ``Elaborator``, for the type checker only) and the two IR types they all build."""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4switch import ir

if TYPE_CHECKING:  # pragma: no cover
    from p4switch.frontend.elaborate import Elaborator

    _Base = Elaborator
else:
    _Base = object

BOOL = ir.BoolType()
BIT32 = ir.BitsType(32)
