"""The native back end: a v1model program's packet path compiled to C (from the IR, sharing
the eBPF back end's translation) for the simulator; see pipeline.NativePipeline."""

from .build import NativeUnavailable
from .cgen import NativeUnsupported
from .pipeline import NativePipeline, native_pipeline

__all__ = ["NativePipeline", "NativeUnavailable", "NativeUnsupported", "native_pipeline"]
