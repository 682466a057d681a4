"""struct tcp_info parsing: hand-built buffers of several kernel generations, and a live socket."""

from __future__ import annotations

import socket
import struct

from traffic.tcpinfo import LAYOUT, TcpInfo, aggregate, parse, read


def info_bytes(size: int, **values: int) -> bytes:
    """A tcp_info image of `size` bytes with the given fields set at their UAPI offsets."""
    buf = bytearray(size)
    for name, v in values.items():
        off, fmt, _k = LAYOUT[name]
        struct.pack_into("=" + fmt, buf, off, v)
    return bytes(buf)


FULL = dict(state=1, ca_state=1, snd_mss=1448, lost=2, rtt=120, rttvar=30, snd_cwnd=10,
            reordering=7, total_retrans=5, min_rtt=90, data_segs_in=3, data_segs_out=700,
            bytes_sent=1_013_600, bytes_retrans=7240, dsack_dups=4, reord_seen=9,
            rcv_ooopack=11, total_rto=1)


def test_offsets_are_the_uapi_layout():
    # hand-checked against include/uapi/linux/tcp.h (8 u8, then u32 from offset 8, u64 at 104)
    assert LAYOUT["rtt"][0] == 68 and LAYOUT["reordering"][0] == 88
    assert LAYOUT["total_retrans"][0] == 100 and LAYOUT["data_segs_out"][0] == 156
    assert LAYOUT["bytes_retrans"][0] == 208 and LAYOUT["dsack_dups"][0] == 216
    assert LAYOUT["reord_seen"][0] == 220 and LAYOUT["rcv_ooopack"][0] == 224
    assert LAYOUT["total_rto"][0] == 240


def test_full_buffer_every_field():
    info = parse(info_bytes(280, **FULL))
    assert info.length == 280
    for k, v in FULL.items():
        assert getattr(info, k) == v, k


def test_fields_do_not_bleed_into_neighbours():
    info = parse(info_bytes(232, reord_seen=0xFFFFFFFF))
    assert info.reord_seen == 0xFFFFFFFF
    assert info.dsack_dups == 0 and info.rcv_ooopack == 0


def test_short_return_of_an_old_kernel():
    # a 2.6-era kernel returns 104 bytes: up to tcpi_total_retrans
    info = parse(info_bytes(280, **FULL)[:104])
    assert (info.rtt, info.reordering, info.total_retrans) == (120, 7, 5)
    assert info.min_rtt is None and info.dsack_dups is None and info.reord_seen is None
    # a 4.19..5.3 kernel (224 bytes): reord_seen yes, rcv_ooopack and total_rto no
    info = parse(info_bytes(280, **FULL)[:224])
    assert (info.dsack_dups, info.reord_seen) == (4, 9)
    assert info.rcv_ooopack is None and info.total_rto is None


def test_truncated_in_the_middle_of_a_field():
    info = parse(info_bytes(280, **FULL)[:222])  # half of reord_seen
    assert info.dsack_dups == 4 and info.reord_seen is None
    assert parse(b"") == TcpInfo(length=0)
    assert parse(b"\x01").state == 1


def test_aggregate_sums_counters_and_maxes_gauges():
    a = parse(info_bytes(280, total_retrans=3, reordering=3, rtt=100, reord_seen=1))
    b = parse(info_bytes(280, total_retrans=4, reordering=12, rtt=300, reord_seen=2))
    old = parse(info_bytes(104, total_retrans=1, reordering=3, rtt=200))
    agg = aggregate([a, b, old, None])
    assert agg["connections"] == 4 and agg["with_info"] == 3
    assert agg["total_retrans"] == 8
    assert agg["reord_seen"] == 3          # the old kernel contributes nothing, not zero
    assert agg["reordering_max"] == 12 and agg["rtt_max"] == 300 and agg["rtt_mean"] == 200
    assert aggregate([None])["total_retrans"] is None


def test_live_loopback_connection():
    with socket.socket() as ls:
        ls.bind(("127.0.0.1", 0))
        ls.listen()
        with socket.create_connection(ls.getsockname()) as c:
            s, _ = ls.accept()
            with s:
                c.sendall(b"x" * 100_000)
                got = 0
                while got < 100_000:
                    got += len(s.recv(1 << 20))
                info = read(c)
    assert info is not None and info.length >= 104
    assert info.state == 1                  # TCP_ESTABLISHED
    assert info.total_retrans == 0 and info.reordering is not None and info.reordering >= 3
    assert info.rtt is not None and info.rtt > 0
    if info.bytes_sent is not None:         # 4.19+
        assert info.bytes_sent >= 100_000
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        assert read(u) is None              # not TCP: no answer, no exception
