/* standard_metadata in ingress and egress: ingress_port, packet_length, egress_spec vs
 * egress_port, and a timestamp that follows the STF clock (1 us per packet, plus waits). */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"

header info_t {
    bit<16> ingress_port;
    bit<32> packet_length;
    bit<16> egress_port;
    bit<48> ts;
}

struct headers_t {
    ethernet_t ethernet;
    info_t     info;
}

struct metadata_t { }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.info);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.info.ingress_port = (bit<16>)sm.ingress_port;
        hdr.info.packet_length = sm.packet_length;
        hdr.info.ts = sm.ingress_global_timestamp;
        sm.egress_spec = sm.ingress_port + 1;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.info.egress_port = (bit<16>)sm.egress_port;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.info);
    }
}

V1Switch(P(), NoVerify(), MyIngress(), MyEgress(), NoCompute(), D()) main;
