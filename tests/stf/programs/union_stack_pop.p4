/* pop_front on a header_union stack (P4_16 spec 8.20): us[i] = us[i + n], the last n unions
 * become invalid. BMv2 simple_switch 1.15.5 rotates instead (the popped unions come back,
 * still valid, at the end), so tests/differential lists this program; p4switch follows the
 * spec, as for header stacks. */
#include <core.p4>
#include <v1model.p4>

header sel_t {
    bit<8> op;
    bit<8> idx;
    bit<8> valid;
    bit<8> n;
}

header a_t {
    bit<8> tag;
    bit<8> x;
}

header b_t {
    bit<8>  tag;
    bit<16> y;
}

header_union ab_t {
    a_t a;
    b_t b;
}

struct headers_t {
    sel_t   sel;
    ab_t[2] us;
}

struct metadata_t {
}

parser PopParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                        inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.sel);
        transition item;
    }
    state item {
        transition select(pkt.lookahead<bit<8>>()) {
            0x0a: item_a;
            0x0b: item_b;
            default: accept;
        }
    }
    state item_a {
        pkt.extract(hdr.us.next.a);
        hdr.sel.n = hdr.sel.n + 1;
        transition item;
    }
    state item_b {
        pkt.extract(hdr.us.next.b);
        hdr.sel.n = hdr.sel.n + 0x10;
        transition item;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.sel.op == 1) {
            hdr.us.pop_front(1);
        } else if (hdr.sel.op == 2) {
            hdr.us.pop_front(2);
        }
        bit<8> v = 0;
        if (hdr.us[0].a.isValid()) {
            v = v | 1;
        }
        if (hdr.us[1].a.isValid()) {
            v = v | 2;
        }
        if (hdr.us[0].b.isValid()) {
            v = v | 4;
        }
        if (hdr.us[1].b.isValid()) {
            v = v | 8;
        }
        hdr.sel.valid = v;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control PopDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.sel);
        pkt.emit(hdr.us);
    }
}

V1Switch(PopParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(),
         PopDeparser()) main;
