/* Default values of sub-block apply parameters (P4_16 spec 6.8.2, as p4c takes them): an
 * omitted 'in' argument of a sub-parser or sub-control is its parameter's default (a number,
 * or a list for a struct); a sub-parser needs no packet_in. */
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct H { h_t h; }
struct M { }
struct pair_t { bit<8> x; bit<8> y; }
parser Half(out bit<8> r, in bit<8> v = 0x40) {
    state start { r = v >> 1; transition accept; }
}
control Add(inout bit<8> v, in pair_t p = { 1, 2 }) {
    apply { v = v + p.x + p.y; }
}
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    Half() half;
    state start {
        pkt.extract(hdr.h);
        half.apply(hdr.h.a, hdr.h.a);
        half.apply(hdr.h.b);
        transition accept;
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    Add() add;
    apply {
        sm.egress_spec = 1;
        add.apply(hdr.h.c);
        add.apply(hdr.h.d, { 0x10, 0x20 });
    }
}
control VC(inout H hdr, inout M m) { apply { } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
