"""Building the generated C: ``clang -target bpf`` and the checks that say, in one line, why the
eBPF target cannot run here (no clang, no libbpf, not root)."""

from __future__ import annotations

import ctypes.util
import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

CLANG_FLAGS = ("-O2", "-g", "-target", "bpf", "-Wno-unused-label", "-Wno-unused-variable",
               "-Wno-unused-function", "-Wno-compare-distinct-pointer-types")


class ToolchainError(RuntimeError):
    """The eBPF target cannot be built or loaded on this machine (one-line reason)."""


def _arch_include() -> list[str]:
    """Debian keeps <asm/types.h> under the multiarch directory, which clang -target bpf does
    not search by itself."""
    d = Path(f"/usr/include/{platform.machine()}-linux-gnu")
    return ["-I", str(d)] if d.is_dir() else []


def unavailable_reason() -> str | None:
    """None if this machine can build and load the eBPF target, else why not (one line)."""
    if shutil.which("clang") is None:
        return "the eBPF target needs clang (apt-get install clang)"
    if ctypes.util.find_library("bpf") is None:
        return "the eBPF target needs libbpf (apt-get install libbpf-dev)"
    if not Path("/usr/include/bpf/bpf_helpers.h").is_file():
        return "the eBPF target needs libbpf's headers (apt-get install libbpf-dev)"
    if os.geteuid() != 0:
        return "the eBPF target needs root (BPF programs and tc filters)"
    return None


CACHE_DIR = Path(tempfile.gettempdir()) / "p4ft-ebpf-cache"
"""Compiled objects by the hash of their source and compiler command: the 20 switches of a
fabric load one program, so one of them runs clang and the others wait for its object."""


def compile_c(source: str, workdir: Path, *, cache: bool = True) -> Path:
    """Compile ``source`` to a BPF object in ``workdir`` (from the cache when the same source
    was compiled before); ToolchainError with clang's first error lines if it fails (a
    generator bug: the generator refuses what it cannot express)."""
    clang = shutil.which("clang")
    if clang is None:
        raise ToolchainError("the eBPF target needs clang (apt-get install clang)")
    workdir.mkdir(parents=True, exist_ok=True)
    c_path = workdir / "p4prog.bpf.c"
    o_path = workdir / "p4prog.bpf.o"
    c_path.write_text(source)
    cmd = [clang, *CLANG_FLAGS, *_arch_include(), "-c", str(c_path), "-o", str(o_path)]
    if not cache:
        _clang(cmd, c_path)
        return o_path
    key = hashlib.sha256("\0".join([*cmd[:-4], source]).encode()).hexdigest()[:32]
    CACHE_DIR.mkdir(mode=0o700, exist_ok=True)
    cached = CACHE_DIR / f"{key}.o"
    with open(CACHE_DIR / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one compiler per source; the others wait for it
        if not cached.is_file():
            _clang(cmd, c_path)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            shutil.copyfile(o_path, tmp)
            os.replace(tmp, cached)
        else:
            shutil.copyfile(cached, o_path)
    return o_path


def _clang(cmd: list[str], c_path: Path) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        err = "\n".join(proc.stderr.splitlines()[:20])
        raise ToolchainError(f"clang failed on {c_path}:\n{err}")
