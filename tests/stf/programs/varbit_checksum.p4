/* varbit fields in checksum and hash inputs (P4_16 spec 7.1.6; v1model verify_checksum,
 * update_checksum, hash): the field contributes its current length of bits, in list order,
 * as IPv4 options do in the IPv4 header checksum. */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8>  optlen;
    bit<8>  bad;
    bit<16> h;
}

header ip_t {
    bit<8>     tag;
    bit<8>     pad;
    bit<16>    csum;
    varbit<64> opts;
}

struct headers_t {
    ctl_t ctl;
    ip_t  ip;
}

struct metadata_t {
}

parser CsumParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.ip, (bit<32>)hdr.ctl.optlen * 8);
        transition accept;
    }
}

control CsumVerify(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ip.isValid(), { hdr.ip.tag, hdr.ip.pad, hdr.ip.opts }, hdr.ip.csum,
                        HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.ctl.bad = (bit<8>)sm.checksum_error;
        // the varbit between fixed fields (leading zeros would not change a CRC-16/ARC)
        hash(hdr.ctl.h, HashAlgorithm.crc16, 16w0, { hdr.ip.tag, hdr.ip.opts, hdr.ip.tag },
             32w65536);
        hdr.ip.tag = hdr.ip.tag + 1;
    }
}

control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}

control CsumCompute(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ip.isValid(), { hdr.ip.tag, hdr.ip.pad, hdr.ip.opts }, hdr.ip.csum,
                        HashAlgorithm.csum16);
    }
}

control CsumDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.ip);
    }
}

V1Switch(CsumParser(), CsumVerify(), MyIngress(), NoEgress(), CsumCompute(), CsumDeparser()) main;
