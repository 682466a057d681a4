"""p4switch, the built-in P4 target, as the lab sees it: the one module the fabric packages
import from (``tests/architecture/test_p4switch_face.py`` holds them to it).

- the match kinds of a table entry's key (``p4switch.matches``, standard library alone);
- the pipeline's contract (``PipelineAPI``, ``TableEntry``, the packet-path results, state
  errors) and the v1model pipeline that implements it (``Pipeline``);
- the egress queues a switch port serves (``EgressQueue``) and bit-rate texts;
- the control socket's client of a running switch (``ControlClient``);
- compiling P4 (``compile_file``), the device config a controller pushes (``bundle_from_file``,
  ``compile_bundle``), its P4Info (``build_p4info``, ``parse_p4info``) and the index the
  switch's P4Runtime server reads a P4Info with (``P4InfoIndex``);
- an in-process switch (``Switch``, ``MemoryPort``), pcap files and the eBPF toolchain check;
- the pipeline's packet path compiled to C for the simulator (``NativePipeline``; it raises
  ``NativeUnsupported`` for a program it cannot express, ``NativeUnavailable`` without a C
  compiler), the cffi build it uses (``native_build``: C text -> a module cached per machine)
  and the set of native pipelines whose tables changed since their last copy into C
  (``NATIVE_STALE``, for a caller that calls their C entry points itself);
- a schema-only P4Runtime server for a program p4switch cannot run, e.g. the Tofino port
  (``start_schema_server``, its state ``SchemaPipeline``).

Everything else in the package is its inside and may change. Importing ``p4switch`` loads
none of it: each name loads its module on first use, so the fabric's pure models, which need
only the match kinds, do not load the front end or the code generators.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from p4switch.control import ControlClient, ControlError
    from p4switch.device_config import Bundle, BundleError, bundle_from_file, compile_bundle
    from p4switch.ebpf.toolchain import unavailable_reason as ebpf_unavailable_reason
    from p4switch.errors import P4CompileError
    from p4switch.frontend import compile_file
    from p4switch.ir import Program
    from p4switch.matches import (
        ExactMatch,
        LpmMatch,
        MatchValue,
        OptionalMatch,
        RangeMatch,
        TernaryMatch,
    )
    from p4switch.native.build import NativeUnavailable
    from p4switch.native.build import load as native_build
    from p4switch.native.cgen import NativeUnsupported
    from p4switch.native.pipeline import STALE as NATIVE_STALE
    from p4switch.native.pipeline import NativePipeline
    from p4switch.p4info import build_p4info
    from p4switch.p4info import parse as parse_p4info
    from p4switch.p4info_index import ActionInfo, P4InfoIndex, TableInfo, canonical_bytes
    from p4switch.pcap import PcapError, PcapWriter, read_pcap
    from p4switch.pipeline.api import (
        Drop,
        EgressJob,
        EgressResult,
        IngressResult,
        Output,
        PipelineAPI,
        ProcessResult,
        QueueingMetadata,
        StateCode,
        StateError,
        TableEntry,
    )
    from p4switch.pipeline.emit import BuildError
    from p4switch.pipeline.pipeline import Pipeline
    from p4switch.ports import MemoryPort
    from p4switch.queues import (
        DEFAULT_QUEUE_DEPTH,
        EgressQueue,
        EgressQueues,
        format_bit_rate,
        parse_bit_rate,
        trim_frame,
    )
    from p4switch.runtime.schema_only import SchemaPipeline, start_schema_server
    from p4switch.switch import Switch

# public name -> (module, name in it)
_FACE: dict[str, tuple[str, str]] = {
    **{n: ("p4switch.matches", n) for n in (
        "ExactMatch", "LpmMatch", "MatchValue", "OptionalMatch", "RangeMatch", "TernaryMatch")},
    **{n: ("p4switch.pipeline.api", n) for n in (
        "Drop", "EgressJob", "EgressResult", "IngressResult", "Output", "PipelineAPI",
        "ProcessResult", "QueueingMetadata", "StateCode", "StateError", "TableEntry")},
    "Pipeline": ("p4switch.pipeline.pipeline", "Pipeline"),
    "NativePipeline": ("p4switch.native.pipeline", "NativePipeline"),
    "NativeUnavailable": ("p4switch.native.build", "NativeUnavailable"),
    "native_build": ("p4switch.native.build", "load"),
    "NATIVE_STALE": ("p4switch.native.pipeline", "STALE"),
    "NativeUnsupported": ("p4switch.native.cgen", "NativeUnsupported"),
    "BuildError": ("p4switch.pipeline.emit", "BuildError"),
    **{n: ("p4switch.queues", n) for n in (
        "DEFAULT_QUEUE_DEPTH", "EgressQueue", "EgressQueues", "format_bit_rate",
        "parse_bit_rate", "trim_frame")},
    "ControlClient": ("p4switch.control", "ControlClient"),
    "ControlError": ("p4switch.control", "ControlError"),
    "compile_file": ("p4switch.frontend", "compile_file"),
    "P4CompileError": ("p4switch.errors", "P4CompileError"),
    "Program": ("p4switch.ir", "Program"),
    **{n: ("p4switch.device_config", n) for n in (
        "Bundle", "BundleError", "bundle_from_file", "compile_bundle")},
    "build_p4info": ("p4switch.p4info", "build_p4info"),
    **{n: ("p4switch.p4info_index", n) for n in (
        "ActionInfo", "P4InfoIndex", "TableInfo", "canonical_bytes")},
    "parse_p4info": ("p4switch.p4info", "parse"),
    "Switch": ("p4switch.switch", "Switch"),
    "MemoryPort": ("p4switch.ports", "MemoryPort"),
    **{n: ("p4switch.pcap", n) for n in ("PcapError", "PcapWriter", "read_pcap")},
    "ebpf_unavailable_reason": ("p4switch.ebpf.toolchain", "unavailable_reason"),
    **{n: ("p4switch.runtime.schema_only", n) for n in (
        "SchemaPipeline", "start_schema_server")},
}

__all__ = [
    "ActionInfo", "BuildError", "Bundle", "BundleError", "ControlClient", "ControlError",
    "DEFAULT_QUEUE_DEPTH", "Drop", "EgressJob", "EgressQueue", "EgressQueues", "EgressResult",
    "ExactMatch", "IngressResult", "LpmMatch", "MatchValue", "MemoryPort", "NATIVE_STALE",
    "NativePipeline", "NativeUnavailable", "NativeUnsupported", "OptionalMatch",
    "Output", "P4CompileError", "P4InfoIndex", "PcapError", "PcapWriter", "Pipeline",
    "PipelineAPI", "ProcessResult", "Program", "QueueingMetadata", "RangeMatch",
    "SchemaPipeline", "StateCode", "StateError", "Switch", "TableEntry", "TableInfo", "TernaryMatch", "build_p4info",
    "bundle_from_file", "canonical_bytes", "compile_bundle", "compile_file",
    "ebpf_unavailable_reason", "format_bit_rate", "native_build", "parse_bit_rate", "parse_p4info", "read_pcap",
    "start_schema_server", "trim_frame"
]


def __getattr__(name: str) -> Any:
    """Load a public name's module on first use (PEP 562) and keep the name here."""
    try:
        module, attr = _FACE[name]
    except KeyError:
        raise AttributeError(f"module 'p4switch' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
