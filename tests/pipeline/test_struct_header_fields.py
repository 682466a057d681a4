"""A struct-typed header field belongs to its header: in a hash input the fields of an invalid
header's struct are skipped with the rest of the header (DESIGN: a field of an invalid header
is skipped, not zeroed), and included when the header is valid."""

from __future__ import annotations

from crc_reference import crc16_arc

from p4switch.frontend import compile_source
from p4switch.pipeline import Pipeline

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
struct pair_t { bit<8> lo; bit<8> hi; }
header sel_t { bit<8> has_t; }
header tagged_t { bit<8> tag; pair_t p; }
header out_t { bit<16> h; }
struct headers_t { sel_t sel; tagged_t t; out_t o; }
struct metadata_t { }
parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.sel);
        transition select(hdr.sel.has_t) { 1: parse_t; default: accept; }
    }
    state parse_t { pkt.extract(hdr.t); transition accept; }
}
control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.o.setValid();
        hash(hdr.o.h, HashAlgorithm.crc16, 16w0, { hdr.sel.has_t, hdr.t }, 17w65536);
    }
}
control N(inout headers_t hdr, inout metadata_t meta) { apply { } }
control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.sel); pkt.emit(hdr.t); pkt.emit(hdr.o); }
}
V1Switch(P(), N(), I(), E(), N(), D()) main;
"""


def test_hash_input_skips_the_struct_fields_of_an_invalid_header() -> None:
    pipe = Pipeline(compile_source(PROGRAM, "t.p4"))
    [out] = pipe.process(bytes([2]), 0, 0).outputs  # t not extracted: only has_t is hashed
    assert out.data[1:3] == crc16_arc(bytes([2])).to_bytes(2, "big")
    assert crc16_arc(bytes([2])) != crc16_arc(bytes([2, 0, 0]))  # zeros would show
    [out] = pipe.process(bytes([1, 7, 8, 9]), 0, 0).outputs  # t valid: has_t, tag, p.lo, p.hi
    assert out.data[4:6] == crc16_arc(bytes([1, 7, 8, 9])).to_bytes(2, "big")
