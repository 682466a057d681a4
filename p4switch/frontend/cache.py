"""A per-machine on-disk cache of the front end's result (the checked ``ir.Program``), so every
process after the first that compiles a program (``python -m sim``, a sweep's workers, an
experiment, the examples) skips parsing and elaboration.

An entry lives in ``$P4FABRIC_FRONTEND_CACHE``, else ``$XDG_CACHE_HOME/p4fabric/frontend``,
else ``~/.cache/p4fabric/frontend`` (next to the native build cache), one pickle per key.
``P4FABRIC_NO_CACHE=1`` turns it off. The key is computed *after* preprocessing (which always
runs, and is cheap), so a stale hit cannot happen: it hashes the preprocessed text, its line map,
the text of every file the preprocessor actually read, the defines and include dirs, the Python
and lark versions, and the source of the front end and the IR themselves. Only programs that
compiled without an error or a warning are stored. Any trouble with the cache (unwritable
directory, corrupt or unpicklable entry) only means a miss, never an error.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
import pickle
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from common.cachedir import cache_path
from p4switch import ir
from p4switch.frontend.preprocess import Preprocessed

#: bump when the entry format changes
FORMAT = 1
#: entries kept (least recently used are removed beyond it): bundles from temp dirs and test
#: programs would otherwise grow the directory without bound
MAX_ENTRIES = 256

_FRONTEND_DIR = Path(__file__).resolve().parent
_P4SWITCH_DIR = _FRONTEND_DIR.parent


def enabled() -> bool:
    return os.environ.get("P4FABRIC_NO_CACHE", "") in ("", "0")


def cache_dir() -> Path:
    return cache_path("frontend", "P4FABRIC_FRONTEND_CACHE")


def compiler_files() -> list[Path]:
    """The files whose text decides what the front end makes of a program."""
    files = sorted(p for p in _FRONTEND_DIR.rglob("*") if p.suffix in (".py", ".lark"))
    return files + [_P4SWITCH_DIR / "ir.py", _P4SWITCH_DIR / "errors.py"]


@functools.cache
def compiler_hash() -> str:
    """Hash of the front end's own source (``compiler_files``) and of the lark version, so an
    edit to the compiler or a lark upgrade invalidates every entry."""
    h = hashlib.sha256()
    for p in compiler_files():
        h.update(str(p.relative_to(_P4SWITCH_DIR)).encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    try:  # lark's __init__ carries its version; finding it is cheaper than its metadata
        spec = importlib.util.find_spec("lark")
        if spec is not None and spec.origin:
            h.update(Path(spec.origin).read_bytes())
    except (ImportError, OSError, ValueError):  # an unknown version still keys on the source
        pass
    return h.hexdigest()


def key(pp: Preprocessed, include_dirs: Sequence[Path], defines: Mapping[str, str] | None) -> str:
    h = hashlib.sha256()
    parts: list[str] = [
        f"p4switch-frontend-cache {FORMAT}", sys.version, compiler_hash(), pp.main_file,
        repr(sorted((defines or {}).items())), repr([str(d) for d in include_dirs]),
        repr(pp.origins), pp.text,
    ]
    for name, text in sorted(pp.sources.items()):
        parts += [name, text]
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass") + b"\0\1")
    return h.hexdigest()


def load(k: str) -> ir.Program | None:
    """The cached program of key ``k``, or None (absent, corrupt, from another format)."""
    path = cache_dir() / f"{k}.pickle"
    try:
        with path.open("rb") as f:
            entry = pickle.load(f)
    except Exception:  # noqa: BLE001 - any unreadable entry is a miss, rebuilt by the caller
        return None
    if not (isinstance(entry, tuple) and len(entry) == 2 and entry[0] == k
            and isinstance(entry[1], ir.Program)):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: kept by the pruning in store()
    return entry[1]


def store(k: str, program: ir.Program) -> None:
    """Write the entry atomically (a temp file, then rename); silently nothing if it fails."""
    d = cache_dir()
    try:
        data = pickle.dumps((k, program), protocol=pickle.HIGHEST_PROTOCOL)
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".pickle")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, d / f"{k}.pickle")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _prune(d)
    except Exception:  # noqa: BLE001 - no cache (read-only home, full disk, deep IR) is fine
        return


def _prune(d: Path) -> None:
    entries = []
    for p in d.glob("*.pickle"):
        with contextlib.suppress(OSError):
            entries.append((p.stat().st_mtime, p))
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort()
    for _, p in entries[: len(entries) - MAX_ENTRIES]:
        with contextlib.suppress(OSError):
            p.unlink()

