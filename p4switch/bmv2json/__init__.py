"""p4switch's second front end: BMv2 JSON, as ``p4c-bm2-ss`` writes it, into ``p4switch.ir``.

    from p4switch import bmv2json
    program = bmv2json.load_file("build/prog.json")        # or load(bytes, p4info=...)

So a BMv2 user's compiler output runs on the same pipeline, fused path, queues and P4Runtime
server as p4switch's own front end produces. The format's facts are from behavioral-model's
``docs/JSON_format.md`` (version 2.x). Anything the IR cannot run is refused with a
``Bmv2JsonError`` naming the JSON object (``actions[3] "MyIngress.fwd": primitive 2 'x' is
not supported``). What BMv2 JSON lacks (``@controller_header``, counter units, digest field
names) comes from p4c's P4Info when one is given.
"""

from __future__ import annotations

import json
from pathlib import Path

from p4.config.v1 import p4info_pb2

from p4switch import ir
from p4switch.bmv2json.errors import Bmv2JsonError
from p4switch.bmv2json.program import build_program

__all__ = ["Bmv2JsonError", "is_bmv2_json", "load", "load_file"]

#: keys every p4c-bm2-ss output has and a p4switch bundle never does
_SIGNATURE = ("header_types", "headers", "pipelines")
MAX_BYTES = 64 << 20


def is_bmv2_json(doc: object) -> bool:
    """Whether a decoded JSON document is BMv2 JSON (by content, not by file name)."""
    return isinstance(doc, dict) and all(k in doc for k in _SIGNATURE) and "format" not in doc


def sniff(data: bytes) -> dict | None:
    """The decoded document when ``data`` is BMv2 JSON, else None (cheap for other inputs)."""
    head = data[:4096].lstrip()
    if not head.startswith(b"{") or b'"format"' in head[:200]:
        return None
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return doc if is_bmv2_json(doc) else None


def load(data: bytes | dict, p4info: p4info_pb2.P4Info | None = None,
         name: str = "program.json") -> ir.Program:
    """BMv2 JSON (bytes or decoded) -> IR; Bmv2JsonError (its text starts with ``name``)."""
    try:
        if isinstance(data, bytes | bytearray):
            if len(data) > MAX_BYTES:
                raise Bmv2JsonError("", "BMv2 JSON is larger than 64 MiB")
            try:
                doc = json.loads(bytes(data).decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise Bmv2JsonError("", f"not JSON: {e}") from None
        else:
            doc = data
        if not is_bmv2_json(doc):
            raise Bmv2JsonError("", "not BMv2 JSON (needs header_types, headers, pipelines)")
        meta = doc.get("__meta__", {})
        version = meta.get("version") if isinstance(meta, dict) else None
        if isinstance(version, list) and version and version[0] != 2:
            raise Bmv2JsonError("__meta__", f"BMv2 JSON version {version} is not 2.x")
        if p4info is not None and not (p4info.tables or p4info.actions):
            p4info = None
        try:
            return build_program(doc, p4info, name)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            if isinstance(e, Bmv2JsonError):
                raise
            raise Bmv2JsonError("", f"malformed BMv2 JSON ({type(e).__name__}: {e})") from None
    except Bmv2JsonError as e:
        raise e.located(name) from None


def load_file(path: str | Path, p4info: p4info_pb2.P4Info | None = None) -> ir.Program:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise Bmv2JsonError("", f"cannot read: {e.strerror or e}").located(str(p)) from None
    program = load(data, p4info, str(p))
    program.sources = {str(p): data.decode("utf-8")}  # served back as the device config
    return program
