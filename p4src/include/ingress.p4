/*
 * p4fabric -- ingress: IPv4 routing and the run-time selectable
 * load-balancing schemes.
 *
 * Hot path (at most four table lookups per packet):
 *   ipv4_lpm -> [lb_group -> (wam_slot_to_member) -> lb_member]
 *
 * Every load-balancing scheme reduces to one thing: a member index
 * meta.lb.member_idx in the packet's group.  lb_member then maps
 * (group, member index) to an egress port and next-hop MAC, so the
 * controller manages members the same way whatever the scheme.
 *
 * Drops are decided in one place, at the end of apply: any stage that wants
 * the packet dropped sets meta.drop_reason (a DROP_* const); the packet is
 * then mark_to_drop()ed and drop_ctr[reason] is counted.
 */
#ifndef _P4FABRIC_INGRESS_P4_
#define _P4FABRIC_INGRESS_P4_

control MyIngress(inout headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {

    /* ------------------------------------------------------------------ */
    /* Counters                                                            */
    /* ------------------------------------------------------------------ */

    /* Per ingress port: every packet received, before any decision. */
    counter(PORT_COUNT, CounterType.packets_and_bytes) port_rx_ctr;

    /* Per drop reason, indexed by the DROP_* consts of defines.p4. */
    counter(DROP_REASON_COUNT, CounterType.packets_and_bytes) drop_ctr;

    /* Per (group, member): index = group_id * LB_MAX_MEMBERS + member_idx.
     * An indexed counter (not a direct one) so that it survives the
     * controller rewriting lb_member entries when it re-weights. */
    counter(LB_MEMBER_CTR_SIZE, CounterType.packets_and_bytes) lb_member_ctr;

    /* Per route: hits of each ipv4_lpm entry. */
    direct_counter(CounterType.packets_and_bytes) ipv4_lpm_ctr;

    /* ------------------------------------------------------------------ */
    /* Registers (load-balancing state)                                    */
    /* ------------------------------------------------------------------ */

    /* Flowlet: index = crc32(5-tuple) mod FLOWLET_SLOTS, shared by all
     * groups.  last_ts holds ingress_global_timestamp (us) of the slot's
     * last packet; id is the slot's current flowlet id (wraps at 2^16). */
    register<bit<48>>(FLOWLET_SLOTS) flowlet_last_ts;
    register<bit<16>>(FLOWLET_SLOTS) flowlet_id;

    /* Destination rotation: index = dst_id, a per-(group, destination) slot
     * the controller assigns in the route (set_lb_group).  Holds the member
     * index the next packet to that destination will use. */
    register<bit<16>>(ROT_SLOTS) rot_next;

    /* Whack-a-Mole: index = dst_id, the route's per-(group, destination)
     * slot, as rot_next.  Free-running 16-bit packet counter j; only its
     * low l bits matter (m = 2^l divides 2^16, so the wrap keeps the
     * sequence periodic).  One counter per destination, not per group: the
     * paper's counter is one sender's, and its bound holds for that sender's
     * consecutive packets; a counter shared by the destinations of a group
     * bounds only their union, and two destinations whose packets alternate
     * would each get one member for as long as they alternate. */
    register<bit<16>>(ROT_SLOTS) wam_counter;

    /* ------------------------------------------------------------------ */
    /* Routing: ipv4_lpm                                                   */
    /* ------------------------------------------------------------------ */

    /* Direct next hop (e.g. a host on a leaf port). */
    action set_nhop(port_t port, mac_addr_t dmac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.dstAddr = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    /* Load-balanced next hop: the group decides the member.  dst_id names
     * the route's destination for rotation and Whack-a-Mole (their
     * per-destination counters; ignored by the other schemes). */
    action set_lb_group(bit<16> group_id, bit<16> dst_id) {
        meta.lb.group_id = group_id;
        meta.lb.dst_id = dst_id;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    /* Punt to the controller (arrives with a packet_in header). */
    action send_to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
    }

    /* Explicit blackhole route. */
    action drop_route() {
        meta.drop_reason = DROP_ROUTE_BLACKHOLE;
    }

    action route_miss() {
        meta.drop_reason = DROP_ROUTE_MISS;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            set_nhop;
            set_lb_group;
            send_to_cpu;
            drop_route;
            route_miss;
        }
        default_action = route_miss();
        counters = ipv4_lpm_ctr;
        size = IPV4_LPM_SIZE;
    }

    /* ------------------------------------------------------------------ */
    /* Load-balancing group: group id -> scheme and its parameters         */
    /* ------------------------------------------------------------------ */

    /* ECMP: member = H(seed, 5-tuple) mod n_members, where seed[1:0] picks
     * the hash variant: 0 crc32 over (seed, src, dst, proto, sport, dport),
     * 1 crc32 over (seed, dport, sport, proto, dst, src), 2 and 3 the same
     * two layouts with crc16.
     * Why variants: CRC is linear, so a seed hashed in with the fields only
     * XORs a constant into the CRC, which for 2^k members merely relabels
     * them -- switches with the same variant polarise whatever their seeds.
     * Adjacent tiers must therefore use different seed[1:0].
     * Why crc32 first: the low bits of CRC-16/ARC spread structured inputs
     * (consecutive ports or addresses) badly, e.g. 2 of 8 members used. */
    action lb_ecmp(bit<16> n_members, bit<16> seed) {
        meta.lb.scheme = SCHEME_ECMP;
        meta.lb.n_members = n_members;
        meta.lb.seed = seed;
    }

    /* Flowlet: as ECMP with the flowlet id added after dport (forward
     * variants) or before it (reversed variants);
     * a gap > timeout_us between a slot's packets bumps its flowlet id. */
    action lb_flowlet(bit<16> n_members, bit<16> seed, bit<32> timeout_us) {
        meta.lb.scheme = SCHEME_FLOWLET;
        meta.lb.n_members = n_members;
        meta.lb.seed = seed;
        meta.lb.flowlet_timeout = (bit<48>)timeout_us;
    }

    /* Random spraying: member uniform in [0, n_members - 1], per packet. */
    action lb_random(bit<16> n_members) {
        meta.lb.scheme = SCHEME_RANDOM;
        meta.lb.n_members = n_members;
    }

    /* Destination rotation: per (group, destination) round robin. */
    action lb_rotate(bit<16> n_members) {
        meta.lb.scheme = SCHEME_ROTATE;
        meta.lb.n_members = n_members;
    }

    /* Whack-a-Mole: m = 2^log2_m slots (0 <= log2_m <= WAM_L_MAX), shuffle
     * j' = (a + b*j) mod m with b odd, slot = bit-reverse_l(j'), member from
     * wam_slot_to_member.  n_members is unused (the ranges define it). */
    action lb_wam(bit<8> log2_m, bit<16> a, bit<16> b) {
        meta.lb.scheme = SCHEME_WAM;
        meta.lb.wam_log2_m = log2_m;
        meta.lb.wam_a = a;
        meta.lb.wam_b = b;
    }

    action lb_group_miss() {
        meta.drop_reason = DROP_LB_GROUP_MISS;
    }

    table lb_group {
        key = {
            meta.lb.group_id: exact;
        }
        actions = {
            lb_ecmp;
            lb_flowlet;
            lb_random;
            lb_rotate;
            lb_wam;
            lb_group_miss;
        }
        default_action = lb_group_miss();
        size = LB_GROUP_SIZE;
    }

    /* ------------------------------------------------------------------ */
    /* Whack-a-Mole: slot -> member by cumulative ball ranges              */
    /* ------------------------------------------------------------------ */

    /* The controller gives member k the slots [B_k, B_{k+1} - 1] where
     * B_k = balls of members 0..k-1 (a member with 0 balls gets no entry). */
    action wam_set_member(bit<16> member_idx) {
        meta.lb.member_idx = member_idx;
    }

    action wam_slot_miss() {
        meta.drop_reason = DROP_LB_MEMBER_MISS;
    }

    table wam_slot_to_member {
        key = {
            meta.lb.group_id: exact;
            meta.lb.wam_slot: range;
        }
        actions = {
            wam_set_member;
            wam_slot_miss;
        }
        default_action = wam_slot_miss();
        size = WAM_SLOT_SIZE;
    }

    /* ------------------------------------------------------------------ */
    /* Member: (group, member index) -> egress port + next-hop MAC         */
    /* ------------------------------------------------------------------ */

    action set_member(port_t port, mac_addr_t dmac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.dstAddr = dmac;
    }

    action lb_member_miss() {
        meta.drop_reason = DROP_LB_MEMBER_MISS;
    }

    table lb_member {
        key = {
            meta.lb.group_id:   exact;
            meta.lb.member_idx: exact;
        }
        actions = {
            set_member;
            lb_member_miss;
        }
        default_action = lb_member_miss();
        size = LB_MEMBER_SIZE;
    }

    /* ------------------------------------------------------------------ */

    apply {
        port_rx_ctr.count((bit<32>)standard_metadata.ingress_port);

        if (hdr.packet_out.isValid()) {
            /* Controller packet-out: send as-is, no routing, ahead of data
             * (a liveness probe must not be tail-dropped behind an incast). */
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            standard_metadata.priority = PRIO_CONTROL;
            hdr.packet_out.setInvalid();
            meta.packet_out = 1w1;
        } else if (standard_metadata.parser_error != error.NoError) {
            meta.drop_reason = DROP_PARSER_ERROR;
        } else if (standard_metadata.checksum_error == 1w1) {
            meta.drop_reason = DROP_BAD_CHECKSUM;
        } else if (!hdr.ipv4.isValid()) {
            meta.drop_reason = DROP_NOT_IPV4;
        } else if (hdr.ipv4.ttl <= 8w1) {
            /* Forwarding would leave TTL 0. */
            meta.drop_reason = DROP_TTL_EXPIRED;
        } else {
            /* L4 ports for hashing; 0 when there is no TCP/UDP header, so
             * the hash input never reads an invalid header. */
            if (hdr.tcp.isValid()) {
                meta.l4_src = hdr.tcp.srcPort;
                meta.l4_dst = hdr.tcp.dstPort;
            } else if (hdr.udp.isValid()) {
                meta.l4_src = hdr.udp.srcPort;
                meta.l4_dst = hdr.udp.dstPort;
            }

            switch (ipv4_lpm.apply().action_run) {
                set_lb_group: {
                    lb_group.apply();
                    if (meta.drop_reason == DROP_NONE) {
                        if (meta.lb.scheme != SCHEME_WAM && meta.lb.n_members == 16w0) {
                            meta.drop_reason = DROP_LB_EMPTY;
                        } else if (meta.lb.scheme == SCHEME_ECMP) {
                            /* Hash variant by seed[1:0]: see lb_ecmp. */
                            if (meta.lb.seed[1:0] == 2w0) {
                                hash(meta.lb.member_idx, HashAlgorithm.crc32, 16w0,
                                     { meta.lb.seed, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol, meta.l4_src, meta.l4_dst },
                                     meta.lb.n_members);
                            } else if (meta.lb.seed[1:0] == 2w1) {
                                hash(meta.lb.member_idx, HashAlgorithm.crc32, 16w0,
                                     { meta.lb.seed, meta.l4_dst, meta.l4_src, hdr.ipv4.protocol, hdr.ipv4.dstAddr, hdr.ipv4.srcAddr },
                                     meta.lb.n_members);
                            } else if (meta.lb.seed[1:0] == 2w2) {
                                hash(meta.lb.member_idx, HashAlgorithm.crc16, 16w0,
                                     { meta.lb.seed, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol, meta.l4_src, meta.l4_dst },
                                     meta.lb.n_members);
                            } else {
                                hash(meta.lb.member_idx, HashAlgorithm.crc16, 16w0,
                                     { meta.lb.seed, meta.l4_dst, meta.l4_src, hdr.ipv4.protocol, hdr.ipv4.dstAddr, hdr.ipv4.srcAddr },
                                     meta.lb.n_members);
                            }
                        } else if (meta.lb.scheme == SCHEME_FLOWLET) {
                            hash(meta.lb.flow_slot, HashAlgorithm.crc32, 32w0,
                                 { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr,
                                   hdr.ipv4.protocol,
                                   meta.l4_src, meta.l4_dst },
                                 (bit<32>)FLOWLET_SLOTS);
                            /* Read BOTH cells back on every packet: the id
                             * of an ongoing flowlet comes from the register,
                             * not from metadata (which starts at 0). */
                            flowlet_last_ts.read(meta.lb.flowlet_last, meta.lb.flow_slot);
                            flowlet_id.read(meta.lb.flowlet_id, meta.lb.flow_slot);
                            if (standard_metadata.ingress_global_timestamp - meta.lb.flowlet_last
                                    > meta.lb.flowlet_timeout) {
                                meta.lb.flowlet_id = meta.lb.flowlet_id + 1;
                                flowlet_id.write(meta.lb.flow_slot, meta.lb.flowlet_id);
                            }
                            flowlet_last_ts.write(meta.lb.flow_slot,
                                                  standard_metadata.ingress_global_timestamp);
                            if (meta.lb.seed[1:0] == 2w0) {
                                hash(meta.lb.member_idx, HashAlgorithm.crc32, 16w0,
                                     { meta.lb.seed, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol, meta.l4_src, meta.l4_dst, meta.lb.flowlet_id },
                                     meta.lb.n_members);
                            } else if (meta.lb.seed[1:0] == 2w1) {
                                hash(meta.lb.member_idx, HashAlgorithm.crc32, 16w0,
                                     { meta.lb.seed, meta.lb.flowlet_id, meta.l4_dst, meta.l4_src, hdr.ipv4.protocol, hdr.ipv4.dstAddr, hdr.ipv4.srcAddr },
                                     meta.lb.n_members);
                            } else if (meta.lb.seed[1:0] == 2w2) {
                                hash(meta.lb.member_idx, HashAlgorithm.crc16, 16w0,
                                     { meta.lb.seed, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol, meta.l4_src, meta.l4_dst, meta.lb.flowlet_id },
                                     meta.lb.n_members);
                            } else {
                                hash(meta.lb.member_idx, HashAlgorithm.crc16, 16w0,
                                     { meta.lb.seed, meta.lb.flowlet_id, meta.l4_dst, meta.l4_src, hdr.ipv4.protocol, hdr.ipv4.dstAddr, hdr.ipv4.srcAddr },
                                     meta.lb.n_members);
                            }
                        } else if (meta.lb.scheme == SCHEME_RANDOM) {
                            random(meta.lb.member_idx, 16w0, meta.lb.n_members - 16w1);
                        } else if (meta.lb.scheme == SCHEME_ROTATE) {
                            rot_next.read(meta.lb.member_idx, (bit<32>)meta.lb.dst_id);
                            /* The group may have shrunk since the last write. */
                            if (meta.lb.member_idx >= meta.lb.n_members) {
                                meta.lb.member_idx = 16w0;
                            }
                            if (meta.lb.member_idx + 16w1 == meta.lb.n_members) {
                                rot_next.write((bit<32>)meta.lb.dst_id, 16w0);
                            } else {
                                rot_next.write((bit<32>)meta.lb.dst_id, meta.lb.member_idx + 16w1);
                            }
                        } else if (meta.lb.scheme == SCHEME_WAM) {
                            wam_counter.read(meta.lb.wam_j, (bit<32>)meta.lb.dst_id);
                            wam_counter.write((bit<32>)meta.lb.dst_id, meta.lb.wam_j + 16w1);
                            /* Per-switch shuffle, reduced mod m = 2^l.  For
                             * l = 16, 1 << 16 wraps to 0 and the mask is
                             * 0xFFFF, as wanted. */
                            meta.lb.wam_jp = (meta.lb.wam_a + meta.lb.wam_b * meta.lb.wam_j)
                                & ((16w1 << meta.lb.wam_log2_m) - 16w1);
                            /* Reverse all 16 bits, then keep the top l: that
                             * is the l-bit reversal of wam_jp.  For l = 0 the
                             * shift is by 16 and the slot is 0. */
                            meta.lb.wam_slot = (meta.lb.wam_jp[0:0]   ++ meta.lb.wam_jp[1:1]
                                             ++ meta.lb.wam_jp[2:2]   ++ meta.lb.wam_jp[3:3]
                                             ++ meta.lb.wam_jp[4:4]   ++ meta.lb.wam_jp[5:5]
                                             ++ meta.lb.wam_jp[6:6]   ++ meta.lb.wam_jp[7:7]
                                             ++ meta.lb.wam_jp[8:8]   ++ meta.lb.wam_jp[9:9]
                                             ++ meta.lb.wam_jp[10:10] ++ meta.lb.wam_jp[11:11]
                                             ++ meta.lb.wam_jp[12:12] ++ meta.lb.wam_jp[13:13]
                                             ++ meta.lb.wam_jp[14:14] ++ meta.lb.wam_jp[15:15])
                                             >> (8w16 - meta.lb.wam_log2_m);
                            wam_slot_to_member.apply();
                        }

                        if (meta.drop_reason == DROP_NONE) {
                            if (lb_member.apply().hit) {
                                lb_member_ctr.count((bit<32>)meta.lb.group_id * LB_MAX_MEMBERS
                                                    + (bit<32>)meta.lb.member_idx);
                            }
                        }
                    }
                }
            }
        }

        if (meta.drop_reason != DROP_NONE) {
            mark_to_drop(standard_metadata);
            drop_ctr.count((bit<32>)meta.drop_reason);
        }
    }
}

#endif /* _P4FABRIC_INGRESS_P4_ */
