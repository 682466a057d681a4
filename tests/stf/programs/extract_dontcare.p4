/* extract<T>(_) (as p4c takes it): the header is read from the packet (a too short packet
 * still fails the parser) and discarded: it is not emitted, the next extract reads on. */
#include <core.p4>
#include <v1model.p4>
header skip_t { bit<16> s; }
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract<skip_t>(_); pkt.extract(hdr.h); transition accept; }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.h.a = hdr.h.a + 1; }
}
control VC(inout H hdr, inout M m) { apply { } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
