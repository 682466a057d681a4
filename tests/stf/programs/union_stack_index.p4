/* A header_union stack element at a run-time index (P4_16 spec 8.20, 8.27): assigning a valid
 * header to us[i].a invalidates us[i].b only; an index out of range writes nothing; us[i].isValid()
 * is "some member valid". p4test accepts it; p4c-bm2-ss 1.2.5.16 crashes on the run-time index
 * (SIGSEGV), and BMv2 cannot load its JSON for us[i].isValid() ("Invalid reference to object of
 * type 'header' with name 'us[0]'"), so the STF is the oracle here. */
#include <core.p4>
#include <v1model.p4>

header sel_t {
    bit<8> idx;
    bit<8> valid;
}

header a_t {
    bit<8> tag;
    bit<8> x;
}

header b_t {
    bit<8>  tag;
    bit<16> y;
}

header_union ab_t {
    a_t a;
    b_t b;
}

struct headers_t {
    sel_t   sel;
    ab_t[2] us;
}

struct metadata_t {
}

parser IndexParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.sel);
        pkt.extract(hdr.us.next.b);
        pkt.extract(hdr.us.next.b);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        a_t t = { 0x0a, 0x55 };
        hdr.us[hdr.sel.idx].a = t;
        bit<8> v = 0;
        if (hdr.us[0].a.isValid()) {
            v = v | 1;
        }
        if (hdr.us[1].a.isValid()) {
            v = v | 2;
        }
        if (hdr.us[0].b.isValid()) {
            v = v | 4;
        }
        if (hdr.us[1].b.isValid()) {
            v = v | 8;
        }
        if (hdr.us[0].isValid() && hdr.us[1].isValid()) {
            v = v | 0x10;
        }
        hdr.sel.valid = v;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control IndexDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.sel);
        pkt.emit(hdr.us);
    }
}

V1Switch(IndexParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), IndexDeparser()) main;
