"""Compile errors of the P4 front end: ``P4CompileError`` and ``unsupported`` live in
``p4switch.errors`` (the pipeline raises them too and must not import the front end); they are
re-exported here so front-end modules and existing callers keep their import."""

from __future__ import annotations

from p4switch.errors import P4CompileError, unsupported

__all__ = ["P4CompileError", "unsupported"]
