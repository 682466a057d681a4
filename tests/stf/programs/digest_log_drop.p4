/* digest<T>() to the control plane, log_msg with and without arguments, mark_to_drop in
 * ingress and in egress, and a packet whose egress_spec was never set (port 0). */
#include <core.p4>
#include <v1model.p4>

struct metadata_t { }

#include "include/trace.p4"

struct learn_t {
    mac_addr_t src;
    bit<9>     port;
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        log_msg("ingress port {} trace.a {}", { sm.ingress_port, hdr.trace.a });
        log_msg("a plain message");
        digest<learn_t>(1, { hdr.ethernet.srcAddr, sm.ingress_port });
        if (hdr.trace.a == 1) {
            mark_to_drop(sm);
        } else if (hdr.trace.a == 2) {
            sm.egress_spec = 2;
        } else if (hdr.trace.a == 3) {
            sm.egress_spec = 3;    // dropped in egress
        }
        // trace.a == 4: egress_spec stays 0, the packet leaves on port 0
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == 3) {
            mark_to_drop(sm);
        }
        hdr.trace.b = 0xeb;
    }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), MyEgress(), NoCompute(), TraceDeparser()) main;
