/* Annotation bodies as P4_16 spec 18.1 defines them, compared with p4c's P4Info field by field
 * by tests/runtime/test_p4info_p4c.py (and without p4c by test_p4info_annotations.py):
 * unstructured bodies of any tokens with balanced parentheses -- member paths, expressions,
 * keywords, unbalanced brackets, nested calls, characters P4 has no token for, an empty body,
 * a repeated name -- and structured annotations (18.1.2): expression lists and key-value lists
 * of ints, strings and bools, folded (global and control-local constants), empty, with a
 * trailing comma, on a table, a key, an action, an action reference, an action parameter and a
 * counter. */
#include <core.p4>
#include <v1model.p4>

const int SCALE = 10;

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

struct headers_t { ethernet_t eth; }
struct meta_t { bit<8> x; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    const int LOCAL = 5;
    @unit["packets", SCALE * 2] counter(4, CounterType.packets) hits;

    @path(hdr.eth.dst) @sum(1+2) @mixed(x, [y]) @call(f(a, (b)), {c})
    @kw(in out bit<8> table) @ops(a && b || !c ; d @ e) @empty() @bare
    @odd(a->b # $ << c<d>>e &&& 1..2 |+| 0x1F 8w3 "q" this [y) @twice(1) @twice("2")
    action fwd(@units[scale=1, unit="port"] bit<9> port) {
        sm.egress_spec = port;
        hits.count(0);
    }

    @list[1, "x", true] @kv[k=1, j="s", b=false] @none[] @trail[2, 3,]
    @neg[-2] @folded[1 + 2 * 3] @scaled[SCALE] @local[LOCAL - 1]
    table t {
        key = { hdr.eth.dst: exact @where(hdr . eth) @meta[src="parser"]; }
        actions = { @act[weight=2] fwd; NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); }
}

control EG(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control DP(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(P(), VC(), Ing(), EG(), CC(), DP()) main;
