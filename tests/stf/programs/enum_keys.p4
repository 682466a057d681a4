/* Serializable-enum keys (P4_16 spec 8.16.3): in table entries and select cases a mask given
 * as an integer converts to the enum's underlying type (Op_t.A &&& 0x0f); enum keys of
 * exact, ternary and range tables; a bool key (isValid()). */
#include <core.p4>
#include <v1model.p4>

enum bit<8> Op_t { A = 0x01, B = 0x02, C = 0x12 }

header h_t {
    Op_t   op;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
}

header opt_t {
    bit<8> v;
}

struct headers_t {
    h_t   h;
    opt_t opt;
}

struct metadata_t {
}

parser EnumParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.op) {
            Op_t.B &&& 0x0f: parse_opt;   // 0x02 and 0x12
            default: accept;
        }
    }
    state parse_opt {
        pkt.extract(hdr.opt);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action r1(bit<8> v) { hdr.h.r1 = v; }
    action r2(bit<8> v) { hdr.h.r2 = v; }
    action r3(bit<8> v) { hdr.h.r3 = v; }
    action r4(bit<8> v) { hdr.h.r4 = v; }
    table by_mask {
        key = { hdr.h.op : ternary; }
        actions = { r1; }
        const entries = { Op_t.A &&& 0x0f : r1(1); Op_t.B &&& 0xff : r1(2); }
        default_action = r1(0);
    }
    table by_exact {
        key = { hdr.h.op : exact; }
        actions = { r2; }
        const entries = { Op_t.C : r2(3); }
        default_action = r2(0);
    }
    table by_range {
        key = { hdr.h.op : range; }
        actions = { r3; }
        const entries = { Op_t.B .. Op_t.C : r3(4); }
        default_action = r3(0);
    }
    table by_valid {
        key = { hdr.opt.isValid() : exact; }
        actions = { r4; }
        const entries = { true : r4(5); false : r4(6); }
        default_action = r4(0);
    }
    apply {
        sm.egress_spec = 1;
        by_mask.apply();
        by_exact.apply();
        by_range.apply();
        by_valid.apply();
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control EnumDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.opt);
    }
}

V1Switch(EnumParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), EnumDeparser()) main;
