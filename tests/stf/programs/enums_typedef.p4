/* Types: typedef, type-checked constants, a plain enum in a switch statement, a serializable
 * enum in a header field and as a table key, struct assignment, bool, ?: and a value switch. */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"

typedef bit<8> code_t;
const code_t CODE_MAGIC = 0x5a;

enum bit<8> Kind_t {
    PING = 0x01,
    PONG = 0x02,
    DATA = 0x10
}

enum Verdict_t { Accept, Reflect, Discard }

header msg_t {
    Kind_t kind;
    code_t code;
    bit<8> out1;
    bit<8> out2;
}

struct headers_t {
    ethernet_t ethernet;
    msg_t      msg;
}

struct pair_t {
    bit<8> x;
    bit<8> y;
}

struct metadata_t {
    pair_t p;
    bool   magic;
}

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.msg);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action set_verdict_code(code_t c) {
        hdr.msg.out2 = c;
    }
    table by_kind {
        key = { hdr.msg.kind : exact; }
        actions = { set_verdict_code; NoAction; }
        default_action = NoAction();
    }
    apply {
        Verdict_t v = Verdict_t.Accept;
        if (hdr.msg.kind == Kind_t.PING) {
            v = Verdict_t.Reflect;
        } else if (hdr.msg.kind != Kind_t.PONG && hdr.msg.kind != Kind_t.DATA) {
            v = Verdict_t.Discard;
        }
        switch (v) {
            Verdict_t.Reflect: {
                sm.egress_spec = sm.ingress_port;
                hdr.msg.kind = Kind_t.PONG;
            }
            Verdict_t.Discard: {
                mark_to_drop(sm);
            }
            default: {
                sm.egress_spec = 2;
            }
        }
        meta.magic = hdr.msg.code == CODE_MAGIC;
        pair_t q = { 1, 2 };
        meta.p = q;
        meta.p.y = meta.magic ? meta.p.y + 0x40 : meta.p.y;
        hdr.msg.out1 = ((meta.p.x ++ meta.p.y[3:0]) == 0x12) ? meta.p.y : 8w0xee;
        switch (hdr.msg.code) {
            0x00: { hdr.msg.out1 = hdr.msg.out1 | 0x80; }
            CODE_MAGIC: { }
            default: { hdr.msg.out1 = 0; }
        }
        by_kind.apply();
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.msg);
    }
}

V1Switch(P(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), D()) main;
