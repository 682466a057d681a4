/* Parser select forms of P4_16 1.2.4: select() with no keys (only default/_ can match), a
 * keyset tuple of one element, and `_` for action parameters that are not out (an action
 * takes any direction; the value passed is unspecified and is not looked at here). */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
    bit<8> seen;
}

parser SfParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select() {
            default: second;
        }
    }
    state second {
        transition select(hdr.h.op) {
            (1): one;
            (8w2): two;
            _: accept;
        }
    }
    state one {
        meta.seen = 0x11;
        transition accept;
    }
    state two {
        meta.seen = 0x22;
        transition select() {
            _: accept;
        }
    }
}

control SfIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action mark(in bit<8> unused, inout bit<8> ignored, bit<8> data) {
        hdr.h.b = meta.seen;
    }
    apply {
        sm.egress_spec = 1;
        hdr.h.a = 0;
        mark(_, _, _);
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control SfDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(SfParser(), NoVerify(), SfIngress(), NoEgress(), NoCompute(), SfDeparser()) main;
