/* Width semantics: bit<8> wrap-around (+ - * and unary -), saturating |+| |-| for bit and int,
 * shifts (logical, arithmetic, by >= width), slices (read and write), concatenation, sign and
 * zero extension, truncation, signed vs unsigned comparison. */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"

header in_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> w;
}

header res_t {
    bit<8>  add;
    bit<8>  sub;
    bit<8>  mul;
    bit<8>  neg;
    bit<8>  inv;
    bit<8>  sat_add;
    bit<8>  sat_sub;
    bit<8>  s_sat_add;
    bit<8>  s_sat_sub;
    bit<8>  shl;
    bit<8>  shr;
    bit<8>  s_shr;
    bit<8>  shl_var;
    bit<4>  hi;
    bit<4>  lo;
    bit<16> cat;
    bit<16> sext;
    bit<16> zext;
    bit<8>  trunc;
    bit<8>  cmp;
    bit<8>  slice_set;
}

struct headers_t {
    ethernet_t ethernet;
    in_t       i;
    res_t      r;
}

struct metadata_t { }

parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.i);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> a = hdr.i.a;
        bit<8> b = hdr.i.b;
        int<8> sa = (int<8>)a;
        int<8> sb = (int<8>)b;
        hdr.r.setValid();
        hdr.r.add = a + b;
        hdr.r.sub = a - b;
        hdr.r.mul = a * b;
        hdr.r.neg = -a;
        hdr.r.inv = ~a;
        hdr.r.sat_add = a |+| b;
        hdr.r.sat_sub = a |-| b;
        hdr.r.s_sat_add = (bit<8>)(sa |+| sb);
        hdr.r.s_sat_sub = (bit<8>)(sa |-| sb);
        hdr.r.shl = a << 3;
        hdr.r.shr = a >> 3;
        hdr.r.s_shr = (bit<8>)(sa >> 3);
        hdr.r.shl_var = a << b;
        hdr.r.hi = a[7:4];
        hdr.r.lo = b[3:0];
        hdr.r.cat = a ++ b;
        hdr.r.sext = (bit<16>)(int<16>)sa;
        hdr.r.zext = (bit<16>)a;
        hdr.r.trunc = (bit<8>)hdr.i.w;
        bit<8> cmp = 0;
        if (a < b) { cmp = cmp | 1; }
        if (sa < sb) { cmp = cmp | 2; }
        if (a == b) { cmp = cmp | 4; }
        if (sa >= sb) { cmp = cmp | 8; }
        hdr.r.cmp = cmp;
        hdr.r.slice_set = 0xff;
        hdr.r.slice_set[3:0] = a[7:4];
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.i);
        pkt.emit(hdr.r);
    }
}

V1Switch(P(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), D()) main;
