/* Assignment order with side effects, as p4c/BMv2 run it: the right side is evaluated
 * before the location on the left, so es[a] = bump(a) writes the element at the new a; so
 * does a compound assignment: es[a] += bump(a) adds to the element at the new a. */
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header e_t { bit<8> v; }
struct H { h_t h; e_t[4] es; }
struct M { bit<8> x; }
bit<8> bump(inout bit<8> v) { v = v + 1; return v; }
parser P(packet_in pkt, out H hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.es.next); pkt.extract(hdr.es.next); pkt.extract(hdr.es.next); pkt.extract(hdr.es.next); transition accept; }
}
control I(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.b == 0) {
            hdr.es[hdr.h.a].v = bump(hdr.h.a);
        } else {
            hdr.es[hdr.h.a].v += bump(hdr.h.a);
        }
    }
}
control VC(inout H hdr, inout M meta) { apply { } }
control E(inout H hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M meta) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.es); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
