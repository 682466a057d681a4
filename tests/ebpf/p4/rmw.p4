/* Register read-modify-write on the eBPF target: a counter cell (one register), a pair of
 * cells updated together (the flowlet pattern: two registers, one index, a write under a
 * condition), and an update with a table lookup between read and write (not locked). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
struct headers_t { ethernet_t eth; }
struct metadata_t { bit<64> n; bit<64> a; bit<64> b; bit<64> t; }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    register<bit<64>>(4) count;
    register<bit<64>>(4) pair_a;
    register<bit<64>>(4) pair_b;
    register<bit<64>>(4) looked_up;
    action nop() { }
    table t { key = { hdr.eth.dst : exact; } actions = { nop; } default_action = nop(); }
    apply {
        count.read(meta.n, 0);
        meta.n = meta.n + 1;
        count.write(0, meta.n);

        bit<32> i = (bit<32>)hdr.eth.etype[1:0];
        pair_a.read(meta.a, i);
        pair_b.read(meta.b, i);
        if (meta.a[0:0] == 1) {
            pair_b.write(i, meta.b + 1);
        }
        pair_a.write(i, meta.a + 1);

        looked_up.read(meta.t, 0);
        t.apply();
        looked_up.write(0, meta.t + 1);
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control V(inout headers_t hdr, inout metadata_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(P(), V(), I(), E(), V(), D()) main;
