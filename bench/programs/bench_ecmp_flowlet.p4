/* Benchmark program 2: ECMP over the 5-tuple (CRC-16) with a flowlet register pair
 * (last-seen timestamp, flowlet id: a gap above 50 ms starts a new flowlet whose id joins the
 * hash) and a per-egress-port packet counter; IPv4 checksum verify and update. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header tcp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<32> seqNo;
    bit<32> ackNo;
    bit<4>  dataOffset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgentPtr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

struct metadata_t {
    bit<16> ecmp_select;
    bit<16> l4_src;
    bit<16> l4_dst;
    bit<16> flow_slot;
    bit<48> last_seen;
    bit<16> flowlet_id;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    tcp_t      tcp;
    udp_t      udp;
}

parser MyParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            6: parse_tcp;
            17: parse_udp;
            default: accept;
        }
    }
    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<48>>(4096) last_seen;
    register<bit<16>>(4096) flowlet_ids;
    counter(512, CounterType.packets_and_bytes) port_pkts;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action set_ecmp_select(bit<16> ecmp_base, bit<32> ecmp_count) {
        hash(meta.ecmp_select, HashAlgorithm.crc16, ecmp_base,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol, meta.l4_src, meta.l4_dst,
               meta.flowlet_id }, ecmp_count);
    }
    action set_nhop(bit<48> nhop_dmac, bit<9> port) {
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = nhop_dmac;
        standard_metadata.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ecmp_group {
        key = { hdr.ipv4.dstAddr : lpm; }
        actions = { drop; set_ecmp_select; }
        default_action = drop();
    }
    table ecmp_nhop {
        key = { meta.ecmp_select : exact; }
        actions = { drop; set_nhop; }
        default_action = drop();
    }
    apply {
        if (hdr.tcp.isValid()) {
            meta.l4_src = hdr.tcp.srcPort;
            meta.l4_dst = hdr.tcp.dstPort;
        }
        if (hdr.udp.isValid()) {
            meta.l4_src = hdr.udp.srcPort;
            meta.l4_dst = hdr.udp.dstPort;
        }
        if (hdr.ipv4.isValid()) {
            hash(meta.flow_slot, HashAlgorithm.crc16, 16w0,
                 { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol, meta.l4_src,
                   meta.l4_dst }, 32w4096);
            last_seen.read(meta.last_seen, (bit<32>)meta.flow_slot);
            flowlet_ids.read(meta.flowlet_id, (bit<32>)meta.flow_slot);
            if (standard_metadata.ingress_global_timestamp - meta.last_seen > 48w50000) {
                meta.flowlet_id = meta.flowlet_id + 1;
                flowlet_ids.write((bit<32>)meta.flow_slot, meta.flowlet_id);
            }
            last_seen.write((bit<32>)meta.flow_slot, standard_metadata.ingress_global_timestamp);
            ecmp_group.apply();
            ecmp_nhop.apply();
            port_pkts.count((bit<32>)standard_metadata.egress_spec);
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
