/* for ... in over collections (P4_16 spec 1.2.5, for statement): a header stack (every
 * element, valid or not; the variable is a copy, so writing it leaves the stack alone), a
 * stack of header_unions, and a list (list<T>){...} whose items are evaluated once before the
 * first iteration; break and continue; nested loops; a loop in an action. p4test accepts it;
 * p4c's BMv2 back end refuses for-in loops, so the STF is the oracle here. */
#include <core.p4>
#include <v1model.p4>

header out_t {
    bit<8> sum;
    bit<8> valid;
    bit<8> unions;
    bit<8> list_sum;
    bit<8> pairs;
    bit<8> act;
}

header h_t {
    bit<8> v;
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
    out_t   o;
    h_t[4]  hs;
    ab_t[2] us;
}

struct metadata_t {
}

parser ForInParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.o);
        transition item;
    }
    state item {
        transition select(pkt.lookahead<bit<8>>()) {
            0: accept;
            default: one;
        }
    }
    state one {
        pkt.extract(hdr.hs.next);
        transition select(hdr.hs.last.v) {
            0xaa: union_a;
            0xbb: union_b;
            default: item;
        }
    }
    state union_a {
        pkt.extract(hdr.us.next.a);
        transition item;
    }
    state union_b {
        pkt.extract(hdr.us.next.b);
        transition item;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action count_valid() {
        bit<8> n = 0;
        for (h_t e in hdr.hs) {
            if (e.isValid()) {
                n = n + 1;
            }
        }
        hdr.o.act = n;
    }
    apply {
        sm.egress_spec = 1;
        // sum of the valid elements' values up to the first 0xff, skipping 0x01s; writing
        // the copy changes nothing in the stack
        bit<8> s = 0;
        bit<8> seen = 0;
        for (h_t e in hdr.hs) {
            seen = seen + 1;
            if (!e.isValid() || e.v == 1) {
                continue;
            }
            if (e.v == 0xff) {
                break;
            }
            s = s + e.v;
            e.v = 0;
        }
        hdr.o.sum = s;
        hdr.o.valid = seen;
        // unions: count a members, add b members' low bytes
        bit<8> u = 0;
        for (ab_t x in hdr.us) {
            if (x.a.isValid()) {
                u = u + 0x10;
            } else if (x.b.isValid()) {
                u = u + x.b.y[7:0];
            }
        }
        hdr.o.unions = u;
        // the items are read once: the body's write to hdr.o.list_sum is not seen by them
        for (bit<8> k in (list<bit<8>>){1, hdr.o.list_sum, 4}) {
            hdr.o.list_sum = hdr.o.list_sum + k;
        }
        // nested: pairs (i, j) of list items with i < j, inner break
        bit<8> p = 0;
        for (bit<8> i in (list<bit<8>>){1, 2, 3}) {
            for (bit<8> j in (list<bit<8>>){1, 2, 3}) {
                if (j > 2) {
                    break;
                }
                if (i < j) {
                    p = p + 1;
                }
            }
        }
        hdr.o.pairs = p;
        count_valid();
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control ForInDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.o);
        pkt.emit(hdr.hs);
        pkt.emit(hdr.us);
    }
}

V1Switch(ForInParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), ForInDeparser()) main;
