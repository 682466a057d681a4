/* The objects the P4Runtime conformance rows touch (tests/runtime/test_conformance.py), as a
 * program the eBPF back end compiles: an LPM table with set_nhop(dmac, port), a counter and a
 * bit<48> register of 16 cells, under the names the rows use. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct headers_t { ethernet_t ethernet; ipv4_t ipv4; }
struct metadata_t { bit<48> ts; }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x0800: ipv4; default: accept; }
    }
    state ipv4 { pkt.extract(hdr.ipv4); transition accept; }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    counter(8, CounterType.packets_and_bytes) port_counter;
    register<bit<48>>(16) flowlet_ts;
    action drop() { mark_to_drop(sm); }
    action set_nhop(bit<48> dmac, bit<9> port) {
        hdr.ethernet.dstAddr = dmac;
        sm.egress_spec = port;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr : lpm; }
        actions = { set_nhop; drop; }
        default_action = drop();
        size = 1024;
    }
    apply {
        port_counter.count((bit<32>)sm.ingress_port);
        flowlet_ts.write((bit<32>)sm.ingress_port, sm.ingress_global_timestamp);
        if (hdr.ipv4.isValid()) { ipv4_lpm.apply(); }
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control V(inout headers_t hdr, inout metadata_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); } }
V1Switch(P(), V(), MyIngress(), E(), V(), D()) main;
