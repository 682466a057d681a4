"""A ratchet on untyped records (issue 34 item 6): ``dict[str, Any]`` in non-test code may only
go down. A record that crosses a module is a dataclass (typed fields, ``to_dict``/``from_dict``
at the file or wire edge); what stays is JSON and YAML at the edge before it is parsed, wire
messages (the agent and switch control sockets), keyed maps and ``**kwargs`` plumbing. When a
change lowers the count, lower ``LIMIT`` with it; a change that needs a new one says why in
review. Its loose cousins (``dict[str, object]``, ``Mapping[str, Any]``) count too, so that
a record does not merely change its spelling."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANY_RECORD = re.compile(r"dict\[str, Any\]")
LOOSE = re.compile(r"(?:dict\[str, object\]|Dict\[str, Any\]|Mapping\[str, Any\])")
LIMIT = 145
"""Lines with ``dict[str, Any]`` outside tests/ (``grep -rn 'dict\\[str, Any\\]'
--include=*.py . | grep -v tests/ | wc -l``)."""
LOOSE_LIMIT = 14


def _lines(pattern: re.Pattern[str]) -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    out = []
    for f in listed:
        p = ROOT / f
        if "tests/" in f or not p.exists():
            continue
        out += [f"{f}:{i}" for i, line in enumerate(p.read_text().splitlines(), 1)
                if pattern.search(line)]
    return out


def test_untyped_records_do_not_come_back() -> None:
    got = _lines(ANY_RECORD)
    assert len(got) <= LIMIT, (
        f"{len(got)} lines with dict[str, Any] (limit {LIMIT}): a record that crosses a "
        "module is a dataclass; see this file's docstring")
    loose = _lines(LOOSE)
    assert len(loose) <= LOOSE_LIMIT, f"{len(loose)} loose record types: " + ", ".join(loose)


def test_the_count_sees_a_record() -> None:
    assert ANY_RECORD.search("def f(row: dict[str, Any]) -> None:")
    assert not ANY_RECORD.search("def f(row: dict[str, int]) -> None:")
    assert LOOSE.search("x: Mapping[str, Any]") and LOOSE.search("y: dict[str, object] = {}")
