"""Compile a native program's C once per machine: a cffi extension module in a cache
directory named by the hash of the C text (``$P4FABRIC_NATIVE_CACHE``, else
``$XDG_CACHE_HOME/p4fabric/native``, else ``~/.cache/p4fabric/native``), so a fresh clone
builds it on first use and every later process (a sweep's workers, a split run's parts)
loads it. Without a C compiler (or cffi) the build raises ``NativeUnavailable`` with one
line saying why; callers fall back to the Python pipeline."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import io
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from common.cachedir import cache_path

from .cruntime import CDEF

CFLAGS = ["-O2", "-fno-strict-aliasing", "-w"]
_loaded: dict[str, ModuleType] = {}


class NativeUnavailable(Exception):
    """The native pipeline cannot be built here (no compiler, no cffi): one line why."""


def cache_dir() -> Path:
    return cache_path("native", "P4FABRIC_NATIVE_CACHE")


def module_name(source: str, cdef: str = CDEF, prefix: str = "_p4native_") -> str:
    key = hashlib.sha256((source + cdef + " ".join(CFLAGS) + sys.version).encode()).hexdigest()
    return f"{prefix}{key[:20]}"


def load(source: str, cdef: str = CDEF, prefix: str = "_p4native_") -> Any:
    """The compiled module (``.ffi``, ``.lib``) of the C text ``source`` declared by ``cdef``
    (a generated pipeline's by default; sim.core builds the simulator's core with it too)."""
    name = module_name(source, cdef, prefix)
    mod = _loaded.get(name)
    if mod is not None:
        return mod
    try:
        import cffi
    except ImportError as exc:  # pragma: no cover - cffi is a dependency
        raise NativeUnavailable(f"the native pipeline needs cffi ({exc})") from None
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NativeUnavailable(f"cannot create the native build cache {d}: {exc}") from None
    with open(d / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build per module even with parallel processes
        so = _built(d, name)
        if so is None:
            ffi = cffi.FFI()
            ffi.cdef(cdef)
            ffi.set_source(name, source, extra_compile_args=CFLAGS)
            log: list[str] = []
            try:
                with _quiet(log):
                    ffi.compile(tmpdir=str(d / f"{name}.build"), verbose=False)
            except Exception as exc:  # noqa: BLE001 - distutils/setuptools raise many kinds
                errors = [ln for ln in "".join(log).splitlines() if "error" in ln]
                last = str(exc).strip().splitlines()
                why = errors[0].strip() if errors else (last[-1] if last else type(exc).__name__)
                cc = (os.environ.get("CC") or "cc").split()[0]
                if shutil.which(cc) is None:
                    raise NativeUnavailable(
                        f"cannot compile the native pipeline: no C compiler ({cc}; "
                        "'apt install build-essential')") from None
                raise NativeUnavailable(
                    f"cannot compile the native pipeline with {cc}: {why}") from None
            so = _built(d / f"{name}.build", name)
            if so is None:
                raise NativeUnavailable("the native pipeline's build produced no module")
            final = d / so.name
            os.replace(so, final)
            shutil.rmtree(d / f"{name}.build", ignore_errors=True)
            so = final
    spec = importlib.util.spec_from_file_location(name, so)
    if spec is None or spec.loader is None:
        raise NativeUnavailable(f"cannot load the native module {so}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _loaded[name] = mod
    return mod


@contextlib.contextmanager
def _quiet(log: list[str]) -> Iterator[None]:
    """The compiler's output (file descriptors 1 and 2) into ``log``, not the terminal."""
    fd, path = tempfile.mkstemp(prefix="p4native-", suffix=".log")
    saved = [os.dup(1), os.dup(2)]
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (*saved, fd):
            os.close(f)
        with contextlib.suppress(OSError):
            log.append(Path(path).read_text(errors="replace"))
            os.unlink(path)


def _built(d: Path, name: str) -> Path | None:
    for p in d.glob(f"{name}*.so") if d.is_dir() else ():
        return p
    return None
