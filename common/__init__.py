"""Generic utilities every layer may use (the bottom layer): they import nothing of the project.

- ``histogram``: the log-linear microsecond histogram the switch, the hosts, the simulator and
  the experiments' guard share;
- ``checksum``: the Internet checksum (RFC 1071) of the headers hosts, probes and the
  simulator build;
- ``cachedir``: where per-machine caches live (``~/.cache/p4fabric``);
- ``jsontypes``: the JSON value types records serialize to at a file or wire edge.
"""
