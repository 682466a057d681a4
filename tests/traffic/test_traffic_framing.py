"""Length-prefixed messages of the TCP mode: encoding, any chunking, bad streams."""

from __future__ import annotations

import pytest

from traffic.framing import ACK, DATA, HELLO, MSG, Decoder, FramingError, Header, unpack


def stream(*parts: tuple[Header, int]) -> bytes:
    return b"".join(h.pack() + bytes(n) for h, n in parts)


H = Header(HELLO, 1, 0, 1, 2, 4, 77)
D = Header(DATA, 1, 0, 1, 2, 4, 77, 5000)


def collect(dec: Decoder, data: bytes, chunk: int) -> tuple[list[Header], int, list[Header]]:
    hdrs, payload, ends = [], 0, []
    for i in range(0, len(data), chunk):
        for e in dec.feed(data[i:i + chunk]):
            if e.header:
                hdrs.append(e.header)
            payload += e.payload
            if e.end:
                ends.append(e.end)
    return hdrs, payload, ends


def test_roundtrip():
    assert MSG.size == 28
    assert unpack(D.pack()) == D


@pytest.mark.parametrize("chunk", [1, 7, 31, 32, 33, 4096, 1 << 20])
def test_any_chunking_gives_the_same_messages(chunk):
    ack = Header(ACK, 1, 1, 0, 2, 4, 77, 5000)
    data = stream((H, 0), (D, 5000), (Header(DATA, 1, 0, 1, 2, 4, 78, 0), 0), (ack, 0))
    dec = Decoder()
    hdrs, payload, ends = collect(dec, data, chunk)
    assert [h.kind for h in hdrs] == [HELLO, DATA, DATA, ACK]
    assert payload == 5000
    assert [(h.kind, h.flow) for h in ends] == [(HELLO, 77), (DATA, 77), (DATA, 78), (ACK, 77)]
    assert dec.messages == 4 and dec.idle


def test_message_end_only_after_the_last_byte():
    dec = Decoder()
    data = stream((D, 5000))
    _h, payload, ends = collect(dec, data[:-1], 1000)
    assert payload == 4999 and ends == [] and not dec.idle and dec.remaining == 1
    assert [e.end for e in dec.feed(data[-1:]) if e.end] == [D]


def test_partial_header_is_buffered():
    dec = Decoder()
    assert dec.feed(H.pack()[:10]) == [] and not dec.idle
    ev = dec.feed(H.pack()[10:])
    assert ev[0].header == H and ev[-1].end == H


@pytest.mark.parametrize("bad,msg", [
    (b"XXXX" + D.pack()[4:], "bad magic"),
    (D.pack()[:4] + b"\x09" + D.pack()[5:], "version"),
    (D.pack()[:5] + b"\x07" + D.pack()[6:], "kind"),
    (Header(HELLO, 1, 0, 1, 0, 1, 3, 9).pack(), "HELLO with length"),
])
def test_bad_streams_raise_framing_error(bad, msg):
    with pytest.raises(FramingError, match=msg):
        Decoder().feed(bad)
