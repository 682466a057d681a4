"""The one error of the BMv2 JSON front end."""

from __future__ import annotations

from p4switch.errors import P4CompileError


class Bmv2JsonError(P4CompileError):
    """BMv2 JSON that is malformed, or holds a construct p4switch's IR cannot run. ``where``
    names the JSON object (``actions[3] "MyIngress.fwd"``, ``pipelines["ingress"] table
    "t"``), so the text says what to look at: ``<file>: <where>: error: <what>``. A
    ``P4CompileError``, so whatever reports a program p4switch refuses reports this too."""

    def __init__(self, where: str, message: str, file: str = "") -> None:
        super().__init__(None, message)
        self.where, self.file = where, file

    def located(self, file: str) -> Bmv2JsonError:
        self.file = file
        return self

    def __str__(self) -> str:
        parts = [p for p in (self.file, self.where) if p]
        return ": ".join(parts + [f"error: {self.message}"])
