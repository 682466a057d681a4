/* Ternary ACL with overlapping entries: the larger STF priority wins; short hex literals only
 * mask the digits written (bmv2stf's rule); &&& masks; a miss runs the default action. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t { }

#include "include/l4_pipeline.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }
    action set_port(port_t port) {
        sm.egress_spec = port;
    }
    table acl {
        key = {
            hdr.ipv4.dstAddr  : ternary;
            hdr.ipv4.protocol : ternary;
            hdr.l4.dstPort    : ternary;
        }
        actions = { set_port; drop; }
        default_action = drop();
    }
    apply {
        acl.apply();
    }
}

V1Switch(L4Parser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), L4Deparser()) main;
