/* Header and struct action arguments are copied, not aliased (P4_16 spec 6.8, copy-in/copy-out):
 * an 'in' argument keeps the value it had at the call while the action writes the original;
 * an 'inout' argument's copy-out overwrites the action's direct writes to the original; an
 * 'out' header starts invalid. op selects the case. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> c;
}

header g_t {
    bit<8> x;
}

struct headers_t {
    h_t h;
    g_t g;
}

struct metadata_t {
    bit<8> m;
}

parser CopyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.g);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action read_in(in h_t x) {
        hdr.h.a = 9;
        hdr.h.b = x.a;       // the value at the call, not 9
    }
    action write_inout(inout h_t x) {
        x.c = 7;
        hdr.h.c = 5;         // overwritten by the copy-out of x (c = 7)
        hdr.h.b = x.b + 1;   // also overwritten: x.b was copied in
    }
    action make_out(out g_t y) {
        y.x = 0x42;          // y starts invalid and stays so: g is not emitted
    }
    action make_out_valid(out g_t y) {
        y.setValid();
        y.x = 0x43;
    }
    action struct_inout(inout metadata_t mm) {
        mm.m = 1;
        meta.m = 2;          // overwritten by the copy-out of mm
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            read_in(hdr.h);
        } else if (hdr.h.op == 2) {
            write_inout(hdr.h);
        } else if (hdr.h.op == 3) {
            make_out(hdr.g);
        } else if (hdr.h.op == 4) {
            make_out_valid(hdr.g);
        } else if (hdr.h.op == 5) {
            struct_inout(meta);
            hdr.h.a = meta.m;
        }
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control CopyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.g);
    }
}

V1Switch(CopyParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), CopyDeparser()) main;
