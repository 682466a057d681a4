/* MyIngress-to-egress clone to a mirroring session: the clone carries the packet as it arrived
 * (ingress edits are not in it), instance_type INGRESS_CLONE, and the metadata of field list 1
 * only when clone_preserving_field_list is used; an unconfigured session makes no copy. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t {
    @field_list(1)
    bit<8> tag;
    bit<8> other;
}

#include "include/trace.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        meta.tag = 0x5a;
        meta.other = 0x77;
        sm.egress_spec = 1;
        if (hdr.trace.a == 1) {
            clone_preserving_field_list(CloneType.I2E, 5, 1);
        } else if (hdr.trace.a == 2) {
            clone(CloneType.I2E, 6);   // session 6 is never configured
        } else {
            clone(CloneType.I2E, 5);
        }
        hdr.ethernet.dstAddr = 0x111111111111;   // only the original sees this
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.trace.b = (bit<8>)sm.instance_type;
        hdr.trace.c = meta.tag;
        hdr.trace.d = meta.other;
        if (sm.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE) {
            hdr.ethernet.srcAddr = 0xc10e00000000 | (bit<48>)sm.egress_port;
        }
    }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), MyEgress(), NoCompute(), TraceDeparser()) main;
