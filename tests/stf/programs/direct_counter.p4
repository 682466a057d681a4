/* A table with a direct counter and a direct meter (never configured: always GREEN); the
 * colour is written into the packet. STF cannot read direct counters, so this checks that
 * they do not disturb forwarding. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t {
    bit<8> colour;
}

#include "include/trace.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) fwd_stats;
    direct_meter<bit<8>>(MeterType.packets) fwd_meter;
    action set_port(port_t port) {
        sm.egress_spec = port;
        fwd_meter.read(meta.colour);
    }
    action drop() {
        mark_to_drop(sm);
    }
    table fwd {
        key = { hdr.trace.a : exact; }
        actions = { set_port; drop; }
        default_action = drop();
        counters = fwd_stats;
        meters = fwd_meter;
    }
    apply {
        meta.colour = 0xff;
        fwd.apply();
        hdr.trace.b = meta.colour;
    }
}

control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), TraceDeparser()) main;
