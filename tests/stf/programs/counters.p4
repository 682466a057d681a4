/* Indexed counters of the three counter types, counted per ingress port, checked with
 * check_counter; an out-of-range index is counted nowhere. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t { }

#include "include/trace.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    counter(8, CounterType.packets_and_bytes) port_stats;
    counter(8, CounterType.packets) port_packets;
    counter(8, CounterType.bytes) port_bytes;
    apply {
        port_stats.count((bit<32>)sm.ingress_port);
        port_packets.count((bit<32>)sm.ingress_port);
        port_bytes.count((bit<32>)sm.ingress_port);
        sm.egress_spec = 1;
    }
}

control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), TraceDeparser()) main;
