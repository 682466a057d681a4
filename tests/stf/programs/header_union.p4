/* header_union (P4_16 spec 7.2.5, 8.19): the parser extracts one member by a selector;
 * isValid() on the union; setValid() of one member and assigning a valid header to a member
 * invalidate the others; emit writes the valid member. (Where the spec and BMv2 differ -
 * setInvalid() of a member or assigning an invalid header invalidates the whole union in the
 * spec only - tests/frontend/test_language_ext.py checks the spec's rule.) */
#include <core.p4>
#include <v1model.p4>

header sel_t {
    bit<8> kind;
    bit<8> op;
    bit<8> union_valid;
}

header a_t {
    bit<8> x;
}

header b_t {
    bit<16> y;
}

header_union ab_t {
    a_t a;
    b_t b;
}

struct headers_t {
    sel_t sel;
    ab_t  u;
}

struct metadata_t {
}

parser UnionParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.sel);
        transition select(hdr.sel.kind) {
            1: parse_a;
            2: parse_b;
            default: accept;
        }
    }
    state parse_a {
        pkt.extract(hdr.u.a);
        transition accept;
    }
    state parse_b {
        pkt.extract(hdr.u.b);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.sel.union_valid = hdr.u.isValid() ? 8w1 : 8w0;
        if (hdr.sel.op == 1) {
            // turn an a into a b: setValid(b) invalidates a
            hdr.u.b.setValid();
            hdr.u.b.y = 0xb0b0;
        } else if (hdr.sel.op == 2) {
            // assigning a valid header to a member invalidates the other
            a_t tmp = { 0x77 };
            hdr.u.a = tmp;
        } else if (hdr.sel.op == 4) {
            hdr.u.a.setInvalid();
            hdr.u.b.setInvalid();
        }
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control UnionDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.sel);
        pkt.emit(hdr.u);
    }
}

V1Switch(UnionParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), UnionDeparser()) main;
