/* Function-like #define macros: arguments are expanded, substituted and the result rescanned
 * (MAX of SQ), nested parentheses and list braces in arguments, a macro used in #if. */
#include <core.p4>
#include <v1model.p4>

#define SQ(x) ((x) * (x))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define SET_PORT(sm, p) sm.egress_spec = (p)
#define WIDTH(n) bit<(n)>
#define PORTS 2

header h_t {
    WIDTH(8) a;
    WIDTH(8) b;
    WIDTH(8) c;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
}

parser MacroParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
#if SQ(PORTS) == 4
        SET_PORT(sm, PORTS - 1);
#else
        SET_PORT(sm, 3);
#endif
        hdr.h.c = MAX(SQ(hdr.h.a), MAX(hdr.h.b, 8w9));
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MacroDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(MacroParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), MacroDeparser()) main;
