/* A left side that calls a function is evaluated before the right side (p4c saves the
 * index of an element access holding a call first): es[id(a)] = bump(a) writes the element
 * at the old a, es[id(a)] += bump(a) adds to it; a left side without a call is still
 * evaluated after the right side (es[a] = bump(a): the element at the new a). */
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header e_t { bit<8> v; }
struct H { h_t h; e_t[4] es; }
struct M { }
bit<8> id(in bit<8> v) { return v; }
bit<8> bump(inout bit<8> v) { v = v + 1; return v; }
parser P(packet_in pkt, out H hdr, inout M meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.es.next); pkt.extract(hdr.es.next); pkt.extract(hdr.es.next); pkt.extract(hdr.es.next); transition accept; }
}
control I(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.b == 0) {
            hdr.es[id(hdr.h.a)].v = bump(hdr.h.a);
        } else if (hdr.h.b == 1) {
            hdr.es[id(hdr.h.a)].v += bump(hdr.h.a);
        } else {
            hdr.es[hdr.h.a].v = bump(hdr.h.a);
        }
    }
}
control VC(inout H hdr, inout M meta) { apply { } }
control E(inout H hdr, inout M meta, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M meta) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.es); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
