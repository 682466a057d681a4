/* Compound assignment (P4_16 spec, assignment statement): lhs op= rhs is lhs = lhs op rhs with
 * the left side evaluated once; on bit<W>, int<W> (saturating too) and slices. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> f;
    bit<8> g;
    bit<8> h;
    bit<8> i;
    bit<8> j;
    int<8> k;
    int<8> l;
    bit<8> m;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
    bit<8> count;
}

parser CaParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.a += 5;          // wraps
        hdr.h.b -= 1;          // wraps below 0
        hdr.h.c *= 3;
        hdr.h.f <<= 2;
        hdr.h.g >>= 1;
        hdr.h.h &= 0x0f;
        hdr.h.i |= 0x80;
        hdr.h.j ^= 0xff;
        hdr.h.k |+|= 100;      // saturates at 127
        hdr.h.l |-|= 100;      // saturates at -128
        hdr.h.m[3:0] += 1;     // the slice wraps inside its 4 bits
        meta.count = 1;
        meta.count += meta.count;
        hdr.h.a += meta.count;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control CaDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(CaParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), CaDeparser()) main;
