/* Header stack operations: push_front (the last element falls off a full stack), pop_front,
 * element assignment, setValid/setInvalid, and parser-only .last / .lastIndex captured into
 * metadata; the stack length byte is recomputed from the valid elements. */
#include <core.p4>
#include <v1model.p4>

header count_t {
    bit<8> n;        // number of items that follow
    bit<8> op;       // 1: push 0xAA, 2: pop 2, 3: swap items 0 and 1, 4: invalidate item 1
    bit<8> last_v;   // written by the switch: value of .last seen by the parser
    bit<8> last_idx; // written by the switch: .lastIndex seen by the parser
}

header item_t {
    bit<8> v;
}

struct headers_t {
    count_t   count;
    item_t[3] items;
}

struct metadata_t {
    bit<8>  remaining;
    bit<8>  last_v;
    bit<32> last_idx;
}

parser StackParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.count);
        meta.remaining = hdr.count.n;
        transition select(meta.remaining) {
            0: accept;
            default: parse_item;
        }
    }
    state parse_item {
        pkt.extract(hdr.items.next);
        meta.remaining = meta.remaining - 1;
        meta.last_v = hdr.items.last.v;
        meta.last_idx = hdr.items.lastIndex;
        transition select(meta.remaining) {
            0: accept;
            default: parse_item;
        }
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.count.last_v = meta.last_v;
        hdr.count.last_idx = (bit<8>)meta.last_idx;
        if (hdr.count.op == 1) {
            hdr.items.push_front(1);
            hdr.items[0].setValid();
            hdr.items[0].v = 0xAA;
        } else if (hdr.count.op == 2) {
            hdr.items.pop_front(2);
        } else if (hdr.count.op == 3) {
            item_t tmp = hdr.items[0];
            hdr.items[0] = hdr.items[1];
            hdr.items[1] = tmp;
        } else if (hdr.count.op == 4) {
            hdr.items[1].setInvalid();
        }
        bit<8> n = 0;
        if (hdr.items[0].isValid()) { n = n + 1; }
        if (hdr.items[1].isValid()) { n = n + 1; }
        if (hdr.items[2].isValid()) { n = n + 1; }
        hdr.count.n = n;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control StackDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.count);
        pkt.emit(hdr.items);
    }
}

V1Switch(StackParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), StackDeparser()) main;
