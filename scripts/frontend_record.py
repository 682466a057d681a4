"""A pytest plugin that records every program the front end compiles during a test run, to
compare the front end's behaviour before and after a refactoring (with
``scripts/frontend_snapshot.py``, which covers the program files):

    FRONTEND_RECORD=out.txt pytest -p scripts.frontend_record tests/frontend
    diff before.txt after.txt

Each compiled source (by its text, file name, include dirs and defines) is written once, with
the ``repr`` of its IR or its error message, sorted so that test order does not matter.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import p4switch.frontend as frontend
from p4switch import ir

_records: dict[str, str] = {}
_TMP = re.compile(r"/tmp/pytest-of-[^/]+/pytest-\d+/")  # a tmp_path differs per run
_ROOT = str(Path(frontend.__file__).resolve().parents[2])  # so does the checkout's path
_compile_source = frontend.compile_source


def _recording(text: str, filename: str = "<string>", include_dirs: Sequence[Path] = (),
               defines: Mapping[str, str] | None = None) -> ir.Program:
    key = hashlib.sha256(_TMP.sub("<tmp>/", repr((text, filename, tuple(map(str, include_dirs)),
                         sorted((defines or {}).items())))).replace(_ROOT, "<repo>").encode()
                         ).hexdigest()
    try:
        program = _compile_source(text, filename, include_dirs, defines)
    except Exception as e:
        _records[key] = f"{filename}: refused: {type(e).__name__}: {e}"
        raise
    _records[key] = f"{filename}: {repr(program)}"
    return program


frontend.compile_source = _recording


def pytest_sessionfinish(session: object, exitstatus: int) -> None:
    out = os.environ.get("FRONTEND_RECORD")
    if out:
        with open(out, "w") as f:
            for key in sorted(_records):
                f.write(_TMP.sub("<tmp>/", f"{key} {_records[key]}\n").replace(_ROOT, "<repo>"))
