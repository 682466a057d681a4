/* Constructs whose P4Info p4c writes in a way of its own (see test_p4info_parity.py):
 * @p4runtime_translation types, a packet_out header holding a struct, key names of
 * expressions, a renamed field and a slice, a table applied inside another's key, an action
 * profile named on its table property, selector size annotations, a top-level direct meter,
 * an action called only in a branch that never runs, and a sub-control's globally named
 * action. */
#include <core.p4>
#include <v1model.p4>

@p4runtime_translation("example.org/PortNum", 32)
type bit<9> PortNum_t;
@p4runtime_translation("example.org/Name", string) @custom_note
type bit<16> Name_t;
typedef PortNum_t PortAlias_t;

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct inner_t { bit<7> pad; PortNum_t port; }
@controller_header("packet_out")
header out_t { inner_t meta; bit<8> reason; }
struct headers_t { out_t po; eth_t eth; }
struct flags_t { @name("renamed") bit<8> f; }
struct meta_t { flags_t flags; bit<16> hash; Name_t name; bit<32> color; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}

direct_meter<bit<32>>(MeterType.packets) top_meter;

control Sub(inout headers_t hdr) {
    @name(".Sub.mark") action mark() { hdr.eth.type = 1; }
    table sub_t { key = { hdr.eth.dst : exact; } actions = { mark; } }
    apply { sub_t.apply(); }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    action fwd(PortAlias_t port) { sm.egress_spec = (bit<9>)port; }
    action never() { hdr.eth.type = 2; }
    action metered() { top_meter.read(meta.color); }
    table inner_tbl { key = { hdr.eth.type : exact; } actions = { NoAction; } }
    table keys {
        key = {
            hdr.eth.dst & 0x0000ffffffff : exact;
            hdr.eth.src[15:8] : exact;
            meta.flags.f : exact;
            meta.name : exact;
            inner_tbl.apply().hit : exact @name("inner_hit");
        }
        actions = { metered; NoAction; }
        meters = top_meter;
    }
    table prof_t {
        key = { hdr.eth.type : exact; }
        actions = { fwd; }
        @name("shared_profile") @max_group_size(8) implementation = action_profile(32w64);
    }
    @max_group_size(16) @selector_size_semantics("sum_of_members") @max_member_weight(100)
    action_selector(HashAlgorithm.crc16, 32w128, 32w14) sel;
    table sel_t {
        key = { hdr.eth.type : exact; meta.hash : selector; }
        actions = { fwd; }
        implementation = sel;
    }
    apply {
        if (true) {
            keys.apply();
        } else {
            never();
        }
        prof_t.apply();
        sel_t.apply();
        sub.apply(hdr);
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
