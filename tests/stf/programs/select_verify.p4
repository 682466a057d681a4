/* Parser select with value, mask (&&&), range (..), tuple keys, default and no match
 * (NoMatch), plus verify() raising a program-defined error; ingress reports each outcome. */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"

error { BadVersion }

header h_t {
    bit<8> kind;
    bit<8> sub;
    bit<8> version;
    bit<8> result;
}

struct headers_t {
    ethernet_t ethernet;
    h_t        h;
}

struct metadata_t {
    bit<8> path;
}

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.h);
        verify(hdr.h.version != 0xff, error.BadVersion);
        transition select(hdr.h.kind, hdr.h.sub) {
            (0x01, 0x01)          : path_exact;
            (0x10 &&& 0xf0, _)    : path_mask;
            (0x20 .. 0x2f, 0x00)  : path_range;
            (0x30, default)       : path_any_sub;
            (0x40, 0x40)          : accept;
        }
    }
    state path_exact    { meta.path = 1; transition accept; }
    state path_mask     { meta.path = 2; transition accept; }
    state path_range    { meta.path = 3; transition accept; }
    state path_any_sub  { meta.path = 4; transition accept; }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.NoMatch) {
            hdr.h.result = 0xe1;
        } else if (sm.parser_error == error.BadVersion) {
            hdr.h.result = 0xe2;
        } else if (sm.parser_error != error.NoError) {
            hdr.h.result = 0xee;
        } else {
            hdr.h.result = meta.path;
        }
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.h);
    }
}

V1Switch(P(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), D()) main;
