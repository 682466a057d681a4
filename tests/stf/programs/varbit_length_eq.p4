/* == on varbit fields compares their dynamic widths too (P4_16 spec 8.9.x: "two varbits are
 * equal if they have the same dynamic width and all the bits up to the dynamic width are the
 * same"): 0xaa in 8 bits is not 0x00aa in 16 bits, nor are the headers holding them.
 * BMv2 simple_switch 1.15.5 compares the values only (tests/differential lists it). */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> len_a;
    bit<8> len_b;
    bit<8> result;
}

header opt_t {
    varbit<16> data;
}

struct headers_t {
    ctl_t ctl;
    opt_t a;
    opt_t b;
}

struct metadata_t {
}

parser EqParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.a, (bit<32>)hdr.ctl.len_a * 8);
        pkt.extract(hdr.b, (bit<32>)hdr.ctl.len_b * 8);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> r = 0;
        if (hdr.a.data == hdr.b.data) {
            r = r | 1;
        }
        if (hdr.a != hdr.b) {
            r = r | 2;
        }
        hdr.ctl.result = r;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control EqDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(EqParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), EqDeparser()) main;
