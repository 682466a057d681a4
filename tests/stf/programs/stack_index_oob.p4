/* A run-time header-stack index out of range (P4_16 spec 8.27) does not drop the packet: a
 * read gives an unspecified value (here as in BMv2: an invalid header, fields 0), a write
 * has no effect. Also a header stack passed to an action as an 'in' argument is a copy. */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> idx;
    bit<8> val;
    bit<8> read_v;
    bit<8> read_valid;
}

header item_t {
    bit<8> v;
}

struct headers_t {
    ctl_t     ctl;
    item_t[2] items;
}

struct metadata_t {
}

parser OobParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.items.next);
        pkt.extract(hdr.items.next);
        transition accept;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action read_copy(in item_t[2] st) {
        hdr.items[0].v = 0x99;
        hdr.ctl.val = st[0].v;   // the value at the call
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.ctl.idx == 0xff) {
            read_copy(hdr.items);
        } else {
            hdr.items[hdr.ctl.idx].v = hdr.ctl.val;
            hdr.ctl.read_v = hdr.items[hdr.ctl.idx].v;
            hdr.ctl.read_valid = hdr.items[hdr.ctl.idx].isValid() ? 8w1 : 8w0;
        }
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control OobDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.items);
    }
}

V1Switch(OobParser(), NoVerify(), MyIngress(), NoEgress(), NoCompute(), OobDeparser()) main;
