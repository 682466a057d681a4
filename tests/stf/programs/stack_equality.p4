/* == and != on header stacks and on structs that hold them (P4_16 spec 8.18, 8.12): element
 * by element (invalid headers are equal to each other; valid ones need equal fields). Two
 * copies of the packet's stack are compared after one of them is changed per the op byte.
 * A struct built from a list expression holds copies of the headers and stacks in it. */
#include <core.p4>
#include <v1model.p4>

header op_t {
    bit<8> op;
    bit<8> result;
}

header e_t {
    bit<8> v;
}

struct headers_t {
    op_t op;
    e_t[2] es;
}

struct pair_t {
    e_t[2] s;
    bit<8> tag;
}

struct wrap_t {
    op_t h;
    bit<8> tag;
}

struct metadata_t {
    bit<8> unused;
}

parser SeParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.op);
        pkt.extract(hdr.es.next);
        pkt.extract(hdr.es.next);
        transition accept;
    }
}

control SeIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        e_t[2] copy = hdr.es;
        pair_t p1 = { hdr.es, 1 };
        pair_t p2 = { hdr.es, 1 };
        if (hdr.op.op == 1) {
            copy[1].v = copy[1].v + 1;
            p2.s[0].v = 0;
        } else if (hdr.op.op == 2) {
            copy[0].setInvalid();
            p2.tag = 2;
        } else if (hdr.op.op == 3) {
            // both invalid: equal whatever their fields held
            copy[1].setInvalid();
            hdr.es[1].setInvalid();
        }
        bit<8> r = 0;
        if (copy == hdr.es) {
            r = r | 1;
        }
        if (copy != hdr.es) {
            r = r | 2;
        }
        if (p1 == p2) {
            r = r | 4;
        }
        hdr.op.result = r;
        // a struct built from a list holds copies: writing it leaves the header alone
        wrap_t w = { hdr.op, 9 };
        w.h.op = 0xee;
        p1.s[1].v = 0xee;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control SeDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.op);
        pkt.emit(hdr.es);
    }
}

V1Switch(SeParser(), NoVerify(), SeIngress(), NoEgress(), NoCompute(), SeDeparser()) main;
