/* Two tables whose names' Jenkins hashes agree in the low 24 bits ("c.t1626" and "c.t3872":
 * 0xd73a2734 and 0x1a3a2734), so p4c probes the second one in name order to ...2735; and an
 * action whose @id takes the id that the hash of another action's name would give. Compared
 * with p4c's P4Info by tests/runtime/test_p4info_p4c.py, unit-tested in test_p4info.py. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> f; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control c(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a1() { hdr.h.f = 1; }
    // 0x01000000 | (hash("c.a2") & 0xffffff): c.a2 has to probe past it
    @id(0x01cd7ce5) action a3() { hdr.h.f = 3; }
    action a2() { hdr.h.f = 2; }
    table t3872 { key = { hdr.h.f: exact; } actions = { a1; a3; } }
    table t1626 { key = { hdr.h.f: exact; } actions = { a2; } }
    apply { t3872.apply(); t1626.apply(); }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), c(), Eg(), CC(), D()) main;
