"""The import graph of p4fabric's packages: layered, and without cycles.

Every import is read from the source (ast), at module level and inside functions alike: an import
hidden in a function is still a dependency. The layers, bottom first (docs/architecture.md):

| layer | packages | what |
| --- | --- | --- |
| 0 | ``common`` | generic utilities every layer may use (histogram, Internet checksum) |
| 1 | ``p4switch`` | the P4 target: front end, pipeline, queues, ports, P4Runtime server |
| 2 | ``model`` | pure models: fabric spec, entries, schemes, LB reference, routing, paths |
| 3 | ``traffic``, ``controller`` | host traffic and transport; the P4Runtime controller |
| 4 | ``topo``, ``sim`` | the emulated fabric (Mininet) and the simulated one |
| 5 | ``experiments`` | YAML experiments on either backend, reports, the fidelity experiment |

A package may import only from packages in lower layers (packages in one layer are independent
of each other). Inside a package, modules may import each other in any direction but not in a
cycle. Imports under ``if TYPE_CHECKING:`` never run: they count for the layers (a type from a
higher layer is still an upward dependency) but not for cycles.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LAYERS: tuple[tuple[str, ...], ...] = (
    ("common",),
    ("p4switch",),
    ("model",),
    ("traffic", "controller"),
    ("topo", "sim"),
    ("experiments",),
)
LAYER = {pkg: i for i, pkgs in enumerate(LAYERS) for pkg in pkgs}


@dataclass(frozen=True)
class Import:
    src: str          # importing module, dotted
    dst: str          # imported module (the most specific module of the project named)
    line: int
    type_only: bool   # under ``if TYPE_CHECKING:``

    def __str__(self) -> str:
        return f"{self.src}:{self.line} imports {self.dst}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in LAYER for p in (ROOT / pkg).rglob("*.py")}


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, type_only: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child.test):
            for c in child.body:
                yield c, True
                yield from _walk(c, True)
            for c in child.orelse:
                yield c, type_only
                yield from _walk(c, type_only)
            continue
        yield child, type_only
        yield from _walk(child, type_only)


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    is_pkg = path.name == "__init__.py"
    for node, type_only in _walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # ``from pkg import sub``: the submodule when it is one, else the package
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod
                       for a in node.names]
        for t in targets:
            while t and t not in modules:   # ``import a.b.c`` of a name inside a module
                t = t.rpartition(".")[0]
            if t and t != name:
                yield Import(name, t, node.lineno, type_only)


def import_graph() -> list[Import]:
    modules = project_modules()
    return [imp for name, path in sorted(modules.items())
            for imp in imports_of(name, path, modules)]


def cycles(edges: list[Import]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    succ: dict[str, set[str]] = {}
    for e in edges:
        succ.setdefault(e.src, set()).add(e.dst)
        succ.setdefault(e.dst, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return out


def upward(edges: list[Import]) -> list[Import]:
    bad = []
    for e in edges:
        a, b = e.src.split(".")[0], e.dst.split(".")[0]
        if a != b and LAYER[b] >= LAYER[a]:
            bad.append(e)
    return bad


def imports_table(edges: list[Import]) -> str:
    """docs/architecture.md's table of the imports between packages, computed: a row per
    importing package, its imported packages top layer first, and where it uses at most two
    modules of one, their names."""
    order = [p for pkgs in reversed(LAYERS) for p in pkgs]
    used: dict[str, dict[str, set[str]]] = {}
    for e in edges:
        a, b = e.src.split(".")[0], e.dst.split(".")[0]
        if a != b:
            used.setdefault(a, {}).setdefault(b, set()).add(e.dst)
    rows = ["| package | imports from |", "| --- | --- |"]
    for a in sorted(used, key=order.index):
        cells = []
        for b in sorted(used[a], key=order.index):
            subs = sorted(m[len(b) + 1:] for m in used[a][b] if m != b)
            note = (" (" + ", ".join(f"`{m}`" for m in subs) + ")"
                    if 0 < len(subs) <= 2 and len(subs) == len(used[a][b]) else "")
            cells.append(f"`{b}`{note}")
        rows.append(f"| `{a}` | {', '.join(cells)} |")
    return "\n".join(rows)


def test_every_package_has_a_layer() -> None:
    found = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert found == set(LAYER), "give every package a layer in LAYERS (and docs/architecture.md)"


def test_no_import_runs_upward_or_sideways() -> None:
    bad = upward(import_graph())
    assert not bad, "imports from a package in the same or a higher layer:\n" + "\n".join(
        map(str, bad))


def test_no_import_cycles() -> None:
    found = cycles([e for e in import_graph() if not e.type_only])
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_layer_table_is_the_one_in_docs() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    for i, pkgs in enumerate(LAYERS):
        row = f"| {i} | " + ", ".join(f"`{p}`" for p in pkgs) + " |"
        assert row in doc, f"docs/architecture.md lacks the layer row {row!r}"


def test_the_imports_table_is_the_one_in_docs() -> None:
    """The table of the imports that exist between packages is computed from the code, so a new
    dependency shows in the doc (paste the table this prints) and a removed one leaves it."""
    doc = (ROOT / "docs" / "architecture.md").read_text().splitlines()
    start = doc.index("| package | imports from |")
    end = next((i for i in range(start, len(doc)) if not doc[i].startswith("|")), len(doc))
    table = imports_table(import_graph())
    assert "\n".join(doc[start:end]) == table, (
        "docs/architecture.md's table of imports between packages differs from the code's:\n"
        + table)


def test_imports_table_names_few_modules() -> None:
    edges = [Import("topo.net", "traffic.agentd", 1, False),
             Import("topo.net", "model.spec", 2, False),
             Import("topo.cli", "controller", 3, False),
             Import("sim.a", "model.x", 4, False), Import("sim.a", "model.y", 5, False),
             Import("sim.b", "model.z", 6, False), Import("sim.b", "sim.a", 7, False)]
    assert imports_table(edges).splitlines()[2:] == [
        "| `topo` | `traffic` (`agentd`), `controller`, `model` (`spec`) |",
        "| `sim` | `model` |"]


@pytest.mark.parametrize("source, expect", [
    ("a -> b, b -> a", [["a", "b"]]),
    ("a -> b, b -> c, c -> a, c -> d", [["a", "b", "c"]]),
    ("a -> b, b -> c, a -> c", []),
])
def test_cycles_finds_what_there_is(source: str, expect: list[list[str]]) -> None:
    edges = [Import(*pair.split(" -> "), 1, False) for pair in source.split(", ")]
    assert cycles(edges) == expect


def test_upward_flags_an_import_from_a_higher_or_the_same_layer() -> None:
    edges = [Import("model.spec", "sim.network", 1, False),
             Import("traffic.run", "controller.fabric", 2, True),
             Import("sim.network", "model.spec", 3, False)]
    assert [e.line for e in upward(edges)] == [1, 2]
