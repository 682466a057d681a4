/* Replication on the eBPF target: multicast groups, I2E clones (with and without a field
 * list, one or several session ports), E2E clones, and copies whose header length differs
 * (egress removes or adds the opt header per copy), so each copy's deparser starts from the
 * frame the previous copy left. ctl.mode picks the case, ctl.arg its group/port. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header ctl_t { bit<8> mode; bit<8> arg; bit<8> itype; bit<8> rid; bit<8> eport; bit<8> tag; }
header opt_t { bit<32> v; }
struct headers_t { ethernet_t eth; ctl_t ctl; opt_t opt; }
struct metadata_t {
    @field_list(1)
    bit<8> tag;
    bit<8> other;
}

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) { 0x9000: ctl; default: accept; }
    }
    state ctl {
        pkt.extract(hdr.ctl);
        transition select(hdr.ctl.mode[7:7]) { 1: opt; default: accept; }
    }
    state opt { pkt.extract(hdr.opt); transition accept; }
}

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        meta.tag = hdr.ctl.arg;
        meta.other = 0x77;
        sm.egress_spec = (bit<9>)(hdr.ctl.arg & 3) + 1;
        bit<8> m = hdr.ctl.mode & 7;
        if (!hdr.ctl.isValid()) {
            sm.egress_spec = 1;
        } else if (m == 1) {
            sm.mcast_grp = (bit<16>)(hdr.ctl.arg & 3) + 1;   // group 4 has no replicas
        } else if (m == 2) {
            clone_preserving_field_list(CloneType.I2E, 5, 1);
        } else if (m == 3) {
            clone(CloneType.I2E, 6);                          // three session ports
        } else if (m == 4) {
            clone(CloneType.I2E, 5);
            mark_to_drop(sm);                                 // the clone still leaves
        } else if (m == 6) {
            clone(CloneType.I2E, 9);                          // no such session
        }
        hdr.eth.dst = 0x111111111111;                         // not in an I2E clone
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        if (!hdr.ctl.isValid()) { return; }
        hdr.ctl.itype = (bit<8>)sm.instance_type;
        hdr.ctl.rid = (bit<8>)sm.egress_rid;
        hdr.ctl.eport = (bit<8>)sm.egress_port;
        hdr.ctl.tag = meta.tag;
        if (sm.instance_type == 0 && (hdr.ctl.mode & 7) == 5) {
            clone(CloneType.E2E, 7);
            hdr.eth.src = 0x222222222222;                     // after the call: in the clone
        }
        if (sm.instance_type == 5 && sm.egress_port == sm.ingress_port) {
            mark_to_drop(sm);
        }
        if (sm.egress_rid[0:0] == 1 || sm.instance_type == 1) {
            hdr.opt.setInvalid();
        } else if (sm.instance_type == 5) {
            hdr.opt.setValid();
            hdr.opt.v = (bit<32>)sm.egress_rid;
        }
    }
}

control V(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.ctl); pkt.emit(hdr.opt); }
}

V1Switch(P(), V(), I(), E(), V(), D()) main;
