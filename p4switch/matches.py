"""The match values of a table entry's key fields, one dataclass per P4 match kind.

A leaf of the standard library alone: the fabric's pure models (``model.entries``) build
entries from these without loading the pipeline, and the pipeline, the P4Runtime server and
the controller's codec read the same types.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExactMatch:
    value: int


@dataclass(frozen=True)
class LpmMatch:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class TernaryMatch:
    value: int
    mask: int


@dataclass(frozen=True)
class RangeMatch:
    low: int
    high: int


@dataclass(frozen=True)
class OptionalMatch:
    """An ``optional`` key given a value (an omitted optional key is a wildcard)."""

    value: int


MatchValue = (
    ExactMatch
    | LpmMatch
    | TernaryMatch
    | RangeMatch
    | OptionalMatch
)
