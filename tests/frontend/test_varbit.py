"""varbit<W> and extract(hdr, bits) misuse: located errors (spec 7.1.6, 8.9, 13.8.2); the
compile-time size methods; a varbit header whose fixed part is not whole bytes is refused when
the pipeline is built."""

from __future__ import annotations

import pytest
from fe_helpers import compile_error, line_of, skeleton_program

from p4switch import ir
from p4switch.frontend import P4CompileError, compile_source
from p4switch.pipeline import Pipeline

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
header fix_t { bit<8> len; }
header opt_t { bit<8> kind; varbit<32> data; }
header opt2_t { varbit<16> data; }
struct headers { fix_t fix; opt_t o; opt_t p; opt2_t q; }
struct metadata { bit<8> m8; }
"""


def program(parser_body: str = "pkt.extract(hdr.o, (bit<32>)hdr.fix.len * 8);",
            ingress: str = "apply { }", prelude: str = "") -> str:
    return skeleton_program(PRELUDE + prelude, "pkt.extract(hdr.fix);\n        " + parser_body, ingress)


@pytest.mark.parametrize(
    ("text_args", "needle", "message"),
    [
        # varbit locals, struct fields and typedefs are allowed (tests/stf varbit_values);
        # what reaches the control plane is not
        ({"ingress": "action a(varbit<8> v) { } apply { a(hdr.o.data); }"}, "varbit<8> v",
         "action data cannot be a varbit"),
        ({"ingress": "register<varbit<8>>(4) r; apply { }"}, "register<varbit<8>>",
         "register of a varbit type is not supported by p4switch"),
        ({"ingress": "table t { key = { hdr.o.data: exact; } actions = { NoAction; } } "
                     "apply { t.apply(); }"}, "hdr.o.data: exact", "table key type varbit"),
        ({"prelude": "header two_t { varbit<8> a; varbit<8> b; }\n"}, "varbit<8> b",
         "header two_t has more than one varbit field"),
        ({"prelude": "header zero_t { varbit<0> a; }\n"}, "varbit<0>",
         "varbit<W> needs a positive width"),
        ({"parser_body": "pkt.extract(hdr.o);"}, "pkt.extract(hdr.o);",
         "header opt_t has a varbit field: extract it with extract(hdr, bits)"),
        ({"parser_body": "pkt.extract(hdr.fix, 8);"}, "pkt.extract(hdr.fix, 8);",
         "extract(hdr, bits) needs a header with a varbit field; fix_t has none "
         "(use extract(hdr))"),
        ({"parser_body": "pkt.extract(hdr.o, true);"}, "pkt.extract(hdr.o, true);",
         "extract size: expected bit<32>, got bool"),
        ({"ingress": "apply { hdr.o.data = 8w1; }"}, "hdr.o.data = 8w1",
         "expected varbit<32>, got bit<8>"),
        ({"ingress": "apply { hdr.o.data = hdr.q.data; }"}, "hdr.o.data = hdr.q.data",
         "expected varbit<32>, got varbit<16>"),
        ({"ingress": "apply { if (hdr.o.data == hdr.q.data) { } }"}, "hdr.o.data == hdr.q.data",
         "varbit"),
        ({"ingress": "apply { meta.m8 = hdr.o.data + 1; }"}, "hdr.o.data + 1", "varbit<32>"),
        ({"ingress": "apply { digest<opt_t>(1, hdr.o); }"},
         "digest<opt_t>", "a varbit field in the arguments of digest is not supported by "
         "p4switch"),
    ],
)
def test_varbit_misuse_is_a_located_error(text_args: dict[str, str], needle: str,
                                          message: str) -> None:
    text = program(**text_args)
    err = compile_error(text)
    assert message in err.message
    assert err.loc is not None and err.loc.line == line_of(text, needle), str(err)


def test_size_methods_are_compile_time_integers() -> None:
    prog = compile_source(program(ingress="""apply {
        meta.m8 = (bit<8>)hdr.o.minSizeInBits();
        meta.m8 = (bit<8>)hdr.o.minSizeInBytes();
        meta.m8 = (bit<8>)hdr.o.maxSizeInBits();
        meta.m8 = (bit<8>)hdr.o.maxSizeInBytes();
        meta.m8 = (bit<8>)hdr.fix.maxSizeInBits();
    }"""), "test.p4")
    body = prog.controls["I"].body.stmts
    values = [s.rhs.value for s in body if isinstance(s, ir.Assign)]
    assert values == [8, 1, 40, 5, 8]


def test_varbit_header_without_whole_bytes_is_refused_by_the_pipeline() -> None:
    text = program(prelude="header odd_t { bit<4> k; varbit<16> d; }\n"
                           "struct more_t { odd_t odd; }\n",
                   parser_body="pkt.extract(hdr.o, 8);")
    text = text.replace("struct headers { fix_t fix;", "struct headers { fix_t fix; odd_t odd;")
    text = text.replace("header odd_t { bit<4> k; varbit<16> d; }\n", "")
    text = text.replace("struct headers", "header odd_t { bit<4> k; varbit<16> d; }\n"
                                          "struct headers", 1)
    prog = compile_source(text, "test.p4")
    with pytest.raises(P4CompileError, match="odd_t has 4 bits besides its varbit field"):
        Pipeline(prog)
