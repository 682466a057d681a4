"""Every place a load-balancing scheme must appear (docs/adding-a-scheme.md), checked for each
registered scheme, and the scheme properties the lab reads from the registry.

A scheme lives in: its ``lb_group`` action in p4src/include/ingress.p4 (listed in the table,
parameters named as the scheme's ``params``), its class in ``model.schemes.SCHEMES``, its case
in tests/controller/test_schemes.py (``CASES``), and its Tofino port (the action in
p4src/tna/fabric.p4 and its translation in model/tna.py) or a reason recorded below.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from controller.loops import ControlLoop
from model.dilation import TIME_KEY, TIME_LIKE
from model.schemes import BASELINE_SCHEME, DEFAULT_SCHEME, SCHEMES, Scheme, SwitchContext

ROOT = Path(__file__).resolve().parents[2]
V1MODEL = ROOT / "p4src" / "include" / "ingress.p4"
TNA = ROOT / "p4src" / "tna" / "fabric.p4"
TNA_MODEL = ROOT / "model" / "tna.py"
CASES_FILE = ROOT / "tests" / "controller" / "test_schemes.py"

NO_TNA_PORT: dict[str, str] = {}
"""Scheme name -> why it has no Tofino port (docs/tofino.md says what TNA cannot express)."""


def p4_actions(source: str) -> dict[str, list[str]]:
    """Action name -> its parameter names, for every ``action`` of a P4 file."""
    out = {}
    for m in re.finditer(r"\baction\s+(\w+)\s*\(([^)]*)\)", source):
        out[m.group(1)] = [p.split()[-1] for p in m.group(2).split(",") if p.strip()]
    return out


def table_actions(source: str, table: str) -> list[str]:
    """The action names a P4 table lists (``@defaultonly`` and the like dropped)."""
    m = re.search(rf"\btable\s+{table}\s*\{{.*?\bactions\s*=\s*\{{([^}}]*)\}}", source, re.S)
    if m is None:
        return []
    return [a.split()[-1] for a in m.group(1).replace(";", " ; ").split(";") if a.strip()]


def case_names(source: str) -> set[str]:
    """The keys of ``CASES = {...}`` in the schemes' test module."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "CASES" for t in targets) \
                    and isinstance(node.value, ast.Dict):
                return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return set()


@dataclasses.dataclass(frozen=True)
class Sources:
    v1model: str
    tna: str
    tna_model: str
    cases: str

    @classmethod
    def of_repo(cls) -> Sources:
        return cls(V1MODEL.read_text(), TNA.read_text(), TNA_MODEL.read_text(),
                   CASES_FILE.read_text())


def missing_places(cls: type[Scheme], src: Sources, params: set[str] | None,
                   no_tna: dict[str, str] = NO_TNA_PORT) -> list[str]:
    """What is missing for scheme ``cls`` (empty: it is everywhere it must be)."""
    short = cls.action.rpartition(".")[2]
    out = []
    actions = p4_actions(src.v1model)
    if short not in actions:
        out.append(f"P4 action {short} in {V1MODEL.relative_to(ROOT)}")
    else:
        if short not in table_actions(src.v1model, "lb_group"):
            out.append(f"{short} in table lb_group's actions ({V1MODEL.relative_to(ROOT)})")
        if params is not None and set(actions[short]) != params:
            out.append(f"{short}'s parameters {sorted(actions[short])} named as the scheme's "
                       f"params() {sorted(params)}")
    if SCHEMES.get(cls.name) is not cls:
        out.append(f"{cls.__name__} registered in model.schemes.SCHEMES")
    if cls.name not in case_names(src.cases):
        out.append(f"a case {cls.name!r} in CASES of {CASES_FILE.relative_to(ROOT)}")
    if cls.name not in no_tna:
        if short not in p4_actions(src.tna) or short not in table_actions(src.tna, "lb_group"):
            out.append(f"the Tofino action {short} in {TNA.relative_to(ROOT)}'s lb_group "
                       "(or a reason in NO_TNA_PORT)")
        if f'"{cls.action}"' not in src.tna_model:
            out.append(f"its translation in {TNA_MODEL.relative_to(ROOT)} (or a reason in "
                       "NO_TNA_PORT)")
    return out


def _params(cls: type[Scheme]) -> set[str]:
    return set(cls().params(4, SwitchContext()))


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_a_scheme_is_in_every_place(name: str) -> None:
    cls = SCHEMES[name]
    missing = missing_places(cls, Sources.of_repo(), _params(cls))
    assert not missing, f"scheme {name} lacks (docs/adding-a-scheme.md):\n" + "\n".join(missing)


def test_every_lb_group_action_is_a_scheme() -> None:
    listed = set(table_actions(V1MODEL.read_text(), "lb_group")) - {"lb_group_miss"}
    assert listed == {c.action.rpartition(".")[2] for c in SCHEMES.values()}


def test_a_missed_place_is_reported() -> None:
    """A scheme that exists only as a class: every other place is named."""

    @dataclasses.dataclass(frozen=True)
    class Sticky(Scheme):
        name = "sticky"
        action = "MyIngress.lb_sticky"

        def params(self, n_slots: int, sw: SwitchContext) -> dict[str, int]:
            return {"n_members": n_slots}

        def reference(self, group):  # type: ignore[no-untyped-def]  # never called
            raise NotImplementedError

    missing = missing_places(Sticky, Sources.of_repo(), {"n_members"})
    assert [m.split()[0] for m in missing] == ["P4", "Sticky", "a", "the", "its"]
    src = Sources.of_repo()
    with_action = dataclasses.replace(src, v1model=src.v1model.replace(
        "action lb_rotate(", "action lb_sticky(bit<16> n_members) {}\n    action lb_rotate("))
    missing = missing_places(Sticky, with_action, {"n_members"}, {"sticky": "a reason"})
    assert [m.split()[0] for m in missing] == ["lb_sticky", "Sticky", "a"]


def test_the_p4_readers_read_what_there_is() -> None:
    src = "action a(bit<8> x, in bit<16> y) {}\ntable t { key = {} actions = { a; @defaultonly b; } }"
    assert p4_actions(src) == {"a": ["x", "y"]}
    assert table_actions(src, "t") == ["a", "b"]
    assert case_names('CASES: dict[str, int] = {"x": 1, "y": 2}') == {"x", "y"}


# ---- properties read from the registry ----------------------------------------------------------
def test_one_baseline_and_a_registered_default() -> None:
    assert [c.name for c in SCHEMES.values() if c.baseline] == [BASELINE_SCHEME]
    assert DEFAULT_SCHEME in SCHEMES


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_time_params_are_the_time_fields_and_dilation_scales_them(name: str) -> None:
    cls = SCHEMES[name]
    fields = [f.name for f in dataclasses.fields(cls)]   # type: ignore[arg-type]  # schemes are dataclasses
    assert set(cls.time_params) == {f for f in fields if TIME_LIKE.search(f)}, \
        f"{name}: declare every time-like field in time_params"
    assert all(TIME_KEY.search(p) for p in cls.time_params), \
        f"{name}: a time parameter's name must end in _us/_ms/_s, or dilation misses it"
    assert cls.gap_param is None or cls.gap_param in cls.time_params


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_a_control_loop_is_one_the_controller_runs(name: str) -> None:
    loop = SCHEMES[name].control_loop
    assert loop is None or loop in {lp.value for lp in ControlLoop}


def test_a_first_hop_only_scheme_is_comparable() -> None:
    assert all(c.comparable for c in SCHEMES.values() if c.first_hop_only)


def scheme_literal_defaults(source: str, where: str) -> list[str]:
    """``file:line`` of every default of a scheme parameter (one whose name says ``scheme``, or
    argparse's ``--scheme``) that spells a scheme's name instead of naming ``DEFAULT_SCHEME``."""
    out = []
    for node in ast.walk(ast.parse(source, where)):
        pairs: list[tuple[str, ast.expr | None]] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            pos = [*node.args.posonlyargs, *node.args.args]
            pairs = [(a.arg, d) for a, d in zip(pos[len(pos) - len(node.args.defaults):],
                                                node.args.defaults, strict=True)]
            pairs += [(a.arg, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults,
                                                 strict=True)]
        elif isinstance(node, ast.Call):
            flags = [a.value for a in node.args if isinstance(a, ast.Constant)]
            pairs = [(" ".join(map(str, flags)), k.value) for k in node.keywords
                     if k.arg == "default"]
        out += [f"{where}:{v.lineno}" for name, v in pairs
                if "scheme" in name and isinstance(v, ast.Constant) and v.value in SCHEMES]
    return out


def test_the_default_scheme_is_named_once() -> None:
    bad = [hit for pkg in ("model", "controller", "traffic", "topo", "sim", "experiments", "bench")
           for f in sorted((ROOT / pkg).rglob("*.py"))
           for hit in scheme_literal_defaults(f.read_text(), str(f.relative_to(ROOT)))]
    assert not bad, "use model.schemes.DEFAULT_SCHEME as the default:\n" + "\n".join(bad)
    probe = ('def f(x, scheme="ecmp", *, entropy="random"): ...\n'
             'ap.add_argument("--scheme", default="wam")\nap.add_argument("--set", default="random")\n')
    assert scheme_literal_defaults(probe, "p.py") == ["p.py:1", "p.py:2"]
