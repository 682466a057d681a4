/* A register sized by a serializable enum member: valid P4 that p4c 1.2.5.16 compiles to
 * BMv2 JSON, but whose P4Info p4c cannot write (it crashes with SIGSEGV); p4switch writes
 * size 4. (test_p4info_p4c.P4C_FAILS records it.) */
#include <core.p4>
#include <v1model.p4>

enum bit<32> Size {
    small = 4
}

header h_t {
    bit<8> a;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
    bit<8> unused;
}

parser ErParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control ErIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    register<bit<8>>(Size.small) cells;
    apply {
        cells.write(3, hdr.h.a);
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control ErDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ErParser(), NoVerify(), ErIngress(), NoEgress(), NoCompute(), ErDeparser()) main;
