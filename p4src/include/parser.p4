/*
 * p4fabric -- parser and deparser.
 *
 * In v1model a parser error does NOT drop the packet by itself: ingress runs
 * with standard_metadata.parser_error set, and MyIngress drops and counts it
 * (DROP_PARSER_ERROR).  Headers extracted before the error stay valid.
 */
#ifndef _P4FABRIC_PARSER_P4_
#define _P4FABRIC_PARSER_P4_

error {
    IPv4IncorrectVersion,
    IPv4OptionsNotSupported
}

parser MyParser(packet_in packet,
                out headers_t hdr,
                inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {

    state start {
        /* Only packets injected by the controller carry a packet_out header. */
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default:  parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            default:        accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4w4, error.IPv4IncorrectVersion);
        verify(hdr.ipv4.ihl == 4w5, error.IPv4OptionsNotSupported);
        /* Non-first fragments carry no L4 header: hash them on the 3-tuple. */
        transition select(hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (13w0, IP_PROTO_TCP): parse_tcp;
            (13w0, IP_PROTO_UDP): parse_udp;
            default:              accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
}

control MyDeparser(packet_out packet, in headers_t hdr) {
    apply {
        /* packet_out is never emitted: ingress invalidates it.  Invalid
         * headers are skipped by emit(). */
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
    }
}

#endif /* _P4FABRIC_PARSER_P4_ */
