/* Source routing over a header stack: the parser extracts hops with .next until bos, .last in
 * select; ingress forwards to hops[0].port, pops it, restores IPv4 at the bottom of stack; a
 * table keyed on hdr.hops[0].port (STF: hops$0.port) overrides ports; more hops than the stack
 * holds is StackOutOfBounds, which ingress sends to port 9. */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"

const bit<16> TYPE_SRCROUTE = 0x1234;

header hop_t {
    bit<1>  bos;
    bit<15> port;
}

struct headers_t {
    ethernet_t ethernet;
    hop_t[4]   hops;
    ipv4_t     ipv4;
}

struct metadata_t { }

parser SrParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_SRCROUTE: parse_hop;
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_hop {
        pkt.extract(hdr.hops.next);
        transition select(hdr.hops.last.bos) {
            1: parse_ipv4;
            default: parse_hop;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action set_port(port_t port) {
        sm.egress_spec = port;
    }
    table hop_override {
        key = { hdr.hops[0].port : exact; }
        actions = { set_port; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (sm.parser_error == error.StackOutOfBounds) {
            sm.egress_spec = 9;
            exit;
        }
        if (!hdr.hops[0].isValid()) {
            mark_to_drop(sm);
            exit;
        }
        sm.egress_spec = (port_t)hdr.hops[0].port;
        hop_override.apply();
        if (hdr.hops[0].bos == 1) {
            hdr.ethernet.etherType = TYPE_IPV4;
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        }
        hdr.hops.pop_front(1);
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control SrDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.hops);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(SrParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), SrDeparser()) main;
