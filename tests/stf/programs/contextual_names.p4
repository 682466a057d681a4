/* Contextual keywords as names (P4_16 spec 6.4.1): key, actions, entries, state, apply, type
 * and priority name header fields, struct fields, variables and parameters; they stay
 * keywords where the grammar needs them (table properties, parser states, apply blocks). */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> key;
    bit<8> actions;
    bit<8> state;
    bit<8> entries;
    bit<8> apply;
    bit<8> type;
    bit<8> priority;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
    bit<8> state;
}

parser NameParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        meta.state = hdr.h.state;
        transition select(hdr.h.key) {
            1: state_one;
            default: accept;
        }
    }
    state state_one {
        meta.state = 0x11;
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    bit<8> priority = 3;
    action set_type(bit<8> type) {
        hdr.h.type = type;
    }
    action add(in bit<8> apply, inout bit<8> key) {
        key = key + apply;
    }
    table entries_table {
        key = { hdr.h.key : exact; }
        actions = { set_type; NoAction; }
        const entries = { 2 : set_type(0x22); }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        bit<8> actions = hdr.h.actions + 1;
        bit<8> entries = actions + 1;
        hdr.h.actions = actions;
        hdr.h.entries = entries;
        hdr.h.state = meta.state;
        add(priority, hdr.h.priority);
        entries_table.apply();
        hdr.h.apply = hdr.h.apply + hdr.h.key;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control NameDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(NameParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), NameDeparser()) main;
