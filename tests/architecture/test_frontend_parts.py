"""The front end's parts talk through public interfaces: no module of ``p4switch/frontend``
imports or reads an underscore name that another of its modules defines (a private name is
private to its module), and no module is over ~800 lines."""

from __future__ import annotations

import ast
from pathlib import Path

FRONTEND = Path(__file__).resolve().parents[2] / "p4switch" / "frontend"
MAX_LINES = 800


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined(tree: ast.Module) -> set[str]:
    """Every name a module defines: module-level and class-level names, and attributes it
    assigns (``self._x = ...``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.alias):
            out.add(node.asname or node.name)
    return out


def frontend_sources() -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(FRONTEND.glob("*.py"))}


def crossings(sources: dict[str, str]) -> list[str]:
    """Each use of another module's underscore name (``sources``: module name -> text), as
    ``file:line: name``."""
    trees = {m: ast.parse(text, m) for m, text in sources.items()}
    own = {m: {n for n in _defined(t) if _private(n)} for m, t in trees.items()}
    # what a module defines itself, not what it imports
    for m, t in trees.items():
        imported = {a.asname or a.name for n in ast.walk(t) if isinstance(n, ast.ImportFrom)
                    for a in n.names}
        own[m] -= imported - {n.name for n in ast.walk(t)
                              if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    out: list[str] = []
    for m, t in trees.items():
        others = set().union(*(names for n, names in own.items() if n != m))
        for node in ast.walk(t):
            if isinstance(node, ast.ImportFrom) and node.module and (
                    node.module.startswith("p4switch.frontend") or node.level):
                src = node.module.rsplit(".", 1)[-1]
                out += [f"{m}.py:{node.lineno}: {a.name} (from {src})" for a in node.names
                        if _private(a.name) and src != m]
            elif isinstance(node, ast.Attribute) and _private(node.attr) \
                    and node.attr in others and node.attr not in own[m]:
                out.append(f"{m}.py:{node.lineno}: .{node.attr}")
    return out


def test_no_underscore_name_crosses_frontend_modules() -> None:
    found = crossings(frontend_sources())
    assert not found, f"{len(found)} uses of another module's private name:\n" + \
        "\n".join(found)


def test_no_frontend_module_over_800_lines() -> None:
    long = {p.name: n for p in FRONTEND.glob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"front-end modules over {MAX_LINES} lines: {long}"


def test_the_check_sees_a_crossing() -> None:
    """The checker itself: an import of a private name and a read of a private attribute
    defined in another module are found; a module's own private names are not."""
    found = crossings({
        "helpers": "def _helper(): pass\nclass A:\n    def _m(self):\n        self._own = 1\n",
        "user": "from p4switch.frontend.helpers import _helper, A\n"
                "def f(a: A):\n    a._m()\n    _helper()\n    return a.public\n",
        "owner": "class B:\n    def _m(self):\n        return self._m\n",
    })
    assert found == ["user.py:1: _helper (from helpers)", "user.py:3: ._m"]
