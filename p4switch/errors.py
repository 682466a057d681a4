"""Located compile errors, shared by the front end and the pipeline builder.

A program can be refused while it is parsed and elaborated (``p4switch.frontend``) or while
the pipeline compiles it (``p4switch.pipeline``); both report ``file:line:col: error: message``
the same way, so the error type lives here, below both, and the pipeline imports nothing from
the front end. Every error points at the original source (file, line, column, after include
resolution) and quotes the offending line with a caret, as C compilers do, so a user can fix a
program without reading p4switch's code.
"""

from __future__ import annotations

from p4switch import ir


class P4CompileError(Exception):
    """A P4 program p4switch rejects: ``str()`` is ``file:line:col: error: message``,
    then the source line and a caret under the column."""

    def __init__(self, loc: ir.SourceLoc | None, message: str, source_line: str | None = None):
        super().__init__(message)
        self.loc = loc
        self.message = message
        self.source_line = source_line

    def __str__(self) -> str:
        where = str(self.loc) if self.loc is not None else "<unknown>"
        text = f"{where}: error: {self.message}"
        if self.source_line is not None and self.loc is not None:
            line = self.source_line.rstrip("\n").expandtabs(1)
            caret = " " * max(self.loc.col - 1, 0) + "^"
            text += f"\n{line}\n{caret}"
        return text


def unsupported(construct: str) -> str:
    """The standard message for a construct p4switch deliberately does not implement."""
    return f"{construct} is not supported by p4switch"
