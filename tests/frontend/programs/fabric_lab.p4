/*
 * A load-balancing leaf switch for front-end tests: IPv4 LPM, ECMP by hash and by
 * action_selector, flowlet registers, counters and meters, source routing with a header stack,
 * clone to a monitor session, digests for MAC learning, and packet-in/out headers.
 */
#include <core.p4>
#include <v1model.p4>
#include "include/lab_headers.p4"

#define CPU_PORT 255
#ifndef FLOWLET_SLOTS
#define FLOWLET_SLOTS 1024
#endif

const bit<32> MIRROR_SESSION = 32w7;

struct learn_t {
    macAddr_t srcAddr;
    bit<9>    ingress_port;
}

parser LabParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    value_set<bit<16>>(4) tunnel_types;

    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_SRCROUTE: parse_srcroute;
            TYPE_IPV4: parse_ipv4;
            tunnel_types: accept;
            default: accept;
        }
    }
    state parse_srcroute {
        packet.extract(hdr.srcroutes.next);
        transition select(hdr.srcroutes.last.bos) {
            1: parse_ipv4;
            default: parse_srcroute;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.ihl >= 5, error.HeaderTooShort);
        transition select(hdr.ipv4.protocol, hdr.ipv4.fragOffset) {
            (IP_PROTO_TCP, 0): parse_tcp;
            (IP_PROTO_UDP, 0): parse_udp;
            (_, _): accept;
        }
    }
    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }
    state parse_udp {
        bit<16> first = packet.lookahead<bit<16>>();
        meta.l4_src = first;
        packet.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            4790 .. 4799: accept;
            0x1200 &&& 0xff00: accept;
            default: accept;
        }
    }
}

control LabVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control LabIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    register<bit<48>>(FLOWLET_SLOTS) flowlet_last_seen;
    @name("flowlet_id_reg") register<bit<16>>(FLOWLET_SLOTS) flowlet_ids;
    counter(64, CounterType.packets_and_bytes) port_counter;
    direct_counter(CounterType.packets) lpm_hits;
    meter(32, MeterType.bytes) port_meter;
    bit<32> flowlet_slot;
    bit<48> last_seen;
    bit<2> colour = 0;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action set_nhop(macAddr_t dmac, egressSpec_t port) {
        hdr.ethernet.dstAddr = dmac;
        standard_metadata.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action set_ecmp(bit<16> base, bit<32> count) {
        hash(meta.ecmp_select, HashAlgorithm.crc16, base,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol, meta.l4_src, meta.l4_dst,
               meta.flowlet_id },
             count);
    }
    action to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = (bit<16>) standard_metadata.ingress_port;
    }
    action srcroute_nhop() {
        standard_metadata.egress_spec = (bit<9>) hdr.srcroutes[0].port;
        hdr.srcroutes.pop_front(1);
    }

    @id(0x02000001)
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { set_nhop; set_ecmp; drop; @defaultonly NoAction; }
        default_action = NoAction();
        counters = lpm_hits;
        size = 4096;
    }
    table ecmp_nhop {
        key = { meta.ecmp_select: exact @name("ecmp_select"); }
        actions = { set_nhop; drop; }
        const default_action = drop();
        size = 256;
    }
    table ecmp_selector {
        key = {
            hdr.ipv4.dstAddr: lpm;
            hdr.ipv4.srcAddr: selector;
            hdr.ipv4.protocol: selector;
        }
        actions = { set_nhop; }
        implementation = action_selector(HashAlgorithm.crc16, 32w64, 32w14);
        size = 128;
    }
    table acl {
        key = {
            hdr.ipv4.protocol: ternary;
            meta.l4_dst: range;
            hdr.tcp.isValid(): exact;
            standard_metadata.ingress_port: optional;
        }
        actions = { drop; to_cpu; NoAction; }
        const entries = {
            (IP_PROTO_TCP, 22 .. 23, true, _): drop();
            (0x11 &&& 0xff, _, false, 9w1): to_cpu();
            (_, _, false, _): NoAction();
        }
    }
    table mac_learn {
        key = { hdr.ethernet.srcAddr: exact; }
        actions = { NoAction; }
        const default_action = NoAction;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port[8:0];
            hdr.packet_out.setInvalid();
            exit;
        }
        port_counter.count((bit<32>) standard_metadata.ingress_port);
        port_meter.execute_meter((bit<32>) standard_metadata.ingress_port, colour);
        if (colour == 2) {
            drop();
            return;
        }
        if (!mac_learn.apply().hit) {
            digest<learn_t>(1, { hdr.ethernet.srcAddr, standard_metadata.ingress_port });
        }
        if (hdr.srcroutes[0].isValid()) {
            srcroute_nhop();
        } else if (hdr.ipv4.isValid()) {
            hash(flowlet_slot, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, meta.l4_src, meta.l4_dst },
                 (bit<32>) FLOWLET_SLOTS);
            flowlet_last_seen.read(last_seen, flowlet_slot);
            flowlet_ids.read(meta.flowlet_id, flowlet_slot);
            if (standard_metadata.ingress_global_timestamp - last_seen > 48w50000) {
                meta.flowlet_id = meta.flowlet_id |+| 1;
                flowlet_ids.write(flowlet_slot, meta.flowlet_id);
            }
            flowlet_last_seen.write(flowlet_slot, standard_metadata.ingress_global_timestamp);
            switch (ipv4_lpm.apply().action_run) {
                set_ecmp: {
                    ecmp_nhop.apply();
                }
                default: { }
            }
            acl.apply();
            if (hdr.ipv4.ttl == 0) {
                clone_preserving_field_list(CloneType.I2E, MIRROR_SESSION, 1);
            }
        }
        log_msg("ingress port {}", { standard_metadata.ingress_port });
    }
}

control LabEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type == 1) {
            truncate(64);
        }
        if (standard_metadata.egress_port == CPU_PORT && !hdr.packet_in.isValid()) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = 7w0 ++ standard_metadata.ingress_port;
        }
    }
}

control LabComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control LabDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.srcroutes);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
    }
}

V1Switch(LabParser(), LabVerifyChecksum(), LabIngress(), LabEgress(), LabComputeChecksum(),
         LabDeparser()) main;
