/* exit still copies out (P4_16 spec, exit statement): the out/inout arguments of the action
 * or sub-control that executes exit are written back before the control ends, also through
 * nested calls (a sub-control's action exiting) and table actions with bound arguments.
 * op selects the case; the statements after each call must not run. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> c;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
}

parser ExitParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control Sub(in bit<8> op, inout bit<8> v, out bit<8> w) {
    apply {
        v = 3;
        w = 4;
        if (op == 2) {
            exit;
        }
        v = 9;
    }
}

control SubAction(inout bit<8> v) {
    action leave() {
        v = 6;
        exit;
    }
    apply {
        v = 5;
        leave();
        v = 7;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    SubAction() sub_action;

    action set_and_exit(inout bit<8> v) {
        v = 2;
        exit;
    }
    action header_and_exit(inout h_t x) {
        x.a = 0x55;
        exit;
    }
    table bound {
        key = { hdr.h.a : exact; }
        actions = { set_and_exit(hdr.h.c); NoAction; }
        const default_action = set_and_exit(hdr.h.c);
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            set_and_exit(hdr.h.a);
            hdr.h.a = 0xff;
        } else if (hdr.h.op == 2 || hdr.h.op == 3) {
            sub.apply(hdr.h.op, hdr.h.b, hdr.h.c);
            hdr.h.b = 0xff;
        } else if (hdr.h.op == 4) {
            bound.apply();
            hdr.h.c = 0xff;
        } else if (hdr.h.op == 5) {
            sub_action.apply(hdr.h.b);
            hdr.h.b = 0xff;
        } else if (hdr.h.op == 6) {
            header_and_exit(hdr.h);
            hdr.h.a = 0xff;
        }
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control ExitDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ExitParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), ExitDeparser()) main;
