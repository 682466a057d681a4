/* Parser errors reach ingress: a packet too short for the trace header gives PacketTooShort
 * (headers extracted before it stay valid, the rest is payload); the ingress reports the
 * error in the Ethernet source address and forwards anyway, as v1model does. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t { }

#include "include/trace.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.PacketTooShort) {
            hdr.ethernet.srcAddr = 0xbad000000001;
        } else if (sm.parser_error == error.NoError) {
            hdr.ethernet.srcAddr = 0x00000000000f;
        } else {
            hdr.ethernet.srcAddr = 0xbad0000000ff;
        }
        if (!hdr.trace.isValid()) {
            hdr.ethernet.etherType = 0xdead;
        }
    }
}

control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), TraceDeparser()) main;
