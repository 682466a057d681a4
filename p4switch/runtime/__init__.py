"""P4Runtime for p4switch: the gRPC service (``server``), entity translation (``entities``),
the P4Info-derived id index and bytestring codecs (``schema``) and error plumbing (``errors``).

``start_server(switch, address)`` is what the ``p4switch`` CLI calls; see docs/p4runtime.md.
"""

from p4switch.runtime.server import API_VERSION, P4RuntimeService, start_server, stop_server

__all__ = ["API_VERSION", "P4RuntimeService", "start_server", "stop_server"]
