"""The p4switch *device config*: what ``ForwardingPipelineConfig.p4_device_config`` carries.

p4switch compiles P4 itself, so its "binary" is the P4 source: a JSON bundle of the main file
and every file it includes by a relative path. A controller (or p4runtime-shell's
``FwdPipeConfig(p4info, bin)``) pushes it with SetForwardingPipelineConfig and the switch
compiles it on arrival. Why source rather than a serialized IR: the bundle stays readable,
survives p4switch upgrades (the IR is an internal contract), and compile errors come back with
``file:line:col`` in the bundle's own file names. Format (documented in docs/device-config.md)::

    {"format": "p4switch-bundle-1",
     "main": "fabric.p4",
     "files": {"fabric.p4": "...", "include/headers.p4": "..."},
     "defines": {"NAME": "value"}}          # optional, like -D

``#include <core.p4>`` / ``<v1model.p4>`` come from p4switch's own include directory and are not
part of the bundle.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from p4switch import ir

FORMAT = "p4switch-bundle-1"
MAX_BUNDLE_BYTES = 64 << 20

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)


class BundleError(ValueError):
    """A malformed bundle (not a P4 compile error): the server answers INVALID_ARGUMENT."""


@dataclass
class Bundle:
    main: str
    files: dict[str, str]
    defines: dict[str, str] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        doc = {"format": FORMAT, "main": self.main, "files": dict(sorted(self.files.items()))}
        if self.defines:
            doc["defines"] = dict(self.defines)
        return json.dumps(doc, indent=1).encode()


def _safe_path(name: str) -> str:
    p = PurePosixPath(name)
    if not name or p.is_absolute() or ".." in p.parts or "\\" in name:
        raise BundleError(f"bundle file name {name!r} must be a relative path without '..'")
    return str(p)


def parse_bundle(data: bytes) -> Bundle:
    """Decode and validate a device config; BundleError says what is wrong."""
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleError("device config is larger than 64 MiB")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BundleError(f"device config is not a p4switch bundle (JSON): {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BundleError(f'device config must be a JSON object with "format": "{FORMAT}"')
    files = doc.get("files")
    main = doc.get("main")
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        raise BundleError('"files" must map file names to P4 source text')
    if not isinstance(main, str) or main not in files:
        raise BundleError('"main" must name one of the bundle\'s files')
    defines = doc.get("defines", {})
    if not isinstance(defines, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in defines.items()
    ):
        raise BundleError('"defines" must map names to strings')
    return Bundle(_safe_path(main), {_safe_path(k): v for k, v in files.items()}, defines)


def bundle_from_file(path: str | Path, include_dirs: list[Path] | None = None) -> Bundle:
    """Collect ``path`` and the files it includes (transitively) that live next to it or in
    ``include_dirs``; names in the bundle are relative to the main file's directory."""
    main = Path(path).resolve()
    root = main.parent
    search = [root] + [Path(d).resolve() for d in (include_dirs or [])]
    files: dict[str, str] = {}
    todo = [main]
    while todo:
        f = todo.pop()
        try:
            rel = f.relative_to(root).as_posix()
        except ValueError:
            rel = next((f.relative_to(d).as_posix() for d in search if f.is_relative_to(d)),
                       f.name)
        if rel in files:
            continue
        text = f.read_text()
        files[rel] = text
        for m in _INCLUDE.finditer(text):
            kind, target = m.group(1), m.group(2)
            dirs = ([f.parent] if kind == '"' else []) + search
            for d in dirs:
                cand = (d / target).resolve()
                if cand.is_file():
                    todo.append(cand)
                    break
            # not found: a system include (core.p4, v1model.p4) or an error the compiler reports
    return Bundle(main.relative_to(root).as_posix(), files)


def running_device_config(program: ir.Program) -> bytes:
    """What GetForwardingPipelineConfig returns for a program loaded from the command line:
    the BMv2 JSON it was read from, or a bundle rebuilt from its P4 sources (b"" without)."""
    if program.main_file.endswith(".json") and program.main_file in program.sources:
        return program.sources[program.main_file].encode()
    bundle = bundle_from_program(program)
    return bundle.to_bytes() if bundle else b""


def bundle_from_program(program: ir.Program) -> Bundle | None:
    """A bundle rebuilt from ``Program.sources`` (for a program loaded from the command line),
    or None when the program does not carry its sources."""
    if not program.sources or not program.main_file:
        return None
    main = Path(program.main_file).resolve()
    root = main.parent
    files: dict[str, str] = {}
    for name, text in program.sources.items():
        p = Path(name).resolve()
        if p.is_relative_to(root):
            files[p.relative_to(root).as_posix()] = text
    rel = main.relative_to(root).as_posix()
    if rel not in files:
        return None
    return Bundle(rel, files)


def compile_bundle(bundle: Bundle) -> ir.Program:
    """Compile a bundle with the front end (raises ``P4CompileError`` with bundle-relative
    ``file:line:col``). The files are written to a private temporary directory because the front
    end reads files; the directory is the working directory's stand-in, so error locations name
    bundle files as the user wrote them."""
    from p4switch import frontend

    with tempfile.TemporaryDirectory(prefix="p4switch-bundle-") as tmp:
        root = Path(tmp)
        for name, text in bundle.files.items():
            dest = root / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
        try:
            program = frontend.compile_file(str(root / bundle.main),
                                            defines=bundle.defines or None)
        except Exception as e:
            _relocate(e, root)
            raise
    return program


def _relocate(e: Any, root: Path) -> None:
    """Rewrite temp-dir paths in a compile error back to bundle-relative names (``e``: any
    exception; those with a ``loc`` are rewritten)."""
    loc = getattr(e, "loc", None)
    prefix = str(root) + "/"
    if loc is not None and isinstance(loc.file, str) and loc.file.startswith(prefix):
        try:
            e.loc = ir.SourceLoc(loc.file[len(prefix):], loc.line, loc.col)
        except AttributeError:
            pass
