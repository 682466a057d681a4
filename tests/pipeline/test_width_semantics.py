"""bit<W>/int<W> arithmetic as the P4 spec defines it, on a program compiled from P4 text."""

from __future__ import annotations

from p4switch.frontend import compile_source
from p4switch.pipeline import Pipeline

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; int<8> s; bit<8> sh; }
struct headers_t { h_t h; }
struct meta_t {
    bit<8> add; bit<8> sub; int<8> sadd; bit<8> shl_big; bit<8> shl_var; int<8> sshr;
    bit<8> sat_add; bit<8> sat_sub; int<8> ssat; bit<16> cat; bit<8> sliced; bit<4> top;
    bit<8> neg; bit<8> inv; bit<16> widen; bit<8> narrow; bit<8> div; bit<8> mod;
}
parser P(packet_in pk, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control NoV(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        m.add = hdr.h.a + hdr.h.b;
        m.sub = hdr.h.b - hdr.h.a;
        m.sadd = hdr.h.s + 8s1;
        m.shl_big = hdr.h.a << 8;
        m.shl_var = hdr.h.a << hdr.h.sh;
        m.sshr = hdr.h.s >> 1;
        m.sat_add = hdr.h.a |+| hdr.h.b;
        m.sat_sub = hdr.h.b |-| hdr.h.a;
        m.ssat = hdr.h.s |-| 8s1;
        m.cat = hdr.h.a ++ hdr.h.b;
        m.sliced = 8w0;
        m.sliced[7:4] = 4w0xA;
        m.top = hdr.h.a[7:4];
        m.neg = -hdr.h.b;
        m.inv = ~hdr.h.b;
        m.widen = (bit<16>)hdr.h.s;
        m.narrow = (bit<8>)(16w0x1234);
        m.div = hdr.h.a / 8w7;
        m.mod = hdr.h.a % 8w7;
        sm.egress_spec = 1;
    }
}
control NoE(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control NoC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), NoV(), I(), NoE(), NoC(), D()) main;
"""


def test_width_semantics() -> None:
    p = Pipeline(compile_source(PROGRAM, "width.p4"))
    # a = 250, b = 10, s = -128 (0x80), sh = 9
    res = p.ingress(bytes([250, 10, 0x80, 9]), 0, 0)
    m = res.jobs[0].state.meta
    assert m.f_add == (250 + 10) % 256 == 4
    assert m.f_sub == (10 - 250) % 256 == 16
    assert m.f_sadd == -127
    assert m.f_shl_big == 0 and m.f_shl_var == 0  # shifts by >= width give 0
    assert m.f_sshr == -64  # arithmetic shift keeps the sign
    assert m.f_sat_add == 255 and m.f_sat_sub == 0
    assert m.f_ssat == -128  # int<8> saturates at -128
    assert m.f_cat == 0xFA0A
    assert m.f_sliced == 0xA0 and m.f_top == 0xF
    assert m.f_neg == 246 and m.f_inv == 0xF5
    assert m.f_widen == 0xFF80  # int<8> -128 sign-extends to bit<16>
    assert m.f_narrow == 0x34
    assert (m.f_div, m.f_mod) == (250 // 7, 250 % 7)
