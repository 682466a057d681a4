/* Header and metadata types of fabric_lab.p4 (included with a path relative to it). */
#ifndef LAB_HEADERS_P4
#define LAB_HEADERS_P4

#define MAX_HOPS 4

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> TYPE_SRCROUTE = 0x1234;
const bit<8> IP_PROTO_TCP = 6;
const bit<8> IP_PROTO_UDP = 17;

typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;
typedef bit<32> ip4Addr_t;

@controller_header("packet_in")
header packet_in_t {
    bit<16> ingress_port;
}

@controller_header("packet_out")
header packet_out_t {
    bit<16> egress_port;
}

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

header srcroute_t {
    bit<1>  bos;
    bit<15> port;
}

header ipv4_t {
    bit<4>    version;
    bit<4>    ihl;
    bit<8>    diffserv;
    bit<16>   totalLen;
    bit<16>   identification;
    bit<3>    flags;
    bit<13>   fragOffset;
    bit<8>    ttl;
    bit<8>    protocol;
    bit<16>   hdrChecksum;
    ip4Addr_t srcAddr;
    ip4Addr_t dstAddr;
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
    bit<16> length_;
    bit<16> checksum;
}

struct headers_t {
    packet_in_t           packet_in;
    packet_out_t          packet_out;
    ethernet_t            ethernet;
    srcroute_t[MAX_HOPS]  srcroutes;
    ipv4_t                ipv4;
    tcp_t                 tcp;
    udp_t                 udp;
}

struct metadata_t {
    bit<14> ecmp_select;
    @field_list(1)
    bit<16> flowlet_id;
    bit<16> l4_src;
    bit<16> l4_dst;
}

#endif
