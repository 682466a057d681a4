/* -*- P4_16 -*- */
/*
 * p4fabric -- Tofino (TNA) port of p4src/fabric.p4.
 *
 * NOT compiled in this repository (no Tofino SDE here): written against the
 * TNA headers (tna.p4 / tofino1arch.p4) and kept in step with the v1model
 * program by hand.  p4src/README.md, section "Tofino port", lists every
 * difference from the v1model controller contract and why it exists.
 */
#include <core.p4>
#include <tna.p4>

/* ---- constants (same values as include/defines.p4 unless noted) --------- */
/* Tofino's CPU port depends on the chip/board (PCIe CPU port is 192 on a
 * 2-pipe and 320 on a 4-pipe Tofino 1); set it for your target. */
const PortId_t CPU_PORT = 192;
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_TCP   = 6;
const bit<8>  IP_PROTO_UDP   = 17;
const bit<2>  ECN_NOT_ECT    = 0;
const bit<2>  ECN_CE         = 3;

#define PORT_COUNT         512
#define LB_MAX_GROUPS      256
#define LB_MAX_MEMBERS     64
#define LB_MEMBER_CTR_SIZE 16384
#define FLOWLET_SLOTS      4096
#define ROT_SLOTS          16384
#define WAM_SLOT_SIZE      65536   /* exact (group, j) entries, see README */
#define IPV4_LPM_SIZE      4096
#define DROP_REASON_COUNT  16

const bit<8> SCHEME_NONE    = 0;
const bit<8> SCHEME_ECMP    = 1;
const bit<8> SCHEME_FLOWLET = 2;
const bit<8> SCHEME_RANDOM  = 3;
const bit<8> SCHEME_ROTATE  = 4;
const bit<8> SCHEME_WAM     = 5;

const bit<8> DROP_NONE            = 0;
const bit<8> DROP_PARSER_ERROR    = 1;
const bit<8> DROP_BAD_CHECKSUM    = 2;
const bit<8> DROP_NOT_IPV4        = 3;
const bit<8> DROP_TTL_EXPIRED     = 4;
const bit<8> DROP_ROUTE_MISS      = 5;
const bit<8> DROP_ROUTE_BLACKHOLE = 6;
const bit<8> DROP_LB_GROUP_MISS   = 7;
const bit<8> DROP_LB_EMPTY        = 8;
const bit<8> DROP_LB_MEMBER_MISS  = 9;

/* ---- headers --------------------------------------------------------------- */
typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;

@controller_header("packet_in")
header packet_in_t {
    PortId_t ingress_port;
    bit<7>   _pad;
}

@controller_header("packet_out")
header packet_out_t {
    PortId_t egress_port;
    bit<7>   _pad;
}

/* Ingress -> egress: TNA does not carry ingress_port (or any user metadata)
 * to egress, so ingress prepends this header and egress parses it off. */
header bridged_md_t {
    bit<7>   _pad;
    PortId_t ingress_port;
}

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     totalLen;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     fragOffset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdrChecksum;
    ipv4_addr_t srcAddr;
    ipv4_addr_t dstAddr;
}

header l4_ports_t {         /* the first 4 bytes of TCP and UDP */
    bit<16> srcPort;
    bit<16> dstPort;
}

struct headers_t {
    bridged_md_t bridged;
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   ethernet;
    ipv4_t       ipv4;
    l4_ports_t   l4;
}

struct ig_metadata_t {
    bool    checksum_err;
    bit<16> group_id;
    bit<16> dst_id;
    bit<8>  scheme;
    bit<16> n_members;
    bit<16> seed;
    bit<32> flowlet_timeout;  /* ns (v1model: us) */
    bit<32> now;              /* ingress_mac_tstamp[31:0], ns */
    bit<32> flowlet_gap;
    bit<16> flowlet_id;
    bit<12> flow_slot;
    bit<16> wam_mask;         /* m - 1 */
    bit<16> wam_j;
    bit<16> rnd;
    bit<16> member_idx;
    bit<16> l4_src;
    bit<16> l4_dst;
    bit<8>  drop_reason;
}

struct eg_metadata_t {
    bit<32> ecn_threshold;
    bool    packet_out;       /* came from CPU_PORT: leaves unchanged */
}

/* ============================ ingress parser ============================== */
parser FabricIngressParser(packet_in pkt,
                           out headers_t hdr,
                           out ig_metadata_t ig_md,
                           out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_csum;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        ig_md.checksum_err = false;
        transition select(ig_intr_md.ingress_port) {
            CPU_PORT: parse_packet_out;
            default:  parse_ethernet;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            default:        accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        ipv4_csum.add(hdr.ipv4);
        ig_md.checksum_err = ipv4_csum.verify();
        /* Tofino parsers cannot set a user error with verify(); version/IHL
         * are checked in ingress instead (counted as DROP_PARSER_ERROR). */
        transition select(hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (13w0, IP_PROTO_TCP): parse_l4;
            (13w0, IP_PROTO_UDP): parse_l4;
            default:              accept;
        }
    }

    state parse_l4 {
        pkt.extract(hdr.l4);
        transition accept;
    }
}

/* ================================ ingress ================================= */
control FabricIngress(inout headers_t hdr,
                      inout ig_metadata_t ig_md,
                      in ingress_intrinsic_metadata_t ig_intr_md,
                      in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    Counter<bit<32>, PortId_t>(PORT_COUNT, CounterType_t.PACKETS_AND_BYTES) port_rx_ctr;
    Counter<bit<32>, bit<8>>(DROP_REASON_COUNT, CounterType_t.PACKETS_AND_BYTES) drop_ctr;
    Counter<bit<32>, bit<32>>(LB_MEMBER_CTR_SIZE, CounterType_t.PACKETS_AND_BYTES) lb_member_ctr;
    DirectCounter<bit<32>>(CounterType_t.PACKETS_AND_BYTES) ipv4_lpm_ctr;

    /* ---- flowlet: Hash<> for the slot, two RegisterActions ---------------- */
    Hash<bit<12>>(HashAlgorithm_t.CRC32) flow_slot_hash;

    Register<bit<32>, bit<12>>(FLOWLET_SLOTS, 0) flowlet_last_ts;
    /* Returns now - last and stores now (ns, wraps every 4.29 s). */
    RegisterAction<bit<32>, bit<12>, bit<32>>(flowlet_last_ts) flowlet_touch = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = ig_md.now - value;
            value = ig_md.now;
        }
    };

    Register<bit<16>, bit<12>>(FLOWLET_SLOTS, 0) flowlet_id;
    RegisterAction<bit<16>, bit<12>, bit<16>>(flowlet_id) flowlet_id_read = {
        void apply(inout bit<16> value, out bit<16> rv) {
            rv = value;
        }
    };
    RegisterAction<bit<16>, bit<12>, bit<16>>(flowlet_id) flowlet_id_bump = {
        void apply(inout bit<16> value, out bit<16> rv) {
            value = value + 1;
            rv = value;
        }
    };

    /* ---- rotation: next member per dst_id, wraps at n_members ------------- */
    Register<bit<16>, bit<16>>(ROT_SLOTS, 0) rot_next;
    RegisterAction<bit<16>, bit<16>, bit<16>>(rot_next) rot_advance = {
        void apply(inout bit<16> value, out bit<16> rv) {
            /* Returns the stored member and advances it; member_idx holds
             * n_members - 1 here (set before execute).  Unlike v1model a
             * stored value >= n (group just shrank) is returned as is, so
             * that one packet misses lb_member and is dropped. */
            rv = value;
            if (value >= ig_md.member_idx) {
                value = 0;
            } else {
                value = value + 1;
            }
        }
    };

    /* ---- Whack-a-Mole: per-destination free-running counter (dst_id) ----- */
    Register<bit<16>, bit<16>>(ROT_SLOTS, 0) wam_counter;
    RegisterAction<bit<16>, bit<16>, bit<16>>(wam_counter) wam_next = {
        void apply(inout bit<16> value, out bit<16> rv) {
            rv = value;
            value = value + 1;
        }
    };

    Random<bit<16>>() rng;

    /* ---- ECMP / flowlet member choice: ActionSelector --------------------- */
    Hash<bit<16>>(HashAlgorithm_t.CRC32) sel_hash;
    ActionProfile(LB_MEMBER_CTR_SIZE) lb_profile;
    ActionSelector(lb_profile, sel_hash, SelectorMode_t.FAIR,
                   LB_MAX_MEMBERS, LB_MAX_GROUPS) lb_selector;

    /* ---- routing ----------------------------------------------------------- */
    action set_nhop(PortId_t port, mac_addr_t dmac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.dstAddr = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        ipv4_lpm_ctr.count();
    }
    action set_lb_group(bit<16> group_id, bit<16> dst_id) {
        ig_md.group_id = group_id;
        ig_md.dst_id = dst_id;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        ipv4_lpm_ctr.count();
    }
    action send_to_cpu() {
        ig_tm_md.ucast_egress_port = CPU_PORT;
        ipv4_lpm_ctr.count();
    }
    action drop_route() {
        ig_md.drop_reason = DROP_ROUTE_BLACKHOLE;
        ipv4_lpm_ctr.count();
    }
    action route_miss() {
        ig_md.drop_reason = DROP_ROUTE_MISS;
        ipv4_lpm_ctr.count();
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { set_nhop; set_lb_group; send_to_cpu; drop_route; @defaultonly route_miss; }
        const default_action = route_miss();
        counters = ipv4_lpm_ctr;
        size = IPV4_LPM_SIZE;
    }

    /* ---- group table ------------------------------------------------------- */
    action lb_ecmp(bit<16> seed) {
        ig_md.scheme = SCHEME_ECMP;
        ig_md.seed = seed;
    }
    action lb_flowlet(bit<16> seed, bit<32> timeout_ns) {
        ig_md.scheme = SCHEME_FLOWLET;
        ig_md.seed = seed;
        ig_md.flowlet_timeout = timeout_ns;
    }
    /* Random: a uniform l-bit value through the WaM slot table, so spraying
     * can also be weighted (Tofino has no run-time multiply or modulo). */
    action lb_random(bit<16> mask) {
        ig_md.scheme = SCHEME_RANDOM;
        ig_md.wam_mask = mask;
    }
    action lb_rotate(bit<16> n_members) {
        ig_md.scheme = SCHEME_ROTATE;
        ig_md.n_members = n_members;
    }
    action lb_wam(bit<16> mask) {
        ig_md.scheme = SCHEME_WAM;
        ig_md.wam_mask = mask;
    }
    action lb_group_miss() {
        ig_md.drop_reason = DROP_LB_GROUP_MISS;
    }
    table lb_group {
        key = { ig_md.group_id: exact; }
        actions = { lb_ecmp; lb_flowlet; lb_random; lb_rotate; lb_wam; @defaultonly lb_group_miss; }
        const default_action = lb_group_miss();
        size = LB_MAX_GROUPS;
    }

    /* ---- member selection -------------------------------------------------- */
    action set_member(PortId_t port, mac_addr_t dmac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.dstAddr = dmac;
    }
    action lb_member_miss() {
        ig_md.drop_reason = DROP_LB_MEMBER_MISS;
    }

    /* ECMP and flowlet: P4Runtime action-profile groups (one per LB group,
     * members = set_member actions, weights = member replication). */
    table lb_select {
        key = {
            ig_md.group_id:    exact;
            ig_md.seed:        selector;
            hdr.ipv4.srcAddr:  selector;
            hdr.ipv4.dstAddr:  selector;
            hdr.ipv4.protocol: selector;
            ig_md.l4_src:      selector;
            ig_md.l4_dst:      selector;
            ig_md.flowlet_id:  selector;   /* 0 for ECMP */
        }
        actions = { set_member; @defaultonly lb_member_miss; }
        const default_action = lb_member_miss();
        implementation = lb_selector;
        size = LB_MAX_GROUPS;
    }

    /* Whack-a-Mole and random: (group, j mod m) -> member.  The controller
     * folds the shuffle (a + b*j), the bit reversal and the ball ranges into
     * these m entries per group: Tofino cannot multiply by a run-time b. */
    action wam_set_member(bit<16> member_idx) {
        ig_md.member_idx = member_idx;
    }
    table wam_slot_to_member {
        key = { ig_md.group_id: exact; ig_md.wam_j: exact; }
        actions = { wam_set_member; @defaultonly lb_member_miss; }
        const default_action = lb_member_miss();
        size = WAM_SLOT_SIZE;
    }

    /* Rotation, WaM, random: (group, member index) -> port + MAC. */
    table lb_member {
        key = { ig_md.group_id: exact; ig_md.member_idx: exact; }
        actions = { set_member; @defaultonly lb_member_miss; }
        const default_action = lb_member_miss();
        size = LB_MEMBER_CTR_SIZE;
    }

    apply {
        port_rx_ctr.count(ig_intr_md.ingress_port);
        ig_md.drop_reason = DROP_NONE;
        ig_md.flowlet_id = 0;
        ig_md.l4_src = 0;
        ig_md.l4_dst = 0;
        ig_md.now = ig_intr_md.ingress_mac_tstamp[31:0];

        if (hdr.packet_out.isValid()) {
            ig_tm_md.ucast_egress_port = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else if (ig_prsr_md.parser_err != 0) {
            ig_md.drop_reason = DROP_PARSER_ERROR;
        } else if (!hdr.ipv4.isValid()) {
            ig_md.drop_reason = DROP_NOT_IPV4;
        } else if (hdr.ipv4.version != 4 || hdr.ipv4.ihl != 5) {
            ig_md.drop_reason = DROP_PARSER_ERROR;
        } else if (ig_md.checksum_err) {
            ig_md.drop_reason = DROP_BAD_CHECKSUM;
        } else if (hdr.ipv4.ttl <= 1) {
            ig_md.drop_reason = DROP_TTL_EXPIRED;
        } else {
            if (hdr.l4.isValid()) {
                ig_md.l4_src = hdr.l4.srcPort;
                ig_md.l4_dst = hdr.l4.dstPort;
            }
            switch (ipv4_lpm.apply().action_run) {
                set_lb_group: {
                    lb_group.apply();
                    if (ig_md.scheme == SCHEME_ECMP) {
                        lb_select.apply();
                    } else if (ig_md.scheme == SCHEME_FLOWLET) {
                        ig_md.flow_slot = flow_slot_hash.get({ hdr.ipv4.srcAddr, hdr.ipv4.dstAddr,
                                                               hdr.ipv4.protocol,
                                                               ig_md.l4_src, ig_md.l4_dst });
                        ig_md.flowlet_gap = flowlet_touch.execute(ig_md.flow_slot);
                        /* gap > timeout without a run-time comparator:
                         * timeout |-| gap saturates to 0 iff gap >= timeout. */
                        if ((ig_md.flowlet_timeout |-| ig_md.flowlet_gap) == 0
                                && ig_md.flowlet_gap != ig_md.flowlet_timeout) {
                            ig_md.flowlet_id = flowlet_id_bump.execute(ig_md.flow_slot);
                        } else {
                            ig_md.flowlet_id = flowlet_id_read.execute(ig_md.flow_slot);
                        }
                        lb_select.apply();
                    } else {
                        if (ig_md.scheme == SCHEME_ROTATE) {
                            if (ig_md.n_members == 0) {
                                ig_md.drop_reason = DROP_LB_EMPTY;
                            } else {
                                ig_md.member_idx = ig_md.n_members - 1;
                                ig_md.member_idx = rot_advance.execute(ig_md.dst_id);
                            }
                        } else if (ig_md.scheme == SCHEME_WAM) {
                            ig_md.wam_j = wam_next.execute(ig_md.dst_id) & ig_md.wam_mask;
                            wam_slot_to_member.apply();
                        } else if (ig_md.scheme == SCHEME_RANDOM) {
                            ig_md.wam_j = rng.get() & ig_md.wam_mask;
                            wam_slot_to_member.apply();
                        }
                        if (ig_md.drop_reason == DROP_NONE) {
                            if (lb_member.apply().hit) {
                                lb_member_ctr.count((bit<32>)ig_md.group_id * LB_MAX_MEMBERS
                                                    + (bit<32>)ig_md.member_idx);
                            }
                        }
                    }
                }
            }
        }

        if (ig_md.drop_reason != DROP_NONE) {
            ig_dprsr_md.drop_ctl = 1;
            drop_ctr.count(ig_md.drop_reason);
        } else {
            hdr.bridged.setValid();
            hdr.bridged._pad = 0;
            hdr.bridged.ingress_port = ig_intr_md.ingress_port;
        }
    }
}

control FabricIngressDeparser(packet_out pkt,
                              inout headers_t hdr,
                              in ig_metadata_t ig_md,
                              in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr.bridged);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.l4);
    }
}

/* ============================= egress parser ============================== */
parser FabricEgressParser(packet_in pkt,
                          out headers_t hdr,
                          out eg_metadata_t eg_md,
                          out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridged);
        eg_md.ecn_threshold = 0;
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            default:        accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

/* ================================ egress ================================== */
control FabricEgress(inout headers_t hdr,
                     inout eg_metadata_t eg_md,
                     in egress_intrinsic_metadata_t eg_intr_md,
                     in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                     inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                     inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    Counter<bit<32>, PortId_t>(PORT_COUNT, CounterType_t.PACKETS_AND_BYTES) port_tx_ctr;

    Register<bit<32>, PortId_t>(PORT_COUNT, 0) port_qdepth_max;
    RegisterAction<bit<32>, PortId_t, bit<32>>(port_qdepth_max) qdepth_max_update = {
        void apply(inout bit<32> value) {
            if ((bit<32>)eg_intr_md.deq_qdepth > value) {
                value = (bit<32>)eg_intr_md.deq_qdepth;
            }
        }
    };
    Register<bit<32>, PortId_t>(PORT_COUNT, 0) port_qdepth_last;
    RegisterAction<bit<32>, PortId_t, bit<32>>(port_qdepth_last) qdepth_last_update = {
        void apply(inout bit<32> value) {
            value = (bit<32>)eg_intr_md.deq_qdepth;
        }
    };

    action set_smac(mac_addr_t smac) {
        hdr.ethernet.srcAddr = smac;
    }
    table port_smac {
        key = { eg_intr_md.egress_port: exact; }
        actions = { set_smac; NoAction; }
        default_action = NoAction();
        size = PORT_COUNT;
    }

    action set_ecn_threshold(bit<19> qdepth) {
        eg_md.ecn_threshold = (bit<32>)qdepth;
    }
    table ecn_config {
        key = { eg_intr_md.egress_port: exact; }
        actions = { set_ecn_threshold; NoAction; }
        default_action = NoAction();
        size = PORT_COUNT;
    }

    apply {
        /* A controller packet-out (ingress port CPU_PORT) leaves exactly as
         * sent: no source MAC, no CE mark, no checksum update. */
        eg_md.packet_out = hdr.bridged.ingress_port == CPU_PORT;
        qdepth_max_update.execute(eg_intr_md.egress_port);
        qdepth_last_update.execute(eg_intr_md.egress_port);

        if (eg_intr_md.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = hdr.bridged.ingress_port;
            hdr.packet_in._pad = 0;
        } else if (!eg_md.packet_out) {
            port_smac.apply();
            if (hdr.ipv4.isValid() && hdr.ipv4.ecn != ECN_NOT_ECT) {
                if (ecn_config.apply().hit) {
                    /* deq_qdepth >= threshold, as threshold |-| qdepth == 0 */
                    if ((eg_md.ecn_threshold |-| (bit<32>)eg_intr_md.deq_qdepth) == 0) {
                        hdr.ipv4.ecn = ECN_CE;
                    }
                }
            }
        }
        hdr.bridged.setInvalid();
        port_tx_ctr.count(eg_intr_md.egress_port);
    }
}

control FabricEgressDeparser(packet_out pkt,
                             inout headers_t hdr,
                             in eg_metadata_t eg_md,
                             in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_csum;
    apply {
        /* One checksum update after both the TTL (ingress) and ECN (egress)
         * changes. */
        if (hdr.ipv4.isValid() && !eg_md.packet_out) {
            hdr.ipv4.hdrChecksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.totalLen, hdr.ipv4.identification,
                hdr.ipv4.flags, hdr.ipv4.fragOffset,
                hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.srcAddr, hdr.ipv4.dstAddr });
        }
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

Pipeline(FabricIngressParser(),
         FabricIngress(),
         FabricIngressDeparser(),
         FabricEgressParser(),
         FabricEgress(),
         FabricEgressDeparser()) pipe;

Switch(pipe) main;
