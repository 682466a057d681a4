/* Multicast: ingress sets mcast_grp; the replication engine makes one copy per (port, rid)
 * of the group; egress sees instance_type REPLICATION and egress_rid, and a table keyed on
 * (mcast_grp, egress_rid) picks each copy's source MAC. A copy back to the ingress port is
 * pruned by the program. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t { }

#include "include/trace.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action set_mcast(bit<16> grp) {
        sm.mcast_grp = grp;
    }
    action set_port(port_t port) {
        sm.egress_spec = port;
    }
    table dmac {
        key = { hdr.ethernet.dstAddr : exact; }
        actions = { set_mcast; set_port; }
        default_action = set_port(1);
    }
    apply {
        dmac.apply();
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action set_smac(mac_addr_t smac) {
        hdr.ethernet.srcAddr = smac;
    }
    table copy_smac {
        key = {
            sm.mcast_grp  : exact;
            sm.egress_rid : exact;
        }
        actions = { set_smac; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (sm.instance_type == PKT_INSTANCE_TYPE_REPLICATION
                && sm.egress_port == sm.ingress_port) {
            mark_to_drop(sm);
            exit;
        }
        hdr.trace.a = (bit<8>)sm.instance_type;
        hdr.trace.b = (bit<8>)sm.egress_rid;
        hdr.trace.c = (bit<8>)sm.egress_port;
        copy_smac.apply();
    }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), MyEgress(), NoCompute(), TraceDeparser()) main;
