/* P4Info corner cases, compared with p4c's P4Info by tests/runtime/test_p4info_p4c.py:
 * @id on a table, an action, a match field and an action parameter; @name; a selector key
 * before an exact key; controller headers with @id'd metadata; a value set; a serializable
 * enum key and parameter; two controls' counters with one local name (aliases); a direct
 * counter and meter; an action profile; a digest; @defaultonly / @tableonly; a default action
 * with arguments; an action called directly from a control body; idle timeout. */
#include <core.p4>
#include <v1model.p4>

enum bit<8> Color_t { RED = 1, GREEN = 2, BLUE = 7 }

@controller_header("packet_in")
header cpu_in_t {
    bit<9> ingress_port;
    @id(7) bit<16> reason;
    bit<7> pad;
}

@controller_header("packet_out")
header cpu_out_t {
    bit<9> egress_port;
    bit<7> pad;
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

struct learn_t {
    bit<48> src;
    bit<9> port;
}

struct headers_t {
    cpu_in_t cpu_in;
    cpu_out_t cpu_out;
    ethernet_t eth;
}

struct meta_t {
    bit<16> group;
    Color_t color;
    bit<32> meter_color;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    value_set<bit<16>>(4) special_etypes;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            special_etypes: accept;
            default: accept;
        }
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(8, CounterType.packets) hits;
    direct_counter(CounterType.packets_and_bytes) acl_stats;
    direct_meter<bit<32>>(MeterType.bytes) acl_meter;
    action_profile(32) nhop_profile;
    action_selector(HashAlgorithm.crc16, 16, 8) ecmp_sel;

    action drop() { mark_to_drop(sm); }
    @id(0x777) action set_port(@id(3) bit<9> port, bit<16> tag) {
        sm.egress_spec = port;
        meta.group = tag;
    }
    action paint(Color_t c) { meta.color = c; }
    action count_it() { hits.count(0); }
    action learn() { digest<learn_t>(1, {hdr.eth.src, sm.ingress_port}); }
    action acl_permit() { acl_meter.read(meta.meter_color); }

    @name("Ing.forward")
    table fwd {
        key = {
            hdr.eth.dst: exact @name("dst_mac");
            hdr.eth.etype: ternary @id(9);
        }
        actions = { set_port; @tableonly drop; @defaultonly NoAction; }
        default_action = set_port(1, 7);
        support_timeout = true;
        size = 64;
    }
    table colors {
        key = { meta.color: exact; }
        actions = { paint; drop; }
        const default_action = drop();
    }
    table ecmp {
        key = {
            hdr.eth.src: selector;
            meta.group: exact;
        }
        actions = { set_port; }
        implementation = ecmp_sel;
    }
    table nhops {
        key = { meta.group: exact; }
        actions = { set_port; }
        implementation = nhop_profile;
    }
    table acl {
        key = { hdr.eth.etype: range; sm.ingress_port: optional; }
        actions = { acl_permit; learn; }
        counters = acl_stats;
        meters = acl_meter;
    }
    apply {
        fwd.apply();
        colors.apply();
        ecmp.apply();
        nhops.apply();
        acl.apply();
        count_it();
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(8, CounterType.bytes) hits;
    register<bit<32>>(16) last_len;
    meter(4, MeterType.packets) port_meter;
    apply {
        hits.count(0);
        last_len.write(0, sm.packet_length);
        port_meter.execute_meter(0, meta.meter_color);
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.cpu_in); pkt.emit(hdr.eth); }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
