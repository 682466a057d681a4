"""fabric.p4 puts controller packet-outs (the failure loop's liveness probes) in egress priority
queue 1 (standard_metadata.priority), so a full data queue cannot tail-drop them; data stays 0."""

from __future__ import annotations

from fabric_harness import CPU_PORT, Fabric, udp_pkt


def test_packet_outs_take_the_control_priority_and_data_does_not() -> None:
    f = Fabric()
    f.route_nhop("10.2.0.0", 16, port=7, dmac=0x020000000002)
    data = f.p.ingress(udp_pkt(dst="10.2.0.1"), 1, f.now)
    out = f.p.ingress((7 << 7).to_bytes(2, "big") + udp_pkt(), CPU_PORT, f.now)
    assert [(j.egress_port, j.priority) for j in data.jobs] == [(7, 0)]
    assert [(j.egress_port, j.priority) for j in out.jobs] == [(7, 1)]
