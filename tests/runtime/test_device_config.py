"""The device config (source bundle) and the ``python -m p4switch.compile`` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import runtime_sample_ir as sample_ir

from p4switch import compile as p4compile
from p4switch import device_config, p4info

REPO = Path(__file__).resolve().parents[2]


def test_bundle_round_trip_and_validation():
    b = device_config.Bundle("main.p4", {"main.p4": "x", "inc/a.p4": "y"}, {"N": "1"})
    back = device_config.parse_bundle(b.to_bytes())
    assert (back.main, back.files, back.defines) == (b.main, b.files, b.defines)
    for bad in [
        b"not json",
        json.dumps({"format": "p4switch-bundle-1", "main": "a.p4", "files": {}}).encode(),
        json.dumps({"format": "p4switch-bundle-1", "main": "/etc/passwd",
                    "files": {"/etc/passwd": ""}}).encode(),
        json.dumps({"format": "p4switch-bundle-1", "main": "a.p4",
                    "files": {"a.p4": "", "../b.p4": ""}}).encode(),
        json.dumps({"format": "p4switch-bundle-1", "main": "a.p4", "files": {"a.p4": 3}}).encode(),
    ]:
        with pytest.raises(device_config.BundleError):
            device_config.parse_bundle(bad)


def test_bundle_from_file_collects_relative_includes_only(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "main.p4").write_text(
        '#include <core.p4>\n#include <v1model.p4>\n#include "inc/a.p4"\n')
    (tmp_path / "inc" / "a.p4").write_text('#include "b.p4"\n')
    (tmp_path / "inc" / "b.p4").write_text("const bit<8> X = 1;\n")
    b = device_config.bundle_from_file(tmp_path / "main.p4")
    assert b.main == "main.p4"
    assert sorted(b.files) == ["inc/a.p4", "inc/b.p4", "main.p4"]


def test_fabric_program_bundle_has_all_its_includes():
    b = device_config.bundle_from_file(REPO / "p4src" / "fabric.p4")
    assert b.main == "fabric.p4"
    assert {"include/headers.p4", "include/parser.p4", "include/ingress.p4"} <= set(b.files)


def test_compile_writes_p4info_and_device_config(tmp_path, monkeypatch):
    """The CLI with the front end stubbed by the sample IR (the real one is exercised below)."""
    src = tmp_path / "sample.p4"
    src.write_text("// sample\n")
    seen = []

    def fake_compile(bundle):
        seen.append(bundle)
        return sample_ir.build()

    monkeypatch.setattr(device_config, "compile_bundle", fake_compile)
    out_info, out_bin = tmp_path / "o.p4info.txtpb", tmp_path / "o.bin"
    rc = p4compile.main([str(src), "--p4info", str(out_info), "--device-config", str(out_bin)])
    assert rc == 0
    assert p4info.parse(out_info.read_bytes()) == p4info.build_p4info(sample_ir.build())
    assert device_config.parse_bundle(out_bin.read_bytes()).files == seen[0].files
    rc = p4compile.main([str(src), "--p4info", str(out_info), "--p4info-format", "binary"])
    assert rc == 0 and p4info.parse(out_info.read_bytes(), "binary").tables


def test_compile_reports_errors_with_location(tmp_path, monkeypatch, capsys):
    src = tmp_path / "bad.p4"
    src.write_text("oops\n")

    def failing(bundle):
        raise RuntimeError("bad.p4:1:1: error: syntax error")

    monkeypatch.setattr(device_config, "compile_bundle", failing)
    assert p4compile.main([str(src), "--p4info", str(tmp_path / "x")]) == 1
    assert "bad.p4:1:1: error" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    assert p4compile.main([str(tmp_path / "missing.p4")]) == 2


def _frontend_ready() -> bool:
    try:
        from p4switch.frontend import compile_file  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _frontend_ready(), reason="front end (compile_file) not available yet")
def test_compile_fabric_program_with_the_real_front_end(tmp_path):
    out_info, out_bin = tmp_path / "fabric.p4info.txtpb", tmp_path / "fabric.bin"
    rc = p4compile.main([str(REPO / "p4src" / "fabric.p4"), "--p4info", str(out_info),
                         "--device-config", str(out_bin)])
    assert rc == 0
    info = p4info.parse(out_info.read_bytes())
    assert info.tables and any(a.preamble.name == "NoAction" for a in info.actions)
    program = device_config.compile_bundle(device_config.parse_bundle(out_bin.read_bytes()))
    assert p4info.build_p4info(program) == info
