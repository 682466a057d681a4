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

    /* ECN: ECT packets leaving a port whose queue depth (deq_qdepth, in
     * packets) is >= the threshold are marked CE.  No entry: no marking. */
    action set_ecn_threshold(bit<19> qdepth) {
        meta.ecn_threshold = (bit<32>)qdepth;
    }

    table ecn_config {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = {
            set_ecn_threshold;
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
                    }
                }
            }
        }

        port_tx_ctr.count((bit<32>)standard_metadata.egress_port);
    }
}

#endif /* _P4FABRIC_EGRESS_P4_ */
