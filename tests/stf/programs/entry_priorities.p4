/* Entry priorities (P4_16 spec 14.2.1.4): non-const entries with 'priority = N :' and the
 * implicit priorities after them (previous minus priority_delta), largest_priority_wins =
 * false (the smallest number wins), entries without priorities (the first wins), and
 * p4c/BMv2's @priority(N) on const entries (BMv2: the smaller N wins). Every table has
 * overlapping ternary entries, so the winner shows in the packet. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
}

parser PrioParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action r1(bit<8> v) { hdr.h.r1 = v; }
    action r2(bit<8> v) { hdr.h.r2 = v; }
    action r3(bit<8> v) { hdr.h.r3 = v; }
    action r4(bit<8> v) { hdr.h.r4 = v; }
    // explicit and implied priorities, larger wins: 0x0f &&& 0x0f has 10, _ has 10 - 5 = 5,
    // 0x01 &&& 0x01 has 20
    table explicit_prio {
        key = { hdr.h.k : ternary; }
        actions = { r1; }
        default_action = r1(0);
        priority_delta = 5;
        entries = {
            priority = 10 : 0x0f &&& 0x0f : r1(1);
            _ : r1(2);
            priority = 20 : 0x01 &&& 0x01 : r1(3);
        }
    }
    // smallest wins: 0x01 &&& 0x01 (priority 1) beats 0x0f &&& 0x0f (priority 7)
    table smallest_wins {
        key = { hdr.h.k : ternary; }
        actions = { r2; }
        default_action = r2(0);
        largest_priority_wins = false;
        entries = {
            priority = 7 : 0x0f &&& 0x0f : r2(1);
            priority = 1 : 0x01 &&& 0x01 : r2(2);
            priority = 9 : _ : r2(3);
        }
    }
    // no priorities given: the first matching entry wins
    table in_order {
        key = { hdr.h.k : ternary; }
        actions = { r3; }
        default_action = r3(0);
        entries = {
            0x03 &&& 0x03 : r3(1);
            0x01 &&& 0x01 : r3(2);
            _ : r3(3);
        }
    }
    // @priority on const entries: smaller wins, as BMv2 runs them
    table annotated {
        key = { hdr.h.k : ternary; }
        actions = { r4; }
        default_action = r4(0);
        const entries = {
            0x01 &&& 0x01 : r4(1) @priority(30);
            0x03 &&& 0x03 : r4(2) @priority(10);
            _ : r4(3) @priority(40);
        }
    }
    apply {
        sm.egress_spec = 1;
        explicit_prio.apply();
        smallest_wins.apply();
        in_order.apply();
        annotated.apply();
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control PrioDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(PrioParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), PrioDeparser()) main;
