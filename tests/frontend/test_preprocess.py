"""The preprocessor: includes (relative, -I, <package>), object-like macros, conditionals,
comments, and the line map back to original file:line:col."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.frontend import P4CompileError, compile_file
from p4switch.frontend.preprocess import PACKAGE_INCLUDE_DIR, preprocess


def test_conditionals_and_defines() -> None:
    text = (
        "#define A 1\n#define B (A + 2)\n"
        "#if defined(A) && B == 3\nyes1\n#else\nno1\n#endif\n"
        "#ifdef NOPE\nno2\n#elif A\nyes2\n#endif\n"
        "#ifndef A\nno3\n#else\nyes3\n#endif\n"
        "#if 0\n#error never\n#endif\n"
        "#undef A\n#ifdef A\nno4\n#endif\n"
    )
    pp = preprocess(text, "t.p4")
    words = pp.text.split()
    assert words == ["yes1", "yes2", "yes3"]


def test_user_defines_override_defaults() -> None:
    text = "#ifndef N\n#define N 4\n#endif\nbit<N> x;\n"
    assert "bit<4> x;" in preprocess(text, "t.p4").text
    assert "bit<9> x;" in preprocess(text, "t.p4", defines={"N": "9"}).text


def test_macro_expansion_keeps_original_columns() -> None:
    pp = preprocess("#define LONG_NAME 1\nx = LONG_NAME + y;\n", "t.p4")
    assert pp.text.splitlines()[0] == "x = 1 + y;"
    # 'y' is at column 9 in the output and column 17 in the source
    loc = pp.locate(1, 9)
    assert (loc.file, loc.line, loc.col) == ("t.p4", 2, 17)


def test_comments_are_removed_but_lines_kept() -> None:
    pp = preprocess('a /* one\ntwo */ b // c\n"s // not a comment"\n', "t.p4")
    assert pp.text.split("\n")[:3] == ["a       ", "       b     ", '"s // not a comment"']
    assert pp.locate(2, 8).line == 2


def test_include_relative_to_including_file(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "a.p4").write_text('#include "b.p4"\nconst bit<8> A = B;\n')
    (sub / "b.p4").write_text("const bit<8> B = 3;\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "sub/a.p4"\nline_of_main\n')
    pp = preprocess(main.read_text(), str(main))
    assert pp.text.split("\n")[:3] == ["const bit<8> B = 3;", "const bit<8> A = B;",
                                       "line_of_main"]
    assert pp.locate(1, 1).file == str(sub / "b.p4")
    assert pp.locate(2, 1).file == str(sub / "a.p4")
    assert pp.locate(3, 1).file == str(main) and pp.locate(3, 1).line == 2
    assert set(pp.sources) == {str(main), str(sub / "a.p4"), str(sub / "b.p4")}


def test_include_dirs_and_package_includes(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "lib.p4").write_text("lib_line\n")
    pp = preprocess("#include <lib.p4>\n#include <core.p4>\n", "t.p4", include_dirs=[inc])
    assert "lib_line" in pp.text
    assert str(PACKAGE_INCLUDE_DIR / "core.p4") in pp.sources
    assert "NoAction" in pp.text


def test_include_guard_prevents_double_inclusion() -> None:
    pp = preprocess("#include <v1model.p4>\n#include <v1model.p4>\n#include <core.p4>\n", "t.p4")
    assert pp.text.count("struct standard_metadata_t") == 1
    assert pp.text.count("action NoAction") == 1


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ('#include "missing.p4"\n', "cannot find include file 'missing.p4'", 1),
        ("x\n#if 1\nx\n", "unterminated #if", 2),
        ("\n#endif\n", "#endif without #if", 2),
        ("#error stop here\n", "#error stop here", 1),
        ("#frobnicate\n", "unknown preprocessor directive '#frobnicate'", 1),
    ],
)
def test_preprocessor_errors(text: str, message: str, line: int) -> None:
    with pytest.raises(P4CompileError) as info:
        preprocess(text, "t.p4")
    assert message in info.value.message
    assert info.value.loc.line == line and info.value.loc.file == "t.p4"


def test_compile_file_with_defines_and_include_dirs(tmp_path: Path) -> None:
    from fe_helpers import PROGRAMS

    prog = compile_file(PROGRAMS / "fabric_lab.p4", defines={"FLOWLET_SLOTS": "64"})
    regs = prog.controls["LabIngress"].instances
    assert regs["flowlet_last_seen"].args[0].value == 64
    prog = compile_file(PROGRAMS / "fabric_lab.p4")
    assert prog.controls["LabIngress"].instances["flowlet_last_seen"].args[0].value == 1024


def test_function_like_macros() -> None:
    text = ("#define SQ(x) ((x) * (x))\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n"
            "#define K 3\n#define NOARG() 42\n#define CALL(f, v) f(v)\n"
            "#if SQ(K) == 9 && defined(MAX)\n"
            'SQ(K) MAX(SQ(2), K + 1) NOARG() CALL(SQ, 5) "SQ(1)" SQ MAX(f(1, 2), {3, 4})\n'
            "#endif\n#undef SQ\nSQ(1)\n")
    lines = preprocess(text, "t.p4").text.splitlines()
    assert lines == [
        '((3) * (3)) ((((2) * (2))) > (3 + 1) ? (((2) * (2))) : (3 + 1)) 42 ((5) * (5)) "SQ(1)" '
        "SQ ((f(1, 2)) > ({3, 4}) ? (f(1, 2)) : ({3, 4}))",
        "SQ(1)"]


def test_function_like_macro_errors_are_located() -> None:
    with pytest.raises(P4CompileError) as info:
        preprocess("#define F(a, b) a + b\nx = F(1);\n", "t.p4")
    assert str(info.value).startswith("t.p4:2:5: error: macro 'F' expects 2 arguments, got 1")
    with pytest.raises(P4CompileError) as info:
        preprocess("#define F(a) a\nx = F(1,\n 2);\n", "t.p4")
    assert "t.p4:2:5: error: unterminated call of macro 'F'" in str(info.value)
    with pytest.raises(P4CompileError) as info:
        preprocess("#define F(a, 1) a\n", "t.p4")
    assert "t.p4:1:1: error: #define: '1' is not a parameter name" in str(info.value)
