"""The simulator's struct-built frames match the agent's scapy-built ones (the congestion
control they feed is tested in tests/traffic/test_congestion.py)."""

from __future__ import annotations

from model.entropy import entropy_port
from sim import frames
from traffic.frames import FlowHeader, build_frame
from traffic.nexthop import Route
from traffic.packet import ACK, F_ACK, F_NACK, HDR


def test_data_frame_is_byte_identical_to_the_agents() -> None:
    route = Route("eth0", "10.0.0.2", "02:00:0a:00:00:02", "10.0.0.1", "02:fe:00:01:00:01")
    h = FlowHeader(job=1, src_rank=0, dst_rank=5, step=3, flow=42, npkts=9)
    for length, seq, flags in ((1400, 0, 0), (123, 8, 0x08)):
        want = build_frame(route, "10.1.0.3", length, h, qp=0, seq=seq, flags=flags)
        prefix = frames.l2l3_header(route.src_mac, route.nexthop_mac, route.src_ip, "10.1.0.3",
                                    entropy_port(1, 0, 42, 0), 4791, HDR.size + length)
        got = frames.data_frame(prefix, flags, 1, 0, 5, 3, 0, 42, seq, 9, length, bytes(1400))
        assert got == bytes(want)


def test_ect_frame_has_valid_ip_checksum_and_ack_carries_the_ce_echo() -> None:
    from scapy.layers.inet import IP

    prefix = frames.l2l3_header("02:00:0a:00:00:02", "02:fe:00:01:00:01", "10.0.0.2",
                                "10.1.0.3", 50000, 4791, HDR.size + 10, tos=frames.ECN_ECT0)
    f = frames.data_frame(prefix, 0, 1, 0, 1, 0, 0, 7, 0, 1, 10, bytes(10))
    ip = IP(f[14:])
    assert ip.tos == frames.ECN_ECT0
    chk = ip.chksum
    del ip.chksum
    assert IP(bytes(ip)).chksum == chk
    a = frames.ack_frame(frames.ack_prefix("02:00:0a:00:00:03", "02:fe:00:02:00:01", "10.1.0.3",
                                           "10.0.0.2"), 1, 1, 0, 7, 5, 6, 0b101, True, ce=3, ce_bits=0b100)
    assert len(a) == frames.ACK_FRAME_LEN
    fields = HDR.unpack_from(a, frames.HDR_AT)
    assert fields[1] == F_ACK | F_NACK and fields[7] == 7 and fields[-1] == 3
    assert ACK.unpack_from(a, frames.ACK_AT) == (5, 6, 0b101, 0b100)
