/* Evaluation order with side effects (P4_16 spec 8.1, 6.8): operands, arguments and select
 * keys left to right; && and || short-circuit and ?: evaluates only the branch taken, also
 * when the untaken side is a function call with an inout argument; x + f(x) where f writes
 * x reads x before the call. The op byte picks the case. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
    bit<16> e;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
    bit<8> k0;
    bit<8> k1;
}

// adds one to v and returns the new value
bit<8> bump(inout bit<8> v) {
    v = v + 1;
    return v;
}

// true, and counts its calls in n
bool yes(inout bit<8> n) {
    n = n + 1;
    return true;
}

bool no(inout bit<8> n) {
    n = n + 1;
    return false;
}

parser EoParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.op) {
            0x10: keys;
            default: accept;
        }
    }
    // the first key is read before the second one's call writes the field
    state keys {
        transition select(hdr.h.a, bump(hdr.h.a)) {
            (0x05, 0x06): matched;
            default: accept;
        }
    }
    state matched {
        hdr.h.d = 0x77;
        transition accept;
    }
}

control EoIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action put(bit<8> x, bit<8> y) {
        hdr.h.c = x;
        hdr.h.d = y;
    }
    table t {
        key = { hdr.h.b: exact; }
        actions = { NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            // x + f(x): x is read before f writes it
            hdr.h.c = hdr.h.a + bump(hdr.h.a);
        } else if (hdr.h.op == 2) {
            // f(x) + x: x is read after
            hdr.h.c = bump(hdr.h.a) + hdr.h.a;
        } else if (hdr.h.op == 3) {
            // && and || do not evaluate their right side when the left decides
            bool r1 = hdr.h.a == 0 && yes(hdr.h.b);
            bool r2 = hdr.h.a != 0 || yes(hdr.h.b);
            bool r3 = hdr.h.a != 0 && no(hdr.h.c);
            bool r4 = hdr.h.a == 0 || no(hdr.h.c);
            hdr.h.d = (r1 ? 8w1 : 8w0) | (r2 ? 8w2 : 8w0) | (r3 ? 8w4 : 8w0) | (r4 ? 8w8 : 8w0);
        } else if (hdr.h.op == 4) {
            // ?: runs only the branch taken
            hdr.h.d = hdr.h.a == 0 ? bump(hdr.h.b) : bump(hdr.h.c);
        } else if (hdr.h.op == 5) {
            // conditions: the left operand is read first
            if (hdr.h.a == bump(hdr.h.a)) {
                hdr.h.d = 1;
            } else {
                hdr.h.d = 2;
            }
        } else if (hdr.h.op == 6) {
            // action arguments left to right
            put(hdr.h.a, bump(hdr.h.a));
        } else if (hdr.h.op == 7) {
            // extern arguments (and the items of a list) left to right
            hash(hdr.h.e, HashAlgorithm.identity, 16w0, { hdr.h.a, bump(hdr.h.a) }, 32w65536);
        } else if (hdr.h.op == 8) {
            // a table applied on the left of &&, a call on its right, nested ?:
            if (t.apply().hit && yes(hdr.h.c)) {
                hdr.h.d = 0xaa;
            } else {
                hdr.h.d = hdr.h.a == 1 ? (hdr.h.b == 1 ? bump(hdr.h.c) : 8w0x11) : 8w0x22;
            }
        } else if (hdr.h.op == 9) {
            // several calls in one expression: each sees the effects of those before it
            hdr.h.d = bump(hdr.h.a) + bump(hdr.h.a) + hdr.h.a;
        }
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control EoDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(EoParser(), NoVerify(), EoIngress(), NoEgress(), NoCompute(), EoDeparser()) main;
