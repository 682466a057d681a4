/* Control- and parser-typed constructor parameters (P4_16 spec 15.1 / 11.3): a control type
 * declaration (HdrStage) is the parameter's type, any control with that apply signature an
 * argument (Twice(Leaf(), ...)), with its own constructor arguments, nested (a Twice passed to
 * a Twice). Objects inside are named <control>.<instance>.<parameter>.<object>, as p4c names
 * them (MyIngress.tw.first.leaf_t). The same for a parser-typed parameter of a sub-parser, and
 * for a V1Switch control with constructor arguments (EgressWith_0.stage.leaf_t). */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
}

header g_t {
    bit<8> v;
}

struct headers_t {
    h_t h;
    g_t g;
}

struct metadata_t {
}

control HdrStage(inout h_t h);
parser GetStage(packet_in pkt, out g_t g);

parser GetG(packet_in pkt, out g_t g) {
    state start {
        pkt.extract(g);
        transition accept;
    }
}

parser Optional(packet_in pkt, out g_t g)(GetStage get, bit<8> marker) {
    state start {
        transition select(pkt.lookahead<bit<8>>()) {
            marker: parse_it;
            default: accept;
        }
    }
    state parse_it {
        get.apply(pkt, g);
        transition accept;
    }
}

parser CtorParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    Optional(GetG(), 8w0x99) opt;
    state start {
        pkt.extract(hdr.h);
        opt.apply(pkt, hdr.g);
        transition accept;
    }
}

control Leaf(inout h_t h) {
    action set_b(bit<8> v) { h.b = v; }
    table leaf_t {
        key = { h.a : exact; }
        actions = { set_b; }
        default_action = set_b(1);
    }
    apply { leaf_t.apply(); }
}

control Bump(inout h_t h)(bit<8> by) {
    apply { h.c = h.c + by; }
}

control Twice(inout h_t h)(HdrStage first, HdrStage second, bit<8> k) {
    apply {
        first.apply(h);
        if (h.b == k) {
            second.apply(h);
        }
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    Twice(Leaf(), Twice(Bump(8w1), Bump(8w0x10), 8w7), 8w7) tw;
    apply {
        sm.egress_spec = 1;
        tw.apply(hdr.h);
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
// a V1Switch block with constructor parameters: p4c names its specialisation EgressWith_0
control EgressWith(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm)
                  (HdrStage stage, bit<8> k) {
    apply {
        if (hdr.h.a == k) {
            stage.apply(hdr.h);
        }
    }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control CtorDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.g);
    }
}

V1Switch(CtorParser(), NoVerify(), MyIngress(), EgressWith(Leaf(), 8w3), NoCompute(),
         CtorDeparser()) main;
