/* varbit<W> header fields and the two-argument extract (P4_16 spec 7.1.6, 13.8.2): the varbit
 * sits between fixed fields; its length comes from a header field at run time. The parser
 * errors of extract(hdr, bits) (ParserInvalidArgument: bits not a multiple of 8,
 * HeaderTooShort: bits > W, PacketTooShort) reach ingress in standard_metadata.parser_error;
 * emit writes the varbit's current length; == on headers and on varbit fields compares the
 * lengths too (varbit_length_eq.p4: where BMv2 does not); assigning a header copies its varbit;
 * minSizeInBytes()/maxSizeInBytes(). */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> mode;
    bit<8> len;
    bit<8> result;
    bit<8> sizes;
}

header opt_t {
    bit<8>     kind;
    varbit<32> data;
    bit<8>     trailer;
}

struct headers_t {
    ctl_t ctl;
    opt_t a;
    opt_t b;
}

struct metadata_t {
}

parser VarbitParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        transition select(hdr.ctl.mode) {
            0: in_bytes;
            1: in_bits;
            2: two;
            3: in_bytes;
            default: accept;
        }
    }
    state in_bytes {
        pkt.extract(hdr.a, (bit<32>)hdr.ctl.len * 8);
        transition accept;
    }
    state in_bits {
        pkt.extract(hdr.a, (bit<32>)hdr.ctl.len);
        transition accept;
    }
    state two {
        pkt.extract(hdr.a, (bit<32>)hdr.ctl.len * 8);
        pkt.extract(hdr.b, (bit<32>)hdr.ctl.len * 8);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.ctl.sizes = (bit<8>)(hdr.a.minSizeInBytes() * 16 + hdr.a.maxSizeInBytes());
        if (hdr.ctl.mode == 3) {
            hdr.b = hdr.a;
        }
        bit<8> r = 0;
        if (hdr.a == hdr.b) {
            r = r | 1;
        }
        if (hdr.a.isValid() && hdr.b.isValid() && hdr.a.data == hdr.b.data) {
            r = r | 2;
        }
        if (sm.parser_error == error.PacketTooShort) {
            r = r | 0x10;
        } else if (sm.parser_error == error.HeaderTooShort) {
            r = r | 0x40;
        } else if (sm.parser_error == error.ParserInvalidArgument) {
            r = r | 0x60;
        }
        hdr.ctl.result = r;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control VarbitDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(VarbitParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), VarbitDeparser()) main;
