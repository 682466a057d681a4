/*
 * p4fabric -- IPv4 header checksum (ones'-complement, HashAlgorithm.csum16).
 *
 * Verification sets standard_metadata.checksum_error; MyIngress drops and
 * counts (DROP_BAD_CHECKSUM).  The update runs after egress, so it covers
 * both the ingress TTL decrement and the egress ECN mark; it skips controller
 * packet-outs, which leave unchanged.  TCP/UDP checksums
 * need no update: TTL and ECN are not in the L4 pseudo-header.
 */
#ifndef _P4FABRIC_CHECKSUM_P4_
#define _P4FABRIC_CHECKSUM_P4_

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.totalLen, hdr.ipv4.identification,
              hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        /* Not for a packet-out: it leaves exactly as the controller sent it. */
        update_checksum(hdr.ipv4.isValid() && meta.packet_out == 1w0,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.totalLen, hdr.ipv4.identification,
              hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

#endif /* _P4FABRIC_CHECKSUM_P4_ */
