/* An indexed two-rate three-colour packet meter (RFC 2698) configured from the STF; the colour
 * (GREEN 0, YELLOW 1, RED 2) is written into the packet. Needs the clock: uses wait <us>. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t {
    bit<8> colour;
}

#include "include/trace.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    meter(4, MeterType.packets) m;
    apply {
        m.execute_meter((bit<32>)hdr.trace.a, meta.colour);
        hdr.trace.b = meta.colour;
        sm.egress_spec = 1;
    }
}

control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), TraceDeparser()) main;
