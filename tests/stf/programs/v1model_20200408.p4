/* v1model version 20200408 (defined before the include): counters, meters and registers
 * take their index type as a type parameter (counter<I>, meter<I>, register<T, I>), and
 * ports have the type PortId_t. An 8-bit index addresses the arrays directly. */
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> idx;
    bit<8> val;
    bit<8> old;
    bit<8> colour;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
    bit<8> colour;
}

parser VParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
               inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    counter<bit<8>>(16, CounterType.packets) hits;
    meter<bit<8>>(16, MeterType.packets) rate;
    register<bit<8>, bit<8>>(16) cells;
    apply {
        PortId_t out_port = 1;
        sm.egress_spec = out_port;
        hits.count(hdr.h.idx);
        cells.read(hdr.h.old, hdr.h.idx);
        cells.write(hdr.h.idx, hdr.h.val);
        rate.execute_meter(hdr.h.idx, meta.colour);
        hdr.h.colour = meta.colour;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control VDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(VParser(), NoVerify(), VIngress(), NoEgress(), NoCompute(), VDeparser()) main;
