/* for statements (P4_16 spec 1.2.5): three-clause loops with break and continue, several
 * init/update clauses, a run-time bound, nested loops, a loop in an action and in a
 * function and an action (with return inside the loop), and the range form for (T x in lo .. hi)
 * (p4test accepts it; p4c's BMv2 back end does not, so the STF is the oracle here). */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> n;
    bit<8> sum;
    bit<8> pairs;
    bit<8> m;
    bit<8> first_big;
    bit<8> fact;
    bit<8> range_sum;
    bit<8> ret;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
}

parser LoopParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

// the first i in 1..n with i * i > 20, or 0: return inside the loop
bit<8> first_square_over_20(in bit<8> n) {
    for (bit<8> i = 1; i <= n; i = i + 1) {
        if (i * i > 20) {
            return i;
        }
    }
    return 0;
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action factorial() {
        bit<8> f = 1;
        for (bit<8> i = 2; i <= hdr.h.n; i = i + 1) {
            f = f * i;
        }
        hdr.h.fact = f;
    }
    action return_in_loop() {
        for (bit<8> i = 0; i < 10; i = i + 1) {
            if (i == 3) {
                return;
            }
            hdr.h.ret = hdr.h.ret + 1;
        }
        hdr.h.ret = 0xff;
    }
    apply {
        sm.egress_spec = 1;
        // 0 + 1 + 3 + 4 (2 skipped), stops at 5 or at n
        bit<8> s = 0;
        for (bit<8> i = 0; i < hdr.h.n; i = i + 1) {
            if (i == 5) {
                break;
            }
            if (i == 2) {
                continue;
            }
            s = s + i;
        }
        hdr.h.sum = s;
        // nested loops: pairs (a, b) with a < b < n; break leaves only the inner loop
        bit<8> p = 0;
        for (bit<8> a = 0; a < hdr.h.n; a = a + 1) {
            for (bit<8> b = a + 1; b < 16; b = b + 1) {
                if (b >= hdr.h.n) {
                    break;
                }
                p = p + 1;
            }
        }
        hdr.h.pairs = p;
        // two init and two update clauses
        for (bit<8> k = 0, bit<8> step = 1; k < 3; k = k + 1, step = step + step) {
            hdr.h.m = hdr.h.m + step;
        }
        hdr.h.first_big = first_square_over_20(hdr.h.n);
        factorial();
        return_in_loop();
        // the range form, including the largest value of the type (no wrap-around)
        for (bit<8> v in 0xfe .. 0xff) {
            hdr.h.range_sum = hdr.h.range_sum + (v & 1);
        }
        for (bit<8> v in hdr.h.n .. 3) {
            hdr.h.range_sum = hdr.h.range_sum + 0x10;
        }
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control LoopDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(LoopParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), LoopDeparser()) main;
