"""P4Info written as p4c writes it, checked without p4c (tests/runtime/test_p4info_p4c.py
compares with p4c itself when it is on PATH): validity keys named ``h.$valid$``, error keys
without a bitwidth and with the program's errors in type_info, annotation strings with their
string arguments quoted and tokens spaced as p4c prints them, @brief in the documentation,
and tables no control applies left out with their direct counter and the action only they
run."""

from __future__ import annotations

from pathlib import Path

from p4switch.frontend import compile_file
from p4switch.p4info import build_p4info

PROGRAM = Path(__file__).resolve().parents[1] / "stf" / "programs" / "any_type_keys.p4"


def _info():
    return build_p4info(compile_file(PROGRAM))


def _table(info, name: str):
    return next(t for t in info.tables if t.preamble.name == name)


def test_key_names_widths_and_error_type():
    info = _info()
    flags = _table(info, "MyIngress.by_flags")
    assert [(m.name, m.bitwidth) for m in flags.match_fields] == [
        ("meta.two", 1), ("hdr.g.$valid$", 1)]
    err = _table(info, "MyIngress.by_error").match_fields[0]
    assert (err.name, err.bitwidth) == ("sm.parser_error", 0)
    assert list(info.type_info.error.members)[0] == "NoError"
    assert list(info.type_info.error.members)[-1] == "BadTag"


def test_annotations_are_written_as_p4c_writes_them():
    t = _table(_info(), "MyIngress.by_error")
    assert list(t.preamble.annotations) == [
        '@note("two words")', '@pair(1 , "x")', "@level(- 2)"]
    assert t.preamble.doc.brief == "by the parser's error"
    assert list(t.match_fields[0].annotations) == ['@origin("parser")']


def test_tables_never_applied_are_left_out_with_what_only_they_reach():
    info = _info()
    assert "MyIngress.never_applied" not in [t.preamble.name for t in info.tables]
    assert "MyIngress.never_run" not in [a.preamble.name for a in info.actions]
    assert list(info.direct_counters) == []
    assert {t.preamble.name for t in info.tables} == {
        "MyIngress.by_error", "MyIngress.by_error_cp", "MyIngress.by_flags"}
