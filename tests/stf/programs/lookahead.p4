/* lookahead<T>() peeks without consuming: a one-byte tag chooses between a short (2-byte) and
 * a long (4-byte) option header; advance() skips a pad byte when the tag says so. */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"

header short_t {
    bit<8> tag;
    bit<8> value;
}

header long_t {
    bit<8>  tag;
    bit<24> value;
}

header out_t {
    bit<8> which;
}

struct headers_t {
    ethernet_t ethernet;
    out_t      tag;
    short_t    s;
    long_t     l;
}

struct metadata_t { }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(pkt.lookahead<bit<8>>()) {
            0x01: parse_short;
            0x02: parse_long;
            0x03: skip_pad;
            default: accept;
        }
    }
    state skip_pad {
        pkt.advance(8);
        transition parse_short;
    }
    state parse_short {
        pkt.extract(hdr.s);
        transition accept;
    }
    state parse_long {
        pkt.extract(hdr.l);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.tag.setValid();
        if (hdr.s.isValid()) {
            hdr.tag.which = 0x51;
        } else if (hdr.l.isValid()) {
            hdr.tag.which = 0x4c;
        } else {
            hdr.tag.which = 0x00;
        }
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.tag);
        pkt.emit(hdr.s);
        pkt.emit(hdr.l);
    }
}

V1Switch(P(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), D()) main;
