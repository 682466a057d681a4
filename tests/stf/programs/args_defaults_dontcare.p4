/* Call arguments: action parameters with default values (P4_16 spec 6.8.2), positional and
 * named, in direct calls; the don't-care argument '_' for out
 * parameters of actions, functions and sub-controls (spec 8.22); method calls as statements
 * whose value is unused (h.isValid(); and pkt.lookahead<T>(); which still fails on a short
 * packet). */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> err;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
}

parser ArgParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        hdr.h.isValid();
        pkt.lookahead<bit<16>>();   // needs two more bytes after h
        transition accept;
    }
}

void pair(out bit<8> x, out bit<8> y) {
    x = 0x41;
    y = 0x42;
}

control Sub(out bit<8> o1, out bit<8> o2) {
    apply {
        o1 = 0x51;
        o2 = 0x52;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    action set(in bit<8> x = 7, in bit<8> y = 8) {
        hdr.h.a = x;
        hdr.h.b = y;
    }
    action outs(out bit<8> x, out bit<8> y) {
        x = 0x31;
        y = 0x32;
    }
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.PacketTooShort) {
            hdr.h.err = 1;
        }
        if (hdr.h.op == 1) {
            set();
        } else if (hdr.h.op == 2) {
            set(1);
        } else if (hdr.h.op == 3) {
            set(y = 2);
        } else if (hdr.h.op == 4) {
            outs(_, hdr.h.b);
            pair(hdr.h.a, _);
            sub.apply(_, hdr.h.c);
        }
        hdr.h.isValid();
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control ArgDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ArgParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), ArgDeparser()) main;
