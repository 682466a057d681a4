/* Flowlet switching: a flow slot (crc16 of the 5-tuple mod 16) keeps the last-seen
 * timestamp and a flowlet id; a gap larger than the timeout (set by the control plane through
 * the default action of flowlet_cfg) starts a new flowlet. The egress port alternates with the
 * flowlet id's low bit; the id is written into the source MAC's low 16 bits. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t {
    bit<32> slot;
    bit<48> last_seen;
    bit<48> timeout;
    bit<16> flowlet_id;
}

#include "include/l4_pipeline.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    register<bit<48>>(16) last_seen;
    register<bit<16>>(16) flowlet_ids;

    action set_timeout(bit<48> timeout) {
        meta.timeout = timeout;
    }
    table flowlet_cfg {
        key = { }
        actions = { set_timeout; }
        default_action = set_timeout(1000);
    }
    apply {
        if (!hdr.l4.isValid()) {
            mark_to_drop(sm);
            exit;
        }
        flowlet_cfg.apply();
        hash(meta.slot, HashAlgorithm.crc16, 32w0,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               hdr.l4.srcPort, hdr.l4.dstPort }, 32w16);
        last_seen.read(meta.last_seen, meta.slot);
        flowlet_ids.read(meta.flowlet_id, meta.slot);
        if (sm.ingress_global_timestamp - meta.last_seen > meta.timeout) {
            meta.flowlet_id = meta.flowlet_id + 1;
        }
        last_seen.write(meta.slot, sm.ingress_global_timestamp);
        flowlet_ids.write(meta.slot, meta.flowlet_id);
        hdr.ethernet.srcAddr[15:0] = meta.flowlet_id;
        sm.egress_spec = 1 + (port_t)(meta.flowlet_id & 1);
    }
}

V1Switch(L4Parser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), L4Deparser()) main;
