/* Resubmit: the first ingress pass asks for a resubmit with field list 0; the second pass sees
 * the packet as it arrived (the first pass's header edits are gone), the preserved field, and
 * instance_type RESUBMIT. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t {
    @field_list(0)
    bit<8> first_port;
    bit<8> scratch;
}

#include "include/trace.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == PKT_INSTANCE_TYPE_NORMAL) {
            meta.first_port = (bit<8>)sm.ingress_port;
            meta.scratch = 0x99;
            hdr.trace.a = 0xee;          // discarded by the resubmit
            resubmit_preserving_field_list(0);
        } else {
            hdr.trace.b = (bit<8>)sm.instance_type;
            hdr.trace.c = meta.first_port;
            hdr.trace.d = meta.scratch;  // not preserved: 0
            sm.egress_spec = 3;
        }
    }
}

control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), TraceDeparser()) main;
