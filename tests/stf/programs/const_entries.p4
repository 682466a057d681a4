/* Const entries: exact entries, ternary entries whose order decides overlaps (the first
 * listed wins), a wildcard `_` entry, a const default action. The STF only sends packets:
 * the control plane cannot add to tables with const entries. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t { }

#include "include/trace.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action set_port(port_t port) {
        sm.egress_spec = port;
    }
    action mark(bit<8> v) {
        hdr.trace.d = v;
    }
    table by_a {
        key = { hdr.trace.a : exact; }
        actions = { set_port; }
        const entries = {
            1 : set_port(1);
            2 : set_port(2);
            0x10 : set_port(3);
        }
        const default_action = set_port(4);
    }
    table by_b {
        key = { hdr.trace.b : ternary; }
        actions = { mark; }
        const entries = {
            0x0f &&& 0x0f : mark(0x01);   // listed first: wins over the next two
            0x01 &&& 0x01 : mark(0x02);
            _             : mark(0x03);
        }
        default_action = mark(0xff);
    }
    table by_c {
        key = { hdr.trace.c : ternary; }
        actions = { mark; }
        const entries = {
            0x00 &&& 0x00 : mark(0x30);
            0x80 &&& 0x80 : mark(0x31);
        }
        default_action = mark(0xfe);
    }
    apply {
        by_a.apply();
        by_b.apply();
        if (hdr.trace.c != 0) {
            by_c.apply();
        }
    }
}

control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), TraceDeparser()) main;
