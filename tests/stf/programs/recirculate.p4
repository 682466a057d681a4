/* Recirculation: egress sends the packet back to ingress until trace.a reaches 3; only the
 * last pass leaves the switch. Field list 0 carries the ingress pass count across passes. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t {
    @field_list(0)
    bit<8> passes;
}

#include "include/trace.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        meta.passes = meta.passes + 1;
        hdr.trace.b = meta.passes;
        hdr.trace.c = (bit<8>)sm.instance_type;
        sm.egress_spec = 2;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.trace.a < 3) {
            hdr.trace.a = hdr.trace.a + 1;
            recirculate_preserving_field_list(0);
        }
    }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), MyEgress(), NoCompute(), TraceDeparser()) main;
