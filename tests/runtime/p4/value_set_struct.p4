/* A value_set of a struct type matching two select keys jointly (its P4Info: one match
 * field per member; no type_info, as p4c writes it for parser value sets alone). */

#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct headers { ethernet_t ethernet; ipv4_t ipv4; }
struct metadata { bit<16> m16; bit<8> m8; bit<32> m32; int<8> s8; bool flag; }

struct pair_t { bit<8> a; bit<8> b; }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    value_set<pair_t>(4) pairs;
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType[15:8], hdr.ethernet.etherType[7:0]) {
            pairs: hit;
            (0x08, _): other;
            default: accept;
        }
    }
    state hit { meta.m8 = 1; transition accept; }
    state other { meta.m8 = 2; transition accept; }
}
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
apply { sm.egress_spec = 1; hdr.ethernet.srcAddr[7:0] = meta.m8; }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
