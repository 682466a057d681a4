"""Real p4c accepts the project's P4 unchanged: every program in p4src/ compiles with the bmv2
back end (``p4c-bm2-ss --p4runtime-files``, what the BMv2 target and P4Runtime clients use), and
the Tofino port p4src/tna/fabric.p4 passes p4c's front and mid end with the open TNA includes,
for Tofino 1 (tna.p4) and 2 (t2na.p4) (``p4test --std p4-16 -D__TARGET_TOFINO__=N -I DIR``;
resource allocation is test_tna_contract.py's, with the Tofino compiler). Needs p4c's tools on
PATH; skips with that reason otherwise. p4switch's own P4Info is compared with p4c's in tests/runtime/test_p4info_p4c.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

P4SRC = Path(__file__).resolve().parents[2] / "p4src"
PROGRAMS = sorted(P4SRC.glob("*.p4"))
TNA_PROGRAMS = sorted((P4SRC / "tna").glob("*.p4"))
P4C = shutil.which("p4c-bm2-ss")
P4TEST = shutil.which("p4test")
HOW = "p4c, built from p4lang/p4c"


def share_dir(tool: str) -> Path:
    """The tool tree's share/p4c (the wrappers in bin/ resolve to it through ..)."""
    return Path(tool).resolve().parent.parent / "share" / "p4c"


def tool_env(tool: str) -> dict[str, str]:
    """p4c looks for core.p4/v1model.p4 next to its binary and under the prefix it was built
    for; the p4tools bundle keeps them in share/p4c/p4include, found through P4C_16_INCLUDE_PATH."""
    env = dict(os.environ)
    inc = share_dir(tool) / "p4include"
    if inc.is_dir() and "P4C_16_INCLUDE_PATH" not in env:
        env["P4C_16_INCLUDE_PATH"] = str(inc)
    return env


def run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=180,
                          env=tool_env(tool))


def test_p4src_has_programs():
    assert [p.name for p in PROGRAMS] == ["fabric.p4"]
    assert [p.name for p in TNA_PROGRAMS] == ["fabric.p4"]


@pytest.mark.skipif(P4C is None, reason=f"p4c-bm2-ss not on PATH ({HOW})")
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_p4c_bm2_ss_compiles_unchanged(program, tmp_path):
    assert P4C is not None
    p4info_path = tmp_path / "out.p4info.txtpb"
    json_path = tmp_path / "out.json"
    r = run(P4C, "--p4runtime-files", str(p4info_path), "-o", str(json_path), str(program))
    assert r.returncode == 0, r.stderr
    assert "error" not in r.stderr.lower(), r.stderr
    bmv2 = json.loads(json_path.read_text())
    assert bmv2["pipelines"] and {p["name"] for p in bmv2["pipelines"]} == {"ingress", "egress"}
    info = p4info_pb2.P4Info()
    text_format.Parse(p4info_path.read_text(), info)
    assert info.tables and info.actions
    if program.name == "fabric.p4":  # the controller contract of p4src/README.md, by name
        tables = {t.preamble.name for t in info.tables}
        assert {"MyIngress.ipv4_lpm", "MyIngress.lb_group", "MyIngress.wam_slot_to_member",
                "MyIngress.lb_member", "MyEgress.port_smac", "MyEgress.ecn_config"} <= tables
        headers = {m.preamble.name for m in info.controller_packet_metadata}
        assert headers == {"packet_in", "packet_out"}


def tna_include_dir(tool: str, header: str) -> Path | None:
    """Where ``header`` (tna.p4, t2na.p4) is next to this p4test: the p4tools bundle's
    share/p4c/tna, an installed Tofino compiler's share/p4c/p4include, or a p4c build tree
    (build/backends/p4test/p4test) whose source has the Tofino back end's p4include."""
    exe = Path(tool).resolve()
    for d in (share_dir(tool) / "tna", share_dir(tool) / "p4include",
              exe.parents[2] / "backends" / "tofino" / "bf-p4c" / "p4include"):
        if (d / header).is_file():
            return d
    return None


@pytest.mark.skipif(P4TEST is None, reason=f"p4test not on PATH ({HOW})")
@pytest.mark.parametrize("chip", [1, 2], ids=["tofino", "tofino2"])
@pytest.mark.parametrize("program", TNA_PROGRAMS, ids=lambda p: f"tna/{p.name}")
def test_tna_port_passes_p4test(program, chip):
    assert P4TEST is not None
    header = "tna.p4" if chip == 1 else "t2na.p4"
    inc = tna_include_dir(P4TEST, header)
    if inc is None:
        pytest.skip(f"no {header} next to {P4TEST} ({HOW})")
    r = run(P4TEST, "--std", "p4-16", f"-D__TARGET_TOFINO__={chip}", "-I", str(inc),
            str(program))
    assert r.returncode == 0, r.stderr
    assert "error" not in r.stderr.lower(), r.stderr
