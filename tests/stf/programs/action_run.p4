/* Control flow: switch on action_run (with a fall-through case and default), t.apply().hit and
 * .miss, return from an action and from the apply body, exit that skips the rest of ingress
 * but not egress. */
#include <core.p4>
#include <v1model.p4>

struct metadata_t { }

#include "include/trace.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action a1() { hdr.trace.b = 0x01; }
    action a2() { hdr.trace.b = 0x02; }
    action a3() { hdr.trace.b = 0x03; }
    action early(bit<8> v) {
        hdr.trace.b = v;
        return;
        hdr.trace.b = 0xee;   // never runs
    }
    table t1 {
        key = { hdr.trace.a : exact; }
        actions = { a1; a2; a3; early; NoAction; }
        default_action = NoAction();
    }
    table t2 {
        key = { hdr.trace.a : exact; }
        actions = { a1; NoAction; }
        default_action = NoAction();
    }
    table t3 {
        key = { hdr.trace.a : exact; }
        actions = { a1; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        switch (t1.apply().action_run) {
            a1: { hdr.trace.c = 0x10; }
            a2:
            a3: { hdr.trace.c = 0x23; }
            early: { hdr.trace.c = 0x40; }
            default: { hdr.trace.c = 0xdd; }
        }
        if (t2.apply().hit) {
            hdr.trace.d = 0x11;
        }
        if (t3.apply().miss) {
            hdr.trace.d = hdr.trace.d | 0x20;
        }
        if (hdr.trace.a == 0x07) {
            exit;
        }
        if (hdr.trace.a == 0x08) {
            return;
        }
        hdr.ethernet.srcAddr = 0x0000000000aa;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.ethernet.dstAddr = 0x0000000000e0;   // egress runs even after ingress exit
    }
}

V1Switch(TraceParser(), NoVerify(), MyIngress(), MyEgress(), NoCompute(), TraceDeparser()) main;
