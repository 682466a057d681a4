"""Every ``# type: ignore`` in the repository names its error code and says why (issue 22:
mypy runs in ``make test``; an ignore is a claim the checker cannot verify, so it carries its
reason). The reason follows the ignore on its line (``# type: ignore[code]  # why``) or is
the comment on the line above. Comments are read with ``tokenize``, so the words inside a
string are not comments."""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IGNORE = re.compile(r"type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)")
CODES = re.compile(r"\[[a-z][a-z-]*(\s*,\s*[a-z][a-z-]*)*\]")
REASON = re.compile(r"^\s*#\s*\S")

OWNED_ELSEWHERE = (
    "traffic/agent.py",     # issue 19 item 5 (agent)
)
"""Files whose owners are still giving their ignores a reason this session: their ignores
need the code, not yet the reason; an owner removes its entry once its ignores have one."""


def ignores(text: str) -> list[tuple[int, str | None, str, str]]:
    """(line, codes or None, what follows the ignore, the comment on the line above) of each
    ``type: ignore`` comment of a Python source."""
    comments = {tok.start[0]: tok.string
                for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                if tok.type == tokenize.COMMENT}
    lines = text.splitlines()
    out = []
    for line, comment in sorted(comments.items()):
        m = IGNORE.search(comment)
        if m:
            alone = line >= 2 and lines[line - 2].lstrip().startswith("#")
            above = comments.get(line - 1, "") if alone else ""
            out.append((line, m.group("codes"), m.group("rest"), above))
    return out


def problems(text: str, *, need_reason: bool = True) -> list[str]:
    out = []
    for line, codes, rest, above in ignores(text):
        if codes is None or not CODES.fullmatch(codes):
            out.append(f"{line}: no error code (type: ignore[code])")
        elif need_reason and not REASON.match(rest) and not above:
            out.append(f"{line}: no reason (# type: ignore[code]  # why)")
    return out


def _python_files() -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [f for f in listed if (ROOT / f).exists()]


def test_every_type_ignore_has_a_code_and_a_reason() -> None:
    bad = []
    for f in _python_files():
        elsewhere = f.startswith(OWNED_ELSEWHERE)
        bad += [f"{f}:{p}" for p in problems((ROOT / f).read_text(), need_reason=not elsewhere)]
    assert not bad, "type: ignore without its code or reason:\n" + "\n".join(bad)


def test_the_check_sees_a_missing_code_or_reason_and_accepts_both_forms() -> None:
    src = ("x = f()  # type: ignore\n"
           "y = g()  # type: ignore[attr-defined]\n"
           "z = h()  # type: ignore[arg-type]  # h takes any iterable\n"
           "# h's stub is too narrow\n"
           "w = h()  # type: ignore[arg-type]\n"
           "s = '# type: ignore'\n")
    assert problems(src) == ["1: no error code (type: ignore[code])",
                             "2: no reason (# type: ignore[code]  # why)"]
    assert problems(src, need_reason=False) == ["1: no error code (type: ignore[code])"]
