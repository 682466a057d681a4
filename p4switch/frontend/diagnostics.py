"""Front-end warnings: what p4c accepts with a warning, p4switch accepts with one too, as a
Python warning (``P4CompileWarning``) whose text is ``file:line:col: warning: message`` -- the
CLI prints it on stderr once; tests catch it with ``pytest.warns``."""

from __future__ import annotations

import warnings

from p4switch import ir


class P4CompileWarning(UserWarning):
    """A located warning about a P4 program that is still compiled."""


#: warnings issued so far in this process: a compile that issued one is not cached (a cache hit
#: would not repeat it)
issued = 0


def warn(loc: ir.SourceLoc | None, message: str) -> None:
    global issued
    issued += 1
    where = f"{loc}: " if loc is not None else ""
    warnings.warn(P4CompileWarning(f"{where}warning: {message}"), stacklevel=3)
