"""Congestion control and RTT-based timers: pure code the host agent and the simulator share.

``make_cc(name, ctx, params)`` builds one flow's algorithm from the registry (``REGISTRY``,
names in ``CcName``); ``RttEstimator`` is RFC 6298; ``marking`` sizes the switches' ECN
threshold for an algorithm. Nothing here does I/O or reads a clock.
"""

from . import dcqcn, dctcp, fixed, nscc  # noqa: F401  (register the algorithms)
from .base import (
    DEFAULT_CC,
    REGISTRY,
    CcContext,
    CcName,
    CongestionControl,
    cc_params,
    make_cc,
    register,
)
from .marking import (
    PortMarking,
    base_rtt,
    ecn_threshold,
    fabric_ecn_threshold,
    fabric_marking,
    host_hops,
)
from .rtt import RttCache, RttEstimator

__all__ = ["DEFAULT_CC", "REGISTRY", "CcContext", "CcName", "CongestionControl", "RttCache", "RttEstimator",
           "PortMarking", "base_rtt", "cc_params", "ecn_threshold", "fabric_ecn_threshold",
           "fabric_marking", "host_hops",
           "make_cc", "register"]
