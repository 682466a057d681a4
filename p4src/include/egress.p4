/*
 * p4fabric -- egress: source-MAC rewrite, queue telemetry, ECN marking,
 * packet-in header for the CPU port, per-port tx counters.
 */
#ifndef _P4FABRIC_EGRESS_P4_
#define _P4FABRIC_EGRESS_P4_

control MyEgress(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {

    /* Per egress port: every packet that leaves (counted after the queue). */
    counter(PORT_COUNT, CounterType.packets_and_bytes) port_tx_ctr;

    /* Per egress port: the largest deq_qdepth (packets) seen since the
     * controller last wrote 0 to the cell.  The controller polls and clears
     * it to detect congestion (e.g. to move WaM balls away from a port). */
    register<bit<32>>(PORT_COUNT) port_qdepth_max;

    /* Per egress port: deq_qdepth of the most recent packet. */
    register<bit<32>>(PORT_COUNT) port_qdepth_last;

    /* Router source MAC of each port; a miss leaves srcAddr unchanged. */
    action set_smac(mac_addr_t smac) {
        hdr.ethernet.srcAddr = smac;
    }

    table port_smac {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = {
            set_smac;
            NoAction;
        }
        default_action = NoAction();
        size = PORT_COUNT;
    }

    /* ECN on deq_qdepth (packets), for ECT packets: CE at or above K_max; above
     * K_min, CE with probability (qdepth - K_min) / (K_max - K_min) (a RED-style
     * ramp, as htsim's UEC queues mark); never at or below K_min.
     * set_ecn_threshold(K) is the step K_min = K_max = K and draws no random
     * number.  No entry: no marking. */
    action set_ecn_threshold(bit<19> qdepth) {
        meta.ecn_threshold = (bit<32>)qdepth;
        meta.ecn_kmin = (bit<32>)qdepth;
    }

    action set_ecn_ramp(bit<19> kmin, bit<19> kmax) {
        meta.ecn_kmin = (bit<32>)kmin;
        meta.ecn_threshold = (bit<32>)kmax;
    }

    table ecn_config {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = {
            set_ecn_threshold;
            set_ecn_ramp;
            NoAction;
        }
        default_action = NoAction();
        size = PORT_COUNT;
    }

    apply {
        bit<32> qdepth = (bit<32>)standard_metadata.deq_qdepth;
        bit<32> qmax;
        port_qdepth_max.read(qmax, (bit<32>)standard_metadata.egress_port);
        if (qdepth > qmax) {
            port_qdepth_max.write((bit<32>)standard_metadata.egress_port, qdepth);
        }
        port_qdepth_last.write((bit<32>)standard_metadata.egress_port, qdepth);

        if (standard_metadata.egress_port == CPU_PORT) {
            /* ingress_port is carried from ingress to egress in v1model. */
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 7w0;
        } else if (meta.packet_out == 1w0) {
            /* A controller packet-out leaves exactly as sent: no router source
             * MAC, no CE mark (the queue registers and tx counter still see it). */
            port_smac.apply();
            if (hdr.ipv4.isValid() && hdr.ipv4.ecn != ECN_NOT_ECT) {
                if (ecn_config.apply().hit) {
                    if (qdepth >= meta.ecn_threshold) {
                        hdr.ipv4.ecn = ECN_CE;
                    } else if (qdepth > meta.ecn_kmin) {
                        /* uniform in [0, K_max - K_min): below qdepth - K_min
                         * with the ramp's probability */
                        bit<32> draw;
                        random(draw, 32w0, meta.ecn_threshold - meta.ecn_kmin - 1);
                        if (draw < qdepth - meta.ecn_kmin) {
                            hdr.ipv4.ecn = ECN_CE;
                        }
                    }
                }
            }
        }

        port_tx_ctr.count((bit<32>)standard_metadata.egress_port);
    }
}

#endif /* _P4FABRIC_EGRESS_P4_ */
