/* Range and optional match kinds with priorities; a miss runs a default action with data. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t { }

#include "include/l4_pipeline.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action set_port(port_t port) {
        sm.egress_spec = port;
    }
    table classify {
        key = {
            hdr.l4.dstPort    : range;
            hdr.ipv4.protocol : optional;
        }
        actions = { set_port; }
        default_action = set_port(4);
    }
    apply {
        classify.apply();
    }
}

V1Switch(L4Parser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), L4Deparser()) main;
