"""Fabric controller: per-switch P4Runtime connections, routing, LB schemes, control loops."""
