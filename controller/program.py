"""The pipeline a FabricController pushes: P4Info + device config for p4switch or BMv2.

p4switch's "binary" is a source bundle it compiles itself (docs/device-config.md); BMv2 takes
p4c-bm2-ss's JSON. Either way the P4Info comes from the same compiler as the device config, so
names are what that compiler says (the controller never hard-codes ids).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from p4.config.v1 import p4info_pb2

from model.targets import TARGET_NAMES, Target
from p4switch import build_p4info, bundle_from_file, compile_bundle, parse_p4info

FABRIC_P4 = Path(__file__).resolve().parents[1] / "p4src" / "fabric.p4"


@dataclass(frozen=True)
class Program:
    p4info: p4info_pb2.P4Info
    device_config: bytes
    target: str
    source: str

    @property
    def cookie(self) -> int:
        """64-bit fingerprint of P4Info + device config: the ForwardingPipelineConfig cookie,
        so a controller can tell that a switch already runs exactly this program."""
        h = hashlib.sha256(self.p4info.SerializeToString(deterministic=True))
        h.update(self.device_config)
        return int.from_bytes(h.digest()[:8], "big")


def p4c_env(p4c: str) -> dict[str, str]:
    """p4c finds core.p4/v1model.p4 through P4C_16_INCLUDE_PATH when it runs from a prefix other
    than the one it was built for (the p4tools bundle keeps them in share/p4c/p4include)."""
    env = dict(os.environ)
    inc = Path(p4c).resolve().parent.parent / "share" / "p4c" / "p4include"
    if inc.is_dir() and "P4C_16_INCLUDE_PATH" not in env:
        env["P4C_16_INCLUDE_PATH"] = str(inc)
    return env


def compile_program(target: str = "p4switch", source: str | Path | None = None) -> Program:
    """Compile ``source`` (default p4src/fabric.p4) for ``target``; errors say what failed."""
    src = Path(source) if source is not None else FABRIC_P4
    if target not in TARGET_NAMES:
        raise ValueError(f"unknown target {target!r} (choose from {', '.join(TARGET_NAMES)})")
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such P4 program")
    if target in (Target.P4SWITCH, Target.EBPF):
        bundle = bundle_from_file(src)
        info = build_p4info(compile_bundle(bundle))
        return Program(info, bundle.to_bytes(), target, str(src))
    p4c = shutil.which("p4c-bm2-ss")
    if p4c is None:
        raise RuntimeError("target bmv2 needs p4c-bm2-ss on PATH (p4c's BMv2 back end; or use target p4switch)")
    with tempfile.TemporaryDirectory(prefix="p4fabric-p4c-") as tmp:
        out_json, out_info = Path(tmp, "prog.json"), Path(tmp, "prog.p4info.txtpb")
        res = subprocess.run([p4c, "--p4runtime-files", str(out_info), "-o", str(out_json),
                              str(src)], capture_output=True, text=True, timeout=300,
                             env=p4c_env(p4c))
        if res.returncode != 0:
            raise RuntimeError(f"p4c-bm2-ss failed on {src}:\n{res.stderr.strip()}")
        info = parse_p4info(out_info.read_bytes())
        return Program(info, out_json.read_bytes(), target, str(src))
