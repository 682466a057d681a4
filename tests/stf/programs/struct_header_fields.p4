/* Struct-typed header fields (P4_16 spec 7.2.2): a header field may be a struct of
 * bit/int/bool/serializable-enum fields (nested too); extract and emit lay its fields out in
 * order (lookahead too), and they are read and written like any field, also as a whole
 * struct. */
#include <core.p4>
#include <v1model.p4>

enum bit<4> Kind_t { DATA = 1, ACK = 2 }

struct flags_t {
    bit<1> urgent;
    bit<3> level;
    Kind_t kind;
}

struct pair_t {
    bit<8>  lo;
    flags_t flags;
}

header tagged_t {
    bit<8>  tag;
    pair_t  p;
    bit<16> tail;
}

struct headers_t {
    tagged_t t;
}

struct metadata_t {
    bit<3> peek_level;
}

parser ShParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        tagged_t peek = pkt.lookahead<tagged_t>();
        meta.peek_level = peek.p.flags.level;
        pkt.extract(hdr.t);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.t.p.flags.kind == Kind_t.DATA) {
            hdr.t.p.flags.kind = Kind_t.ACK;
            hdr.t.p.flags.level = hdr.t.p.flags.level + 1;
        } else {
            flags_t f = { 1, 7, Kind_t.DATA };
            hdr.t.p.flags = f;
        }
        hdr.t.p.lo = hdr.t.tag;
        hdr.t.tail = (bit<16>)hdr.t.p.flags.urgent | ((bit<16>)meta.peek_level << 8);
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control ShDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.t);
    }
}

V1Switch(ShParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), ShDeparser()) main;
