/* Constructor parameters of a V1Switch parser (a value given in the package instantiation),
 * and a control *instance* passed as a constructor argument: the outer control applies that
 * very instance, whose table belongs to the block declaring it (MyIngress.counted.hits). */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
    bit<8> mark;
}

parser CaParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm)(bit<8> mark) {
    state start {
        pkt.extract(hdr.h);
        meta.mark = mark;
        transition accept;
    }
}

control Step(inout headers_t hdr) {
    action add(bit<8> v) {
        hdr.h.b = hdr.h.b + v;
    }
    table hits {
        key = { hdr.h.op: exact; }
        actions = { add; NoAction; }
        default_action = add(1);
    }
    apply {
        hits.apply();
    }
}

control Step_t(inout headers_t hdr);

control Outer(inout headers_t hdr)(Step_t s) {
    apply {
        hdr.h.b = hdr.h.b + 1;
        s.apply(hdr);
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    Step() counted;
    Outer(counted) outer;
    apply {
        sm.egress_spec = 1;
        outer.apply(hdr);
        hdr.h.a = meta.mark;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control CaDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(CaParser(8w0x5a), NoVerify(), MyIngress(), NoEgress(), NoCompute(), CaDeparser()) main;
