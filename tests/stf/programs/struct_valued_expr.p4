/* Structure-valued expressions with field names (P4_16 spec 8.13): {f = e, ...} in any
 * field order initialises a struct or a header (making it valid) or a struct constant,
 * compares with ==, and nests. */
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header x_t { bit<8> p; bit<8> q; }
struct pair_t { bit<8> lo; bit<8> hi; }
struct outer_t { pair_t in1; bit<8> tag; }
struct H { h_t h; x_t x; }
struct M { outer_t o; }
const pair_t K = { hi = 1, lo = 2 };
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        m.o = { tag = 7, in1 = { hi = hdr.h.a, lo = hdr.h.b } };
        if (m.o.in1 == { lo = 2, hi = 1 } && m.o.in1 == K) {
            hdr.x = { q = m.o.tag, p = m.o.in1.hi + m.o.in1.lo };
        }
    }
}
control VC(inout H hdr, inout M m) { apply { } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.x); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
