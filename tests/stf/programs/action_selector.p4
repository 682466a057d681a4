/* Action selector: the group member is chosen by crc16 over the selector keys (srcAddr,
 * srcPort: 6 bytes) modulo the group size; a plain member can also back an entry.
 * Uses the STF extensions member/group and group=/member= in add. */
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
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) ecmp_sel;
    table ecmp {
        key = {
            hdr.ipv4.dstAddr : lpm;
            hdr.ipv4.srcAddr : selector;
            hdr.l4.srcPort   : selector;
        }
        actions = { set_port; drop; }
        default_action = drop();
        implementation = ecmp_sel;
    }
    apply {
        if (hdr.l4.isValid()) {
            ecmp.apply();
        } else {
            drop();
        }
    }
}

V1Switch(L4Parser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), L4Deparser()) main;
