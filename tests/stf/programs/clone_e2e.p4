/* MyEgress-to-egress clone: the copy is the packet as the original's egress left it (its edits
 * included), goes through egress again with instance_type EGRESS_CLONE on the session's port. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t { }

#include "include/trace.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == PKT_INSTANCE_TYPE_NORMAL) {
            hdr.ethernet.srcAddr = 0x222222222222;
            hdr.trace.a = hdr.trace.a + 1;
            clone(CloneType.E2E, 11);
        } else if (sm.instance_type == PKT_INSTANCE_TYPE_EGRESS_CLONE) {
            hdr.trace.b = (bit<8>)sm.instance_type;
            hdr.trace.c = (bit<8>)sm.egress_port;
        }
    }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), MyEgress(), NoCompute(), TraceDeparser()) main;
