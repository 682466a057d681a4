/* Table keys of any type with == (P4_16 spec 14.2.1.1), as p4c and BMv2 take them: an `error`
 * key (exact; STF and P4Runtime give the error's code: p4c-bm2-ss takes no error constants in
 * const entries), a
 * bool key, and a validity key, which p4c and p4switch name `hdr.g.$valid$`. A table that no
 * control applies is left out of P4Info with its direct counter and the action only it runs
 * (as p4c removes them); annotations with string arguments appear in P4Info as p4c writes
 * them. */
#include <core.p4>
#include <v1model.p4>

error { BadTag }

header h_t {
    bit<8> tag;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
}

header g_t {
    bit<8> v;
}

struct headers_t {
    h_t h;
    g_t g;
}

struct metadata_t {
    bool two;
}

parser KeyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.tag != 0xff, error.BadTag);
        transition select(hdr.h.tag) {
            1: parse_g;
            2: parse_g;
            default: accept;
        }
    }
    state parse_g {
        pkt.extract(hdr.g);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action set_r1(bit<8> v) { hdr.h.r1 = v; }
    action set_r2(bit<8> v) { hdr.h.r2 = v; }
    action set_r3(bit<8> v) { hdr.h.r3 = v; }
    action never_run(bit<8> v) { hdr.h.tag = v; }
    direct_counter(CounterType.packets) unused_ctr;

    @brief("by the parser's error") @note("two words") @pair(1, "x") @level(-2)
    table by_error {
        key = { sm.parser_error : exact @origin("parser"); }
        actions = { set_r1; }
        default_action = set_r1(0);
    }
    table by_error_cp {
        key = { sm.parser_error : exact; }
        actions = { set_r3; }
        default_action = set_r3(0);
    }
    table by_flags {
        key = {
            meta.two : exact;
            hdr.g.isValid() : exact;
        }
        actions = { set_r2; }
        default_action = set_r2(0);
    }
    table never_applied {
        key = { hdr.h.tag : exact; }
        actions = { never_run; }
        counters = unused_ctr;
    }
    apply {
        sm.egress_spec = 1;
        meta.two = hdr.h.tag == 2;
        by_error.apply();
        by_error_cp.apply();
        by_flags.apply();
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control KeyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.g);
    }
}

V1Switch(KeyParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), KeyDeparser()) main;
