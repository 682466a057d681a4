"""`make tofino` (scripts/tofino.py) without the compiler: a one-line error naming what is missing;
and its resource summary, read from output laid out as the Tofino compiler's schemas describe
(metrics.json, resources.json), so the figures it prints are the ones the compiler wrote."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "tofino.py"


def _mod():
    spec = importlib.util.spec_from_file_location("tofino_script", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_without_a_compiler_one_line_names_what_is_missing(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))  # nothing on PATH
    r = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "bf-p4c or p4c-barefoot" in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_unknown_chip_is_a_one_line_error(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), "--chips", "tofino9"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "unknown chip 'tofino9'" in r.stderr


def test_summary_reads_the_compiler_logs(tmp_path):
    pipe = tmp_path / "pipe"
    (pipe / "logs").mkdir(parents=True)
    (pipe / "metrics.json").write_text(json.dumps({
        "mau": {"srams": 40, "tcams": 6, "map_rams": 12, "logical_tables": 14,
                "exact_crossbar_bytes": 50, "ternary_crossbar_bytes": 9, "action_bus_bytes": 30},
        "phv": {"normal": [{"bit_width": 32, "containers_occupied": 20, "bits_occupied": 600}]},
        "parser": {"ingress": {"tcam_rows": 11}, "egress": {"tcam_rows": 4}}}))
    stages = [{"stage_number": i,
               "logical_tables": {"size": 16, "ids": [{"id": 0, "table_name": "t"}] * n},
               "hash_bits": {"nBits": 52, "nFunctions": 8, "bits": [{"hash_bit": 0}] * h},
               "meter_alus": {"nAlus": 4, "meters": [{"row": 1}] * a}}
              for i, (n, h, a) in enumerate([(3, 10, 1), (2, 0, 2), (0, 0, 0)])]
    (pipe / "logs" / "resources.json").write_text(json.dumps(
        {"resources": {"mau": {"nStages": 12, "mau_stages": stages}}}))
    s = _mod().summary(tmp_path)
    assert s["stages_used"] == 2 and s["tables_per_stage"] == [3, 2, 0]
    assert s["hash_bits"] == 10 and s["stateful_alus"] == 3
    assert s["srams"] == 40 and s["tcams"] == 6 and s["logical_tables"] == 14
    assert s["phv_normal_32b_containers"] == 20
    assert s["parser_ingress_tcam_rows"] == 11


def test_summary_of_an_empty_output_is_empty(tmp_path):
    assert _mod().summary(tmp_path) == {}


def test_summary_without_metrics_reads_memories_and_phv_from_the_logs(tmp_path):
    """p4c-barefoot alone writes no metrics.json: SRAM/TCAM/map RAM, crossbar bytes and
    gateways come from resources.json's stages, occupied PHV containers from phv.json."""
    logs = tmp_path / "pipe" / "logs"
    logs.mkdir(parents=True)
    stage = {"stage_number": 0, "logical_tables": {"ids": [{"id": 0}]},
             "rams": {"srams": [{"row": 0}] * 5}, "tcams": {"tcams": [{"row": 0}] * 2},
             "map_rams": {"maprams": [{"row": 0}] * 3},
             "xbar_bytes": {"bytes": [{"byte_number": 0}] * 7},
             "gateways": {"gateways": [{"row": 0}] * 4}}
    (logs / "resources.json").write_text(json.dumps(
        {"resources": {"mau": {"mau_stages": [stage, dict(stage, stage_number=1)]}}}))
    (logs / "phv.json").write_text(json.dumps({"containers": [
        {"bit_width": 16, "container_type": "normal", "slices": [{"field_slice": {}}]},
        {"bit_width": 16, "container_type": "normal", "slices": [{"field_slice": {}}]},
        {"bit_width": 32, "container_type": "tagalong", "slices": [{"field_slice": {}}]},
        {"bit_width": 8, "container_type": "normal", "slices": []}]}))
    s = _mod().summary(tmp_path)
    assert (s["srams"], s["tcams"], s["map_rams"]) == (10, 4, 6)
    assert s["crossbar_bytes"] == 14 and s["gateways"] == 8
    assert s["phv_normal_16b_containers"] == 2 and s["phv_tagalong_32b_containers"] == 1
    assert "phv_normal_8b_containers" not in s
