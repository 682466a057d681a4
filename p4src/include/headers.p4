/*
 * p4fabric -- header and metadata types.
 */
#ifndef _P4FABRIC_HEADERS_P4_
#define _P4FABRIC_HEADERS_P4_

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<9>  port_t;

/* Packet-in: prepended by the egress pipeline to packets sent to CPU_PORT.
 * P4Runtime exposes its fields as PacketIn metadata (ids 1, 2 in order). */
@controller_header("packet_in")
header packet_in_t {
    port_t  ingress_port;
    bit<7>  _pad;
}

/* Packet-out: the controller prepends it to packets it injects on CPU_PORT;
 * the packet leaves unchanged (header stripped) on egress_port. */
@controller_header("packet_out")
header packet_out_t {
    port_t  egress_port;
    bit<7>  _pad;
}

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

/* IPv4 without options (the parser rejects ihl != 5).  The DS field is split
 * into DSCP and ECN so egress can mark congestion. */
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

struct headers_t {
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   ethernet;
    ipv4_t       ipv4;
    tcp_t        tcp;
    udp_t        udp;
}

/* Load-balancing state of one packet.  Filled by MyIngress.lb_group (the
 * group's parameters), then by the scheme's selection logic (member_idx),
 * then by MyIngress.lb_member (port + MAC). */
struct lb_meta_t {
    bit<16> group_id;       /* from ipv4_lpm set_lb_group()                */
    bit<16> dst_id;         /* from ipv4_lpm set_lb_group(): rotation slot  */
    bit<8>  scheme;         /* SCHEME_* (informational)                     */
    bit<16> n_members;      /* members 0 .. n_members-1 (not WaM)           */
    bit<16> seed;           /* ECMP/flowlet: hashed in; [1:0] = variant     */
    bit<48> flowlet_timeout;/* us; gap that starts a new flowlet            */
    bit<8>  wam_log2_m;     /* WaM: l, m = 2^l slots                        */
    bit<16> wam_a;          /* WaM: shuffle offset a                        */
    bit<16> wam_b;          /* WaM: shuffle multiplier b (odd)              */
    bit<16> wam_j;          /* WaM: counter value used by this packet       */
    bit<16> wam_jp;         /* WaM: (a + b*j) mod m                         */
    bit<16> wam_slot;       /* WaM: bit-reverse_l(wam_jp)                   */
    bit<32> flow_slot;      /* flowlet register index                       */
    bit<48> flowlet_last;   /* flowlet: last-seen timestamp read back       */
    bit<16> flowlet_id;     /* flowlet: id read back (and maybe bumped)     */
    bit<16> member_idx;     /* the chosen member                            */
}

struct metadata_t {
    lb_meta_t lb;
    bit<16>   l4_src;       /* TCP/UDP source port, 0 if no L4 header       */
    bit<16>   l4_dst;       /* TCP/UDP destination port, 0 if none          */
    bit<8>    drop_reason;  /* DROP_*; non-zero => dropped at ingress end   */
    bit<32>   ecn_threshold;/* egress: CE-mark when deq_qdepth >= this      */
    bit<32>   ecn_kmin;     /* egress: the ramp's low end (= threshold: step) */
    bit<1>    packet_out;   /* controller packet-out: egress and the checksum
                             * update leave it unchanged (v1model carries user
                             * metadata from ingress to egress)             */
}

#endif /* _P4FABRIC_HEADERS_P4_ */
