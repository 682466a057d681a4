"""Packet trimming on the Mininet backend: ``FabricSession(trim=True)`` (``python -m topo
--trim``, ``fabric.trim``) starts every p4switch with ``--trim-bytes``; an incast through a
4-packet queue is trimmed, each trimmed packet NACKed and resent, and the guard counts the
trims instead of calling the headers' missing payloads lost. The launcher and config parts need
no root; the run needs root and Mininet (2 leaves, 1 spine, 4 hosts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from model.spec import leaf_spine
from topo.guard import Measures
from traffic.wire import TRIM_BYTES


def _command(trim_bytes: int | None) -> list[str]:
    """A P4Switch's command line, without starting the node's shell (no root needed)."""
    from topo.nodes import P4Switch

    sw = object.__new__(P4Switch)
    sw.name, sw.spec, sw.run_dir, sw.intfs = "leaf1", leaf_spine(2, 1, 2).switches["leaf1"], \
        Path("/tmp"), {}
    sw.port_rates, sw.port_delays, sw.host_ports = {}, {}, set()
    sw.pcap, sw.log_level, sw.queue_depth, sw.socket_buffer = False, "warn", 4, None
    sw.trim_bytes = trim_bytes
    return sw.command()


def test_the_launcher_passes_trim_bytes_to_p4switch_only() -> None:
    from topo.net import FabricNet, TopoError

    cmd = _command(TRIM_BYTES)
    assert cmd[cmd.index("--trim-bytes") + 1] == str(TRIM_BYTES)
    assert "--trim-bytes" not in _command(None)
    for target in ("bmv2", "ebpf"):
        with pytest.raises(TopoError, match=f"target {target} does not trim"):
            FabricNet(leaf_spine(2, 1, 2), target=target, trim_bytes=TRIM_BYTES)


def test_the_guard_counts_trimmed_frames_as_arrived_headers() -> None:
    m = Measures(data_sent=100, data_arrived=90, trims=10)
    assert m.uncounted == 0
    assert Measures(data_sent=100, data_arrived=90).uncounted == 10


@pytest.mark.root
@pytest.mark.mininet
def test_a_fan_in_is_trimmed_and_each_trim_nacked(tmp_path: Path) -> None:
    """An all-to-all over 4 hosts (each receives from 3 at once) through 2-packet queues:
    packets are trimmed, their receivers NACK them flagged as trimmed (F_TRIM) and the
    guard accounts the cut payloads as trims, not as losses."""
    pytest.importorskip("mininet.net", reason="needs Mininet (Debian package `mininet`)")
    from topo.session import FabricSession

    with FabricSession("leafspine", leaves=2, spines=1, hosts_per_leaf=2, tdf=2000,
                       queue_packets=2, trim=True, loops=[], lock_timeout_s=900,
                       run_dir=tmp_path / "run") as s:
        assert all("--trim-bytes" in sw.command() for sw in s.net.switches)
        r = s.collective("alltoall", "256KB", hosts=["h1", "h2", "h3", "h4"],
                         out_dir=tmp_path / "out")
    assert r.ok, r.summary()
    ranks = [json.loads(p.read_text()) for p in (tmp_path / "out").rglob("rank*.json")]
    assert len(ranks) == 4
    flows = [f for rk in ranks for f in rk["flows"] if not f.get("local")]
    assert r.guard is not None, r.summary()
    trims, trim_nacks = r.guard.trims or 0, sum(f.get("trim_nacks") or 0 for f in flows)
    assert trims > 0 and f"{trims} packets trimmed" in r.summary(), r.summary()
    # a trimmed header can meet a full queue again downstream, so not every trim need
    # reach its receiver; those that do are NACKed as trimmed
    assert 0 < trim_nacks <= trims, (trims, trim_nacks)
    assert r.guard.data_frames_uncounted == 0, r.guard
