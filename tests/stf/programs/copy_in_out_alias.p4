/* Copy-in/copy-out (P4_16 spec 6.8) when arguments alias: an action or function whose two
 * inout parameters are the same field copies both in first and out left to right (the last
 * one wins); an in argument is a copy the callee's writes to the aliased out do not change;
 * a sub-control's arguments behave the same. The op byte picks the case. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> c;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
    bit<8> unused;
}

void twice(inout bit<8> x, inout bit<8> y) {
    x = x + 1;
    y = y + 2;
}

bit<8> keep(in bit<8> v, out bit<8> w) {
    w = 0x40;
    return v;
}

parser AlParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control Sub(inout bit<8> x, inout bit<8> y) {
    apply {
        x = 0x10;
        y = y + 0x20;
    }
}

control AlIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    action both(inout bit<8> x, inout bit<8> y) {
        x = x + 1;
        y = y + 2;
    }
    action readwrite(in bit<8> v, out bit<8> w) {
        w = 0x30;
        hdr.h.c = v;
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            both(hdr.h.a, hdr.h.a);
        } else if (hdr.h.op == 2) {
            twice(hdr.h.a, hdr.h.a);
        } else if (hdr.h.op == 3) {
            readwrite(hdr.h.a, hdr.h.a);
        } else if (hdr.h.op == 4) {
            hdr.h.c = keep(hdr.h.a, hdr.h.a);
        } else if (hdr.h.op == 5) {
            sub.apply(hdr.h.a, hdr.h.a);
        } else if (hdr.h.op == 6) {
            hdr.h.b = hdr.h.a + keep(hdr.h.a, hdr.h.a) + hdr.h.a;
        }
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control AlDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(AlParser(), NoVerify(), AlIngress(), NoEgress(), NoCompute(), AlDeparser()) main;
