"""The preprocessor's ``#`` (stringify), ``##`` (token pasting) and variadic macros
(``...``/``__VA_ARGS__``), as cpp -- which p4c runs -- expands them; misuse is a located
error. Where ``cpp`` is on PATH the same text is also expanded by it and must agree."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from p4switch.frontend import P4CompileError
from p4switch.frontend.preprocess import preprocess

MACROS = r"""#define STR(x) #x
#define XSTR(x) STR(x)
#define CAT(a, b) a ## b
#define T3(a, b, c) a ## b ## c
#define N 4
#define LOG(fmt, ...) log_msg(fmt, {__VA_ARGS__})
#define V(...) f(__VA_ARGS__)
#define OBJ a ## 1
#define TBL(n) table n##_t
#define F STR
#define SQ(x) ((x)*(x))
"""
USES = r"""STR(  a  +   "b\n" ) XSTR(N) STR(N) CAT(x, N) CAT(N, x) CAT(my, _tbl) CAT(, y) CAT(z,)
LOG("v={}", hdr.a, hdr.b) LOG("x") V() V(1, (2, 3), 4) OBJ TBL(ipv4) CAT(1, 0) CAT(<, =)
T3(a, b, c) T3(, , c) STR() STR(f(1, 2)) XSTR(CAT(N, N))
CAT(CA, T)(p, q) CAT(ST, R)(hi) F(3) F (4) + F x CAT(S, Q)(CAT(S,Q)(2)) y
"""
# what cpp -P writes for USES (gcc 12), one line per line
EXPECTED = [
    r'"a + \"b\\n\"" "4" "N" xN Nx my_tbl y z',
    'log_msg("v={}", {hdr.a, hdr.b}) log_msg("x", {}) f() f(1, (2, 3), 4) a1 table ipv4_t 10 <=',
    'abc c "" "f(1, 2)" "NN"',
    'CAT(p, q) "hi" "3" "4" + STR x ((((2)*(2)))*(((2)*(2)))) y',
]


def _expand(text: str) -> list[str]:
    return [ln for ln in preprocess(text, "t.p4").text.splitlines() if ln.strip()]


def test_stringify_paste_and_variadic_expand_as_cpp_does():
    assert _expand(MACROS + USES) == EXPECTED


@pytest.mark.skipif(shutil.which("cpp") is None, reason="cpp not on PATH")
def test_cpp_agrees():
    r = subprocess.run(["cpp", "-P"], input=MACROS + USES, capture_output=True, text=True,
                       timeout=60, check=True)
    assert [ln for ln in r.stdout.splitlines() if ln.strip()] == EXPECTED


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("#define C(a, b) a ## b\nx = C(&&, &);\n", (2, 5),
         "pasting '&&' and '&' does not give a valid token"),
        ("#define C(a) ## a\n", (1, 14), "'##' cannot be at either end of a macro's replacement"),
        ("#define O x ##\n", (1, 13), "'##' cannot be at either end of a macro's replacement"),
        ("#define S(a) #b\n", (1, 14), "'#' must be followed by a parameter of the macro"),
        ("#define O __VA_ARGS__\n", (1, 11), "__VA_ARGS__ can only be used in a variadic macro"),
        ("#define F(a) a __VA_ARGS__\n", (1, 16),
         "__VA_ARGS__ can only be used in a variadic macro"),
        ("#define F(..., a) a\n", (1, 11), "#define: '...' must be the last parameter"),
        ("#define F(a...) a\n", (1, 11),
         "named variadic parameter 'a...' is not supported by p4switch"),
        ("#define F(a, b, ...) a\nx = F(1);\n", (2, 5),
         "macro 'F' expects at least 2 arguments, got 1"),
        ("#define F(a, a) a\n", (1, 1), "#define: 'F' has a duplicate parameter"),
    ],
)
def test_misuse_is_a_located_error(text: str, where: tuple[int, int], message: str):
    with pytest.raises(P4CompileError) as info:
        preprocess(text, "t.p4")
    assert str(info.value).startswith(f"t.p4:{where[0]}:{where[1]}: error: {message}\n")
