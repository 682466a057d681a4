"""Annotation bodies in P4Info without p4c (tests/runtime/test_p4info_p4c.py compares the same
program with p4c's P4Info field by field): unstructured bodies are written as p4c writes them
-- any tokens, spaced, ``<<`` one token and ``>>`` two -- and structured annotations
(``@a[...]``) as ``structured_annotations`` with folded int, string and bool values. The
expected values are the ones p4c 1.2.5 writes for tests/runtime/p4/annotations.p4."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format

from p4switch.frontend import compile_file
from p4switch.p4info import build_p4info

PROGRAM = Path(__file__).parent / "p4" / "annotations.p4"


@pytest.fixture(scope="module")
def info():
    return build_p4info(compile_file(PROGRAM))


def _structured(msg) -> list[tuple[str, object]]:
    """(name, expressions or kv pairs) of each structured annotation, values as Python."""
    def value(e):
        return getattr(e, e.WhichOneof("value"))

    out = []
    for sa in msg.structured_annotations:
        kind = sa.WhichOneof("body")
        if kind == "expression_list":
            out.append((sa.name, [value(e) for e in sa.expression_list.expressions]))
        elif kind == "kv_pair_list":
            out.append((sa.name, {p.key: value(p.value) for p in sa.kv_pair_list.kv_pairs}))
        else:
            out.append((sa.name, None))
    return out


def test_unstructured_bodies_are_any_tokens_spaced_as_p4c_writes_them(info):
    fwd = next(a for a in info.actions if a.preamble.name == "Ing.fwd")
    assert list(fwd.preamble.annotations) == [
        "@path(hdr . eth . dst)",
        "@sum(1 + 2)",
        "@mixed(x , [ y ])",
        "@call(f ( a , ( b ) ) , { c })",
        "@kw(in out bit < 8 > table)",
        "@ops(a && b || ! c ; d @ e)",
        "@empty",
        "@bare",
        '@odd(a - > b # $ << c < d > > e &&& 1 .. 2 |+| 0x1F 8w3 "q" this [ y)',
        "@twice(1)",
        '@twice("2")',
    ]
    assert not fwd.preamble.structured_annotations


def test_structured_annotations_carry_folded_typed_values(info):
    t = next(t for t in info.tables if t.preamble.name == "Ing.t")
    assert _structured(t.preamble) == [
        ("list", [1, "x", True]),
        ("kv", {"k": 1, "j": "s", "b": False}),
        ("none", None),
        ("trail", [2, 3]),
        ("neg", [-2]),
        ("folded", [7]),
        ("scaled", [10]),
        ("local", [4]),
    ]
    assert not t.preamble.annotations
    key = t.match_fields[0]
    assert list(key.annotations) == ["@where(hdr . eth)"]
    assert _structured(key) == [("meta", {"src": "parser"})]
    fwd_ref = next(r for r in t.action_refs if r.structured_annotations)
    assert _structured(fwd_ref) == [("act", {"weight": 2})]
    fwd = next(a for a in info.actions if a.preamble.name == "Ing.fwd")
    assert _structured(fwd.params[0]) == [("units", {"scale": 1, "unit": "port"})]
    hits = next(c for c in info.counters if c.preamble.name == "Ing.hits")
    assert _structured(hits.preamble) == [("unit", ["packets", 20])]


def test_a_bool_is_written_as_a_bool_not_an_int(info):
    """True == 1 in Python: the proto must still say bool_value (p4c does)."""
    t = next(t for t in info.tables if t.preamble.name == "Ing.t")
    text = text_format.MessageToString(t.preamble.structured_annotations[0])
    assert "bool_value: true" in text and "int64_value: 1" in text
