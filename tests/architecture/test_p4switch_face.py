"""p4switch's face: outside p4switch, code imports only ``p4switch`` (its ``__init__``, which
names what the lab needs) and the leaf ``p4switch.matches``; importing either loads none of the
switch's insides, so the fabric's pure models stay light (docs/architecture.md, "Layers").

Tests and benchmarks of p4switch itself reach its insides on purpose and are not held to it.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import p4switch

ROOT = Path(__file__).resolve().parents[2]

# where the rule holds: the fabric packages, their tests and the benchmarks of the fabric
HELD = ("common", "model", "controller", "traffic", "topo", "sim", "experiments",
        "tests/common", "tests/model", "tests/controller", "tests/traffic", "tests/topo",
        "tests/sim", "tests/experiments", "tests/p4src", "tests/test_demo.py", "bench")
# benchmarks of p4switch's own insides (front end, BMv2 JSON loader, switch loop)
EXEMPT = ("bench/frontend_bench.py", "bench/bmv2json_bench.py", "bench/switch_bench.py")
LEAVES = ("p4switch.matches",)
LINE_BUDGET = 1500   # p4switch source lines ``import model.entries`` may load


def held_files() -> Iterator[Path]:
    for place in HELD:
        p = ROOT / place
        for f in ([p] if p.is_file() else sorted(p.rglob("*.py"))):
            if str(f.relative_to(ROOT)) not in EXEMPT:
                yield f


def inside_imports(source: str, where: str) -> Iterator[str]:
    """``file:line: what`` of every import of p4switch other than the face and its leaves,
    at any depth (in functions and under TYPE_CHECKING too)."""
    for node in ast.walk(ast.parse(source, where)):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("p4switch.") and a.name not in LEAVES:
                    yield f"{where}:{node.lineno}: import {a.name}"
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module == "p4switch":
                for a in node.names:
                    if a.name not in p4switch.__all__:
                        yield f"{where}:{node.lineno}: from p4switch import {a.name}"
            elif node.module.startswith("p4switch.") and node.module not in LEAVES:
                yield f"{where}:{node.lineno}: from {node.module} import ..."


def test_outside_p4switch_only_the_face_is_imported() -> None:
    bad = [line for f in held_files()
           for line in inside_imports(f.read_text(), str(f.relative_to(ROOT)))]
    assert not bad, ("import these through the face (p4switch/__init__.py), or add the name "
                     "there if the lab needs it:\n" + "\n".join(bad))


def test_the_rule_sees_an_inside_import() -> None:
    source = ("from p4switch.pipeline.api import TableEntry\n"
              "from p4switch import ir, Pipeline\nfrom p4switch.matches import LpmMatch\n"
              "def f():\n    import p4switch.queues\n")
    found = sorted(inside_imports(source, "probe.py"))
    assert [s.split(": ", 1)[1] for s in found] == [
        "from p4switch.pipeline.api import ...", "from p4switch import ir",
        "import p4switch.queues"]


@pytest.mark.parametrize("name", p4switch.__all__)
def test_every_public_name_resolves(name: str) -> None:
    module, attr = p4switch._FACE[name]
    assert getattr(p4switch, name) is getattr(importlib.import_module(module), attr)


def test_the_public_names_are_the_lazy_table() -> None:
    assert sorted(p4switch.__all__) == sorted(p4switch._FACE)


def test_the_match_leaf_imports_only_the_standard_library() -> None:
    tree = ast.parse((ROOT / "p4switch" / "matches.py").read_text())
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    mods |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert mods <= set(sys.stdlib_module_names) | {"__future__"}, mods


_PROBE = """
import json, sys
for name in sys.argv[1:]:
    __import__(name)
mods = sorted(m for m in sys.modules if m == "p4switch" or m.startswith("p4switch."))
lines = sum(sum(1 for _ in open(sys.modules[m].__file__, encoding="utf-8")) for m in mods)
from p4switch.pipeline import registry
print(json.dumps({"modules": mods, "lines": lines,
                  "declared": registry.extern_object("register") is not None}))
"""


def loaded(*names: str) -> dict[str, object]:
    """What importing ``names`` in a fresh interpreter loads of p4switch, and whether the
    extern registry was filled by it."""
    out = subprocess.run([sys.executable, "-c", _PROBE, *names], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    result: dict[str, object] = json.loads(out)
    return result


def test_the_pure_model_loads_little_of_p4switch() -> None:
    got = loaded("model.entries")
    assert isinstance(got["lines"], int) and got["lines"] < LINE_BUDGET, got
    assert "p4switch.pipeline.codegen" not in got["modules"]
    assert "p4switch.frontend" not in got["modules"]


def test_importing_declares_no_externs() -> None:
    got = loaded("p4switch", "model.routing", "controller", "p4switch.pipeline.pipeline")
    assert got["declared"] is False, "the extern registry is filled at import, not at build"
