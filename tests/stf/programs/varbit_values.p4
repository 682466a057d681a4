/* varbit outside header fields, as p4c allows (spec 7.1.6): a typedef of a varbit, a local
 * variable and a struct field (set from a list) that hold a copy of an extracted varbit (its length travels
 * with it), compared with == and written back into another header's varbit field. */
#include <core.p4>
#include <v1model.p4>

typedef varbit<32> opts_t;

header len_t {
    bit<8> bytes;
    bit<8> same;
}

header opt_t {
    opts_t data;
}

struct held_t {
    varbit<32> v;
    bit<8> tag;
}

struct headers_t {
    len_t len;
    opt_t a;
    opt_t b;
}

struct metadata_t {
    bit<8> unused;
}

parser VvParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.a, (bit<32>)hdr.len.bytes * 8);
        pkt.extract(hdr.b, (bit<32>)hdr.len.bytes * 8);
        transition accept;
    }
}

control VvIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        opts_t first = hdr.a.data;
        held_t h = { hdr.b.data, 1 };
        hdr.len.same = first == h.v ? 8w1 : 8w0;
        // swap the two options through the copies
        hdr.a.data = h.v;
        hdr.b.data = first;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control VvDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.len);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(VvParser(), NoVerify(), VvIngress(), NoEgress(), NoCompute(), VvDeparser()) main;
