/* Direct type invocation (P4_16 spec 15.1): Ctl.apply(...) of a control type without
 * constructor parameters (twice: two anonymous instances), one with a table (named
 * MyIngress.Counted.t, as p4c names it), and Prs.apply(...) of a parser type in a parser
 * state. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
}

parser Inner(packet_in pkt, inout h_t hh) {
    state start {
        pkt.extract(hh);
        transition accept;
    }
}

parser DirectParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t sm) {
    state start {
        Inner.apply(pkt, hdr.h);
        transition accept;
    }
}

control Double(inout bit<8> v) {
    apply {
        v = v + v;
    }
}

control Counted(inout bit<8> v) {
    action set(bit<8> x) {
        v = x;
    }
    table t {
        key = { v : exact; }
        actions = { set; NoAction; }
        const entries = { 1 : set(0x11); 2 : set(0x22); }
        default_action = NoAction();
    }
    apply {
        t.apply();
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        Double.apply(hdr.h.a);
        Double.apply(hdr.h.a);
        Counted.apply(hdr.h.b);
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control DirectDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(DirectParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), DirectDeparser()) main;
