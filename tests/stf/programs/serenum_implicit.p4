/* A serializable enum converts to its underlying type implicitly (P4_16 spec 8.3), as p4c
 * takes it: a member as a select case of a bit<16> key, compared with a bit<16> field,
 * assigned to one; and a table entry's keyset written as one list expression ({(k)}). */
#include <core.p4>
#include <v1model.p4>
enum bit<16> Kind { A = 0x0a0a, B = 0x0b0b }
header h_t { bit<16> kind; bit<8> seen; bit<8> res; }
struct H { h_t h; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) {
            Kind.A : is_a;
            default : accept;
        }
    }
    state is_a { hdr.h.seen = 1; transition accept; }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.res = v; }
    table t {
        key = { hdr.h.kind : exact; }
        actions = { set; NoAction; }
        const entries = { {(16w0x0b0b)} : set(0x77); }
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.kind == Kind.B) {
            t.apply();
            hdr.h.kind = Kind.A;
        }
    }
}
control VC(inout H hdr, inout M m) { apply { } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
