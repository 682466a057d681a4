/* Registers: read-modify-write of cell trace.a by trace.b, the old value written into the
 * packet; an out-of-range index reads 0 and its write is ignored; register_write and
 * check_register from the STF; a signed register wraps. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t {
    bit<8> old;
    int<8> s;
}

#include "include/trace.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    register<bit<8>>(4) acc;
    register<int<8>>(1) signed_acc;
    apply {
        acc.read(meta.old, (bit<32>)hdr.trace.a);
        acc.write((bit<32>)hdr.trace.a, meta.old + hdr.trace.b);
        hdr.trace.c = meta.old;
        signed_acc.read(meta.s, 0);
        meta.s = meta.s + (int<8>)hdr.trace.b;
        signed_acc.write(0, meta.s);
        hdr.trace.d = (bit<8>)meta.s;
        sm.egress_spec = 1;
    }
}

control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), TraceDeparser()) main;
