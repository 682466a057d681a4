/* Header stacks of header_unions (P4_16 spec 7.2.4, 8.19, 8.20): the parser extracts
 * us.next.a or us.next.b by a tag (nextIndex advances per union, a third item is
 * StackOutOfBounds); us[i].isValid() is "some member valid"; setValid() of one member and
 * assigning a valid header to a member invalidate the other member of the same element only
 * (us[i].isValid() and a run-time index, which p4c's BMv2 back end cannot compile:
 * union_stack_index.p4); push_front/pop_front move whole unions; assigning one
 * element to another copies the union; emit(us) writes each element's valid member. */
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

parser UnionStackParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
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
            hdr.us[0].b.setValid();
            hdr.us[0].b.tag = 0x0b;
            hdr.us[0].b.y = 0xb0b0;
        } else if (hdr.sel.op == 3) {
            hdr.us.push_front(1);
            hdr.us[0].a.setValid();
            hdr.us[0].a.tag = 0x0a;
            hdr.us[0].a.x = 0x77;
        } else if (hdr.sel.op == 4) {
            hdr.us[1] = hdr.us[0];
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
        if (sm.parser_error == error.StackOutOfBounds) {
            v = v | 0x80;
        }
        hdr.sel.valid = v;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control UnionStackDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.sel);
        pkt.emit(hdr.us);
    }
}

V1Switch(UnionStackParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(),
         UnionStackDeparser()) main;
