/* ECMP: crc16 (CRC-16/ARC) over the 5-tuple selects a group member: member = base + H mod n.
 * The raw hashes are written into the MACs so the STF can check them exactly:
 *   dstAddr[15:0]  = crc16 of the 5-tuple (13 bytes, byte aligned)
 *   srcAddr[47:16] = crc32 of the same 5-tuple
 *   srcAddr[15:0]  = crc16 of {flags (3 bits), ttl (8 bits)}: 11 bits, zero-padded to 2 bytes */
#include <core.p4>
#include <v1model.p4>

struct metadata_t {
    bit<16> member;
    bit<16> h16;
    bit<32> h32;
    bit<16> h_pad;
}

#include "include/l4_pipeline.p4"

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }
    action set_ecmp(bit<16> base, bit<32> count) {
        hash(meta.member, HashAlgorithm.crc16, base,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               hdr.l4.srcPort, hdr.l4.dstPort }, count);
    }
    table ecmp_group {
        key = { hdr.ipv4.dstAddr : lpm; }
        actions = { set_ecmp; drop; }
        default_action = drop();
    }
    action set_port(port_t port) {
        sm.egress_spec = port;
    }
    table ecmp_member {
        key = { meta.member : exact; }
        actions = { set_port; drop; }
        default_action = drop();
    }
    apply {
        if (!hdr.l4.isValid()) {
            drop();
            exit;
        }
        hash(meta.h16, HashAlgorithm.crc16, 16w0,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               hdr.l4.srcPort, hdr.l4.dstPort }, 32w65536);
        hash(meta.h32, HashAlgorithm.crc32, 32w0,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               hdr.l4.srcPort, hdr.l4.dstPort }, 64w4294967296);
        hash(meta.h_pad, HashAlgorithm.crc16, 16w0, { hdr.ipv4.flags, hdr.ipv4.ttl }, 32w65536);
        hdr.ethernet.dstAddr[15:0] = meta.h16;
        hdr.ethernet.srcAddr = meta.h32 ++ meta.h_pad;
        ecmp_group.apply();
        ecmp_member.apply();
    }
}

V1Switch(L4Parser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), L4Deparser()) main;
