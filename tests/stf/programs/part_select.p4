/* The indexed part-select e[lo +: w] of P4_16 1.2.4 with a constant start: w bits from bit
 * lo up, read and written (as the slice e[lo+w-1:lo]), also of a signed value. A
 * serializable enum member sizes a counter (a constructor argument of the enum's type). */
#include <core.p4>
#include <v1model.p4>

enum bit<32> Size {
    small = 4,
    large = 16
}

header h_t {
    bit<16> word;
    bit<8> lo_nibbles;
    bit<8> mid;
    int<8> s;
    bit<8> s_bits;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
    bit<8> unused;
}

parser PsParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control PsIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    counter(Size.small, CounterType.packets) cells;
    apply {
        sm.egress_spec = 1;
        hdr.h.lo_nibbles = hdr.h.word[0 +: 4] ++ hdr.h.word[12 +: 4];
        hdr.h.mid = hdr.h.word[4 +: 8];
        hdr.h.word[8 +: 8] = 0xab;
        hdr.h.s_bits = (bit<8>)hdr.h.s[1 +: 4];
        cells.count(3);
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control PsDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(PsParser(), NoVerify(), PsIngress(), NoEgress(), NoCompute(), PsDeparser()) main;
