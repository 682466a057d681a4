/* Function calls in the initializers of parser- and control-level variables (P4_16 spec
 * 10, 11.3): they run at each parse / apply, in declaration order, so a later variable's
 * initializer sees an earlier one's value; a call with an inout argument writes it there. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
    bit<8> e;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
    bit<8> from_parser;
}

bit<8> twice(in bit<8> v) {
    return v + v;
}

bit<8> take(inout bit<8> v) {
    bit<8> old = v;
    v = 0;
    return old;
}

parser BiParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    bit<8> seven = twice(8w3) + 1;
    state start {
        pkt.extract(hdr.h);
        meta.from_parser = seven;
        transition accept;
    }
}

control BiIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    bit<8> first = 5;
    bit<8> doubled = twice(hdr.h.a);
    bit<8> taken = take(hdr.h.b);
    bit<8> after = doubled + first;
    apply {
        sm.egress_spec = 1;
        hdr.h.c = after;
        hdr.h.d = taken;
        hdr.h.e = meta.from_parser;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control BiDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(BiParser(), NoVerify(), BiIngress(), NoEgress(), NoCompute(), BiDeparser()) main;
