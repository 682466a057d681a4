/* Function declarations (P4_16 spec section 10): return values, in/out/inout parameters with
 * copy-in/copy-out, return inside nested ifs, calls from the parser, a control body, an action
 * and another function, arguments evaluated left to right; a call in a select expression. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
    bit<8> parsed;
}

bit<8> max(in bit<8> x, in bit<8> y) {
    if (x > y) {
        return x;
    }
    return y;
}

bit<8> classify(in bit<8> v) {
    if (v < 0x10) {
        if (v == 0) {
            return 1;
        }
        return 2;
    } else {
        if (v >= 0x80) {
            return 4;
        }
    }
    return 3;
}

// out parameters start fresh; inout ones are copied back after the body
void split(in bit<8> v, out bit<8> hi, out bit<8> lo, inout bit<8> count) {
    hi = v >> 4;
    lo = v & 0xf;
    count = count + 1;
}

// calls another function; x is a copy: the caller's argument does not change until copy-out
bit<8> twice_max(inout bit<8> x, in bit<8> y) {
    x = max(x, y);
    return x + x;
}

// no if: BMv2 cannot run conditionals in parsers
bit<8> hi_nibble(in bit<8> v) {
    return v >> 4;
}

bit<8> bump(inout bit<8> v) {
    v = v + 1;
    return v;
}

parser FnParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        meta.parsed = hi_nibble(hdr.h.a) | 0x20;
        transition select(hi_nibble(hdr.h.op)) {
            0xa: reject_high;
            default: accept;
        }
    }
    state reject_high {
        meta.parsed = 0xee;
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action via_action() {
        hdr.h.d = classify(hdr.h.b);
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            hdr.h.b = max(hdr.h.b, hdr.h.c);
            hdr.h.d = meta.parsed;
        } else if (hdr.h.op == 2) {
            hdr.h.d = 0;
            split(hdr.h.a, hdr.h.b, hdr.h.c, hdr.h.d);
        } else if (hdr.h.op == 3) {
            hdr.h.d = twice_max(hdr.h.a, hdr.h.b);
        } else if (hdr.h.op == 4) {
            via_action();
            hdr.h.c = classify(hdr.h.a) + classify(hdr.h.c);
        } else if (hdr.h.op == 5) {
            // left to right: the first argument is read before bump runs
            hdr.h.d = max(hdr.h.a, bump(hdr.h.a));
        } else if (max(hdr.h.op, 0x90) == hdr.h.op) {
            hdr.h.d = meta.parsed;
        }
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control FnDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(FnParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), FnDeparser()) main;
