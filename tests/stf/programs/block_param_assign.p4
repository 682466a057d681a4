/* Assigning a whole struct to a block's own parameter updates the caller's object: the
 * copy-out of a sub-control's and a sub-parser's 'inout headers' parameter, and a direct
 * `hdr = tmp;` in a control. The header stack keeps this program on the general driver,
 * where the parameter is a reference to the caller's object. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> c;
}

header item_t {
    bit<8> v;
}

struct headers_t {
    h_t       h;
    item_t[2] items;
}

struct metadata_t {
    bit<8> m;
}

parser ItemParser(packet_in pkt, inout headers_t hh) {
    state start {
        pkt.extract(hh.items.next);
        pkt.extract(hh.items.next);
        hh.h.c = 0xcc;
        transition accept;
    }
}

parser MainParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    ItemParser() items;
    state start {
        pkt.extract(hdr.h);
        items.apply(pkt, hdr);
        transition accept;
    }
}

control Sub(inout headers_t hh) {
    apply {
        hh.h.a = 0x11;
        hh.items[0].v = 0x22;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            sub.apply(hdr);
        } else if (hdr.h.op == 2) {
            headers_t tmp = hdr;
            tmp.h.b = 0x33;
            tmp.items[1].setInvalid();
            hdr = tmp;
        } else if (hdr.h.op == 3) {
            metadata_t mm = { 0x44 };
            meta = mm;
            hdr.h.b = meta.m;
        }
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MainDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.items);
    }
}

V1Switch(MainParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), MainDeparser()) main;
