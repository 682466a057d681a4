/* Preprocessor operators as cpp (which p4c runs) expands them: `##` builds action and table
 * names from a field name, `#` turns a macro argument into the string of an @name annotation,
 * and variadic macros pass their `...` arguments on as __VA_ARGS__ (to a function call and to
 * log_msg's list). */
#include <core.p4>
#include <v1model.p4>

#define SETTER(f) action set_##f(bit<8> v) { hdr.h.f = v; }
#define BY(f, k) table t_##f {                  \
        key = { hdr.h.k : exact; }             \
        actions = { set_##f; }                 \
        default_action = set_##f(0);           \
    }
#define NAMED(n) @name(#n)
#define FIRST(x, ...) x
#define REST(x, ...) __VA_ARGS__
#define LOG(fmt, ...) log_msg(fmt, {__VA_ARGS__})

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
}

struct headers_t {
    h_t h;
}

struct metadata_t {
}

bit<8> max(in bit<8> x, in bit<8> y) {
    return x > y ? x : y;
}

parser MacroParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    SETTER(c)
    NAMED(renamed_d) SETTER(d)
    BY(c, a)
    NAMED(.by_b) BY(d, b)
    apply {
        sm.egress_spec = 1;
        t_c.apply();
        t_d.apply();
        if (hdr.h.c == 0) {
            hdr.h.c = max(REST(0, hdr.h.a, hdr.h.b)) + FIRST(1, 2, 3);
        }
        LOG("a={} b={}", hdr.h.a, hdr.h.b);
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control MacroDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(MacroParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), MacroDeparser()) main;
