/* Shared header types of the STF test programs (included relative to each program). */
#ifndef STF_HEADERS_P4
#define STF_HEADERS_P4

typedef bit<48> mac_addr_t;
typedef bit<32> ip4_addr_t;
typedef bit<9>  port_t;

const bit<16> TYPE_IPV4 = 0x0800;
const bit<8>  PROTO_TCP = 6;
const bit<8>  PROTO_UDP = 17;

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

header ipv4_t {
    bit<4>     version;
    bit<4>     ihl;
    bit<8>     diffserv;
    bit<16>    totalLen;
    bit<16>    identification;
    bit<3>     flags;
    bit<13>    fragOffset;
    bit<8>     ttl;
    bit<8>     protocol;
    bit<16>    hdrChecksum;
    ip4_addr_t srcAddr;
    ip4_addr_t dstAddr;
}

/* The first four bytes of TCP and UDP: enough for a 5-tuple. */
header l4_ports_t {
    bit<16> srcPort;
    bit<16> dstPort;
}

#endif
