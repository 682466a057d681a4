/* Ethernet plus a small "trace" header (etherType 0x9000) the special-operation programs write
 * their observations into. The including program declares `struct metadata_t` first. */
#ifndef STF_TRACE_P4
#define STF_TRACE_P4

#include "headers.p4"

const bit<16> TYPE_TRACE = 0x9000;

/* standard_metadata.instance_type values (BMv2 simple_switch) */
const bit<32> PKT_INSTANCE_TYPE_NORMAL        = 0;
const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;
const bit<32> PKT_INSTANCE_TYPE_EGRESS_CLONE  = 2;
const bit<32> PKT_INSTANCE_TYPE_RECIRC        = 4;
const bit<32> PKT_INSTANCE_TYPE_REPLICATION   = 5;
const bit<32> PKT_INSTANCE_TYPE_RESUBMIT      = 6;

header trace_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
}

struct headers_t {
    ethernet_t ethernet;
    trace_t    trace;
}

parser TraceParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_TRACE: parse_trace;
            default: accept;
        }
    }
    state parse_trace {
        pkt.extract(hdr.trace);
        transition accept;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control TraceDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.trace);
    }
}

#endif
