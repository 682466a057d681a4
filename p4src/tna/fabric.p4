/* -*- P4_16 -*- */
/*
 * p4fabric -- Tofino (TNA) port of p4src/fabric.p4.
 *
 * Written against TNA (tna.p4: Tofino 1, and Tofino 2 with
 * __TARGET_TOFINO__=2); `make tofino` compiles it with the open Tofino
 * compiler (p4c-barefoot) when that is on PATH.  The contract constants come
 * from ../include/contract.p4, the file the v1model program includes too;
 * table, action, register and counter names are the v1model program's
 * (MyIngress / MyEgress), and tests/p4src/test_tna_contract.py fails on any
 * difference that model/tna.py does not declare.  p4src/README.md, section
 * "Tofino port", and docs/tofino.md say why each difference exists.
 */
#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>     /* Tofino 2: --target tofino2 --arch t2na */
#else
#include <tna.p4>      /* Tofino 1: --target tofino --arch tna   */
#endif

/* ---- constants --------------------------------------------------------- */
#include "../include/contract.p4"

/* Tofino's CPU port depends on the chip and board (the PCIe CPU port is 192
 * on a 2-pipe and 320 on a 4-pipe Tofino 1; the SDE's bf_pcie_cpu_port()
 * tells yours); set it for your switch (docs/tofino.md). */
const PortId_t CPU_PORT = 192;

/* Whack-a-Mole / random slot table: exact (group, j mod m) entries, m per
 * group (v1model: 16384 range entries), see README. */
#define WAM_SLOT_SIZE      65536

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

/* The load-balancing fields, under meta.lb as in the v1model program, so the
 * table keys the controller writes have the same names. */
struct lb_meta_t {
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
    bit<14> ctr_idx;          /* lb_member_ctr index: group ++ member */
    bit<16> wam_mask;         /* m - 1 */
    bit<16> wam_j;            /* counter (WaM) or random value, & wam_mask */
    bit<16> rnd;
    bit<16> member_idx;
}

struct ig_metadata_t {
    bool      checksum_err;
    lb_meta_t lb;
    bit<16>   l4_src;
    bit<16>   l4_dst;
    bit<8>    drop_reason;
}

struct eg_metadata_t {
    bit<19> ecn_threshold;    /* K_max: CE at or above (queue cells)     */
    bit<19> ecn_kmin;         /* K_min: the ramp's low end               */
    bit<19> ecn_mask;         /* the draw's range - 1 (0: step)          */
    bit<19> ecn_draw;
    bool    packet_out;       /* came from CPU_PORT: leaves unchanged */
}

/* ============================ ingress parser ============================== */
parser FabricIngressParser(packet_in pkt,
                           out headers_t hdr,
                           out ig_metadata_t meta,
                           out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_csum;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        meta.checksum_err = false;
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
        meta.checksum_err = ipv4_csum.verify();
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
control MyIngress(inout headers_t hdr,
                  inout ig_metadata_t meta,
                  in ingress_intrinsic_metadata_t ig_intr_md,
                  in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                  inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                  inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    Counter<bit<32>, PortId_t>(PORT_COUNT, CounterType_t.PACKETS_AND_BYTES) port_rx_ctr;
    Counter<bit<32>, bit<8>>(DROP_REASON_COUNT, CounterType_t.PACKETS_AND_BYTES) drop_ctr;
    Counter<bit<32>, bit<14>>(LB_MEMBER_CTR_SIZE, CounterType_t.PACKETS_AND_BYTES) lb_member_ctr;
    DirectCounter<bit<32>>(CounterType_t.PACKETS_AND_BYTES) ipv4_lpm_ctr;

    /* ---- flowlet: Hash<> for the slot, two RegisterActions ---------------- */
    Hash<bit<12>>(HashAlgorithm_t.CRC32) flow_slot_hash;

    Register<bit<32>, bit<12>>(FLOWLET_SLOTS, 0) flowlet_last_ts;
    /* Returns now - last and stores now (ns, wraps every 4.29 s). */
    RegisterAction<bit<32>, bit<12>, bit<32>>(flowlet_last_ts) flowlet_touch = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = meta.lb.now - value;
            value = meta.lb.now;
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
            if (value >= meta.lb.member_idx) {
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
        meta.lb.group_id = group_id;
        meta.lb.dst_id = dst_id;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        ipv4_lpm_ctr.count();
    }
    action send_to_cpu() {
        ig_tm_md.ucast_egress_port = CPU_PORT;
        ipv4_lpm_ctr.count();
    }
    action drop_route() {
        meta.drop_reason = DROP_ROUTE_BLACKHOLE;
        ipv4_lpm_ctr.count();
    }
    action route_miss() {
        meta.drop_reason = DROP_ROUTE_MISS;
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
        meta.lb.scheme = SCHEME_ECMP;
        meta.lb.seed = seed;
    }
    action lb_flowlet(bit<16> seed, bit<32> timeout_ns) {
        meta.lb.scheme = SCHEME_FLOWLET;
        meta.lb.seed = seed;
        meta.lb.flowlet_timeout = timeout_ns;
    }
    /* Random: a uniform l-bit value through the WaM slot table, so spraying
     * can also be weighted (Tofino has no run-time multiply or modulo). */
    action lb_random(bit<16> mask) {
        meta.lb.scheme = SCHEME_RANDOM;
        meta.lb.wam_mask = mask;
    }
    action lb_rotate(bit<16> n_members) {
        meta.lb.scheme = SCHEME_ROTATE;
        meta.lb.n_members = n_members;
    }
    action lb_wam(bit<16> mask) {
        meta.lb.scheme = SCHEME_WAM;
        meta.lb.wam_mask = mask;
    }
    action lb_group_miss() {
        meta.drop_reason = DROP_LB_GROUP_MISS;
    }
    table lb_group {
        key = { meta.lb.group_id: exact; }
        actions = { lb_ecmp; lb_flowlet; lb_random; lb_rotate; lb_wam; @defaultonly lb_group_miss; }
        const default_action = lb_group_miss();
        size = LB_GROUP_SIZE;
    }

    /* ---- member selection -------------------------------------------------- */
    action set_member(PortId_t port, mac_addr_t dmac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.dstAddr = dmac;
    }
    action lb_member_miss() {
        meta.drop_reason = DROP_LB_MEMBER_MISS;
    }

    /* ECMP and flowlet: P4Runtime action-profile groups (one per LB group,
     * members = set_member actions, weights = member replication). */
    table lb_select {
        key = {
            meta.lb.group_id:    exact;
            meta.lb.seed:        selector;
            hdr.ipv4.srcAddr:  selector;
            hdr.ipv4.dstAddr:  selector;
            hdr.ipv4.protocol: selector;
            meta.l4_src:      selector;
            meta.l4_dst:      selector;
            meta.lb.flowlet_id:  selector;   /* 0 for ECMP */
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
        meta.lb.member_idx = member_idx;
    }
    action wam_slot_miss() {
        meta.drop_reason = DROP_LB_MEMBER_MISS;
    }
    table wam_slot_to_member {
        key = { meta.lb.group_id: exact; meta.lb.wam_j: exact; }
        actions = { wam_set_member; @defaultonly wam_slot_miss; }
        const default_action = wam_slot_miss();
        size = WAM_SLOT_SIZE;
    }

    /* Rotation, WaM, random: (group, member index) -> port + MAC. */
    table lb_member {
        key = { meta.lb.group_id: exact; meta.lb.member_idx: exact; }
        actions = { set_member; @defaultonly lb_member_miss; }
        const default_action = lb_member_miss();
        size = LB_MEMBER_SIZE;
    }

    apply {
        port_rx_ctr.count(ig_intr_md.ingress_port);
        meta.drop_reason = DROP_NONE;
        meta.lb.flowlet_id = 0;
        meta.l4_src = 0;
        meta.l4_dst = 0;
        meta.lb.now = ig_intr_md.ingress_mac_tstamp[31:0];

        if (hdr.packet_out.isValid()) {
            ig_tm_md.ucast_egress_port = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else if (ig_prsr_md.parser_err != 0) {
            meta.drop_reason = DROP_PARSER_ERROR;
        } else if (!hdr.ipv4.isValid()) {
            meta.drop_reason = DROP_NOT_IPV4;
        } else if (hdr.ipv4.version != 4 || hdr.ipv4.ihl != 5) {
            meta.drop_reason = DROP_PARSER_ERROR;
        } else if (meta.checksum_err) {
            meta.drop_reason = DROP_BAD_CHECKSUM;
        } else if (hdr.ipv4.ttl <= 1) {
            meta.drop_reason = DROP_TTL_EXPIRED;
        } else {
            if (hdr.l4.isValid()) {
                meta.l4_src = hdr.l4.srcPort;
                meta.l4_dst = hdr.l4.dstPort;
            }
            switch (ipv4_lpm.apply().action_run) {
                set_lb_group: {
                    lb_group.apply();
                    if (meta.lb.scheme == SCHEME_ECMP) {
                        lb_select.apply();
                    } else if (meta.lb.scheme == SCHEME_FLOWLET) {
                        meta.lb.flow_slot = flow_slot_hash.get({ hdr.ipv4.srcAddr, hdr.ipv4.dstAddr,
                                                               hdr.ipv4.protocol,
                                                               meta.l4_src, meta.l4_dst });
                        meta.lb.flowlet_gap = flowlet_touch.execute(meta.lb.flow_slot);
                        /* gap > timeout without a run-time comparator: the
                         * saturating gap |-| timeout is non-zero iff gap > timeout;
                         * computed in an action, then tested against a constant
                         * (what a gateway can do). */
                        meta.lb.flowlet_gap = meta.lb.flowlet_gap |-| meta.lb.flowlet_timeout;
                        if (meta.lb.flowlet_gap != 0) {
                            meta.lb.flowlet_id = flowlet_id_bump.execute(meta.lb.flow_slot);
                        } else {
                            meta.lb.flowlet_id = flowlet_id_read.execute(meta.lb.flow_slot);
                        }
                        lb_select.apply();
                    } else {
                        if (meta.lb.scheme == SCHEME_ROTATE) {
                            if (meta.lb.n_members == 0) {
                                meta.drop_reason = DROP_LB_EMPTY;
                            } else {
                                meta.lb.member_idx = meta.lb.n_members - 1;
                                meta.lb.member_idx = rot_advance.execute(meta.lb.dst_id);
                            }
                        } else {
                            /* WaM and random: j, then j & (m - 1) in an action
                             * of its own (on Tofino 2 the register's or the
                             * RNG's output cannot be masked in the action that
                             * reads it: the ALU's operands do not align). */
                            if (meta.lb.scheme == SCHEME_WAM) {
                                meta.lb.wam_j = wam_next.execute(meta.lb.dst_id);
                            } else {
                                meta.lb.wam_j = rng.get();
                            }
                            if (meta.lb.scheme == SCHEME_WAM || meta.lb.scheme == SCHEME_RANDOM) {
                                meta.lb.wam_j = meta.lb.wam_j & meta.lb.wam_mask;
                                wam_slot_to_member.apply();
                            }
                        }
                        if (meta.drop_reason == DROP_NONE) {
                            if (lb_member.apply().hit) {
                                /* group * 64 + member as a concatenation: no
                                 * arithmetic in the index (groups < 256,
                                 * members < 64) */
                                meta.lb.ctr_idx = meta.lb.group_id[7:0] ++ meta.lb.member_idx[5:0];
                                lb_member_ctr.count(meta.lb.ctr_idx);
                            }
                        }
                    }
                }
            }
        }

        if (meta.drop_reason != DROP_NONE) {
            ig_dprsr_md.drop_ctl = 1;
            drop_ctr.count(meta.drop_reason);
        } else {
            hdr.bridged.setValid();
            hdr.bridged._pad = 0;
            hdr.bridged.ingress_port = ig_intr_md.ingress_port;
        }
    }
}

control FabricIngressDeparser(packet_out pkt,
                              inout headers_t hdr,
                              in ig_metadata_t meta,
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
        eg_md.ecn_kmin = 0;
        eg_md.ecn_mask = 0;
        eg_md.ecn_draw = 0;
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
control MyEgress(inout headers_t hdr,
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

    /* The ramp draws from a power-of-two range: the controller gives
     * mask = 2^ceil(log2(K_max - K_min)) - 1 and raises K_max to
     * K_min + mask + 1 (model/tna.py DIFFERENCES). */
    /* 19 bits: a queue depth's width; a wider draw does not fit the
     * immediate path beside the rest of its action. */
    Random<bit<19>>() ecn_rng;

    action set_ecn_threshold(bit<19> qdepth) {
        eg_md.ecn_threshold = qdepth;
        eg_md.ecn_kmin = qdepth;
        eg_md.ecn_mask = 0;
    }
    action set_ecn_ramp(bit<19> kmin, bit<19> kmax, bit<19> mask) {
        eg_md.ecn_kmin = kmin;
        eg_md.ecn_threshold = kmax;
        eg_md.ecn_mask = mask;
    }
    table ecn_config {
        key = { eg_intr_md.egress_port: exact; }
        actions = { set_ecn_threshold; set_ecn_ramp; NoAction; }
        default_action = NoAction();
        size = PORT_COUNT;
    }

    apply {
        /* A controller packet-out (ingress port CPU_PORT) leaves exactly as
         * sent: no source MAC, no CE mark, no checksum update. */
        /* Tofino has no ALU result of a comparison: set it in a branch. */
        eg_md.packet_out = false;
        if (hdr.bridged.ingress_port == CPU_PORT) {
            eg_md.packet_out = true;
        }
        qdepth_max_update.execute(eg_intr_md.egress_port);
        qdepth_last_update.execute(eg_intr_md.egress_port);

        if (eg_intr_md.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = hdr.bridged.ingress_port;
        } else if (!eg_md.packet_out) {
            port_smac.apply();
            if (hdr.ipv4.isValid() && hdr.ipv4.ecn != ECN_NOT_ECT) {
                if (ecn_config.apply().hit) {
                    /* deq_qdepth >= threshold, as threshold |-| qdepth == 0,
                     * computed in an action and tested against a constant */
                    eg_md.ecn_threshold = eg_md.ecn_threshold |-| eg_intr_md.deq_qdepth;
                    if (eg_md.ecn_threshold == 0) {
                        hdr.ipv4.ecn = ECN_CE;
                    } else {
                        /* below K_max: CE when draw < qdepth - K_min, i.e.
                         * (qdepth |-| K_min) |-| draw != 0 (never for a step).
                         * Two actions, one operation each: the gateway between
                         * them (0 |-| draw is 0 anyway) keeps the compiler from
                         * folding the chain into one action it cannot run. */
                        eg_md.ecn_kmin = eg_intr_md.deq_qdepth |-| eg_md.ecn_kmin;
                        eg_md.ecn_draw = ecn_rng.get() & eg_md.ecn_mask;
                        if (eg_md.ecn_kmin != 0) {
                            eg_md.ecn_kmin = eg_md.ecn_kmin |-| eg_md.ecn_draw;
                            if (eg_md.ecn_kmin != 0) {
                                hdr.ipv4.ecn = ECN_CE;
                            }
                        }
                    }
                }
            }
        }
        /* Its own action: with a constant, one Tofino action takes only one
         * PHV source, and the port above comes shifted from two. */
        if (hdr.packet_in.isValid()) {
            hdr.packet_in._pad = 0;
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
         MyIngress(),
         FabricIngressDeparser(),
         FabricEgressParser(),
         MyEgress(),
         FabricEgressDeparser()) pipe;

Switch(pipe) main;
