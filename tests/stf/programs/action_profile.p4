/* Action profile: table entries point at shared members (two entries share member 7); a miss
 * runs the direct default action. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t { }

#include "include/l4_pipeline.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }
    action rewrite(port_t port, mac_addr_t dmac) {
        sm.egress_spec = port;
        hdr.ethernet.dstAddr = dmac;
    }
    action_profile(32w16) nexthops;
    table routes {
        key = { hdr.ipv4.dstAddr : exact; }
        actions = { rewrite; drop; }
        default_action = drop();
        implementation = nexthops;
    }
    apply {
        routes.apply();
    }
}

V1Switch(L4Parser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), L4Deparser()) main;
