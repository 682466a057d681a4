"""Helpers for front-end tests: compile small programs built around a common v1model skeleton."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch import ir
from p4switch.frontend import P4CompileError, compile_source

PROGRAMS = Path(__file__).parent / "programs"

HEADERS = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct headers { ethernet_t ethernet; ipv4_t ipv4; }
struct metadata { bit<16> m16; bit<8> m8; bit<32> m32; int<8> s8; bool flag; }
"""

PARSER = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
"""

REST = """
control VC(inout headers hdr, inout metadata meta) { apply { } }
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def ingress_program(body: str, prelude: str = "") -> str:
    """A whole program whose ingress control ``I`` has ``body`` (locals + apply block)."""
    return (HEADERS + prelude + PARSER
            + "control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {\n"
            + body + "\n}\n" + REST)


def skeleton_program(decls: str, parser_body: str, ingress: str) -> str:
    """``decls`` (includes, headers, ``headers``/``metadata`` structs), a parser whose start
    state runs ``parser_body`` and accepts, ingress ``I`` with ``ingress`` (locals + apply), and
    empty other controls around a deparser that emits all of ``hdr``."""
    return (decls
            + "parser P(packet_in pkt, out headers hdr, inout metadata meta,\n"
            + "         inout standard_metadata_t sm) {\n"
            + "    state start {\n        " + parser_body + "\n        transition accept;\n"
            + "    }\n}\n"
            + "control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {\n"
            + ingress + "\n}\n"
            + "control VC(inout headers hdr, inout metadata meta) { apply { } }\n"
            + "control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) "
            + "{ apply { } }\n"
            + "control CC(inout headers hdr, inout metadata meta) { apply { } }\n"
            + "control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }\n"
            + "V1Switch(P(), VC(), I(), E(), CC(), D()) main;\n")


def compile_ingress(body: str, prelude: str = "") -> ir.Program:
    return compile_source(ingress_program(body, prelude), "test.p4")


def compile_error(text: str, filename: str = "test.p4") -> P4CompileError:
    with pytest.raises(P4CompileError) as info:
        compile_source(text, filename)
    return info.value


def line_of(text: str, needle: str) -> int:
    """1-based line number of the first line containing ``needle``."""
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in program")
