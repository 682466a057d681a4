/* P4Info corner cases p4c has its own way with: @name on action profiles, direct meters,
 * action parameters and table keys; `type` (newtype) fields in controller headers, keys and
 * action parameters; an action only reachable after `exit`; a register nothing uses; a table
 * and an action only called from a sub-control. */
#include <core.p4>
#include <v1model.p4>

type bit<9> port_t;
type bit<16> tag_t;
typedef bit<32> addr_t;

@controller_header("packet_in")
header packet_in_t {
    port_t ingress_port;
    bit<7> pad;
}

@controller_header("packet_out")
header packet_out_t {
    tag_t tag;
}

header eth_t {
    bit<48> dst;
    bit<48> src;
    bit<16> type;
}

struct headers_t {
    packet_in_t pin;
    packet_out_t pout;
    eth_t eth;
}

struct metadata_t {
    tag_t tag;
    bit<32> colour;
    addr_t addr;
}

parser LmParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control Tagger(inout metadata_t meta) {
    action set_tag(@name("the_tag") tag_t t) {
        meta.tag = t;
    }
    table tags {
        key = { meta.addr: exact @name("address"); }
        actions = { set_tag; NoAction; }
        default_action = NoAction();
    }
    apply {
        tags.apply();
    }
}

control LmIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    @name("profile") action_profile(32w16) members;
    @name("rate_meter") direct_meter<bit<32>>(MeterType.packets) dm;
    register<bit<8>>(8) never_used;
    Tagger() tagger;

    action forward(@name("port") port_t p) {
        sm.egress_spec = (bit<9>)p;
    }
    action metered(port_t p) {
        dm.read(meta.colour);
        sm.egress_spec = (bit<9>)p;
    }
    action after_exit() {
        meta.colour = 1;
    }
    table by_member {
        key = { hdr.eth.dst: exact @name("dmac"); meta.tag: exact; }
        actions = { forward; NoAction; }
        implementation = members;
        default_action = NoAction();
    }
    table by_rate {
        key = { hdr.eth.src: ternary @name("smac"); }
        actions = { metered; NoAction; }
        meters = dm;
        default_action = NoAction();
    }
    table late {
        key = { hdr.eth.type: exact; }
        actions = { after_exit; NoAction; }
        default_action = NoAction();
    }
    apply {
        tagger.apply(meta);
        by_member.apply();
        by_rate.apply();
        if (hdr.eth.type == 0) {
            exit;
        }
        late.apply();
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }
control NoEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control NoCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control LmDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.pin);
        pkt.emit(hdr.eth);
    }
}

V1Switch(LmParser(), NoVerify(), LmIngress(), NoEgress(), NoCompute(), LmDeparser()) main;
