/* IPv4 LPM forwarding: longest prefix wins, TTL decrement, MAC rewrite, csum16 verify (a bad
 * header checksum is dropped) and update. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t { }

#include "include/l4_pipeline.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }
    action forward(mac_addr_t dmac, mac_addr_t smac, port_t port) {
        hdr.ethernet.dstAddr = dmac;
        hdr.ethernet.srcAddr = smac;
        sm.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr : lpm; }
        actions = { forward; drop; }
        size = 64;
        default_action = drop();
    }
    apply {
        if (!hdr.ipv4.isValid() || sm.checksum_error == 1 || hdr.ipv4.ttl <= 1) {
            drop();
            return;
        }
        ipv4_lpm.apply();
    }
}

V1Switch(L4Parser(), Ipv4VerifyChecksum(), MyIngress(), NoEgress(), Ipv4ComputeChecksum(),
         L4Deparser()) main;
