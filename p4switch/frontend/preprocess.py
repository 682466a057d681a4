"""A C-style preprocessor for P4 sources, with a line map back to the original files.

P4 programs rely on a small part of the C preprocessor: ``#include "x"`` / ``#include <x>``,
object-like and function-like ``#define`` (``#define MAX(a, b) ((a) > (b) ? (a) : (b))``;
arguments are macro-expanded, then substituted, then the result is rescanned; a call's
arguments must be on one line), ``#x`` (the argument's text as a string literal), ``a ## b``
(token pasting, of the unexpanded arguments), variadic macros (``...`` and ``__VA_ARGS__``),
``#undef``,
``#if/#ifdef/#ifndef/#elif/#else/#endif``, ``#error`` and comments. We implement exactly that, and remember for every output line which file and line it
came from (and how macro expansion moved columns), so every later error can name the original
``file:line:col``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from p4switch import ir
from p4switch.frontend.errors import P4CompileError, unsupported

#: Where ``#include <core.p4>`` and ``#include <v1model.p4>`` are found.
PACKAGE_INCLUDE_DIR = Path(__file__).resolve().parent.parent / "include"

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_INCLUDE_DEPTH = 64


@dataclass
class LineOrigin:
    """Where one output line came from. ``segments`` maps output columns (0-based) to original
    columns: (out_start, orig_start, shifts) where ``shifts`` False means the whole segment (a
    macro expansion) maps to ``orig_start``. None means identity."""

    file: str
    line: int
    segments: list[tuple[int, int, bool]] | None = None

    def orig_col(self, col0: int) -> int:
        if not self.segments:
            return col0
        chosen = self.segments[0]
        for seg in self.segments:
            if seg[0] <= col0:
                chosen = seg
            else:
                break
        out_start, orig_start, shifts = chosen
        return orig_start + (col0 - out_start) if shifts else orig_start


@dataclass
class Preprocessed:
    """The preprocessed text plus everything needed to point back at the original sources."""

    text: str
    origins: list[LineOrigin]
    sources: dict[str, str] = field(default_factory=dict)
    main_file: str = ""

    def locate(self, line: int, col: int) -> ir.SourceLoc:
        """Original location of 1-based (line, col) in ``text``."""
        if not self.origins:
            return ir.SourceLoc(self.main_file, line, col)
        idx = min(max(line - 1, 0), len(self.origins) - 1)
        origin = self.origins[idx]
        return ir.SourceLoc(origin.file, origin.line, origin.orig_col(max(col - 1, 0)) + 1)

    def source_line(self, loc: ir.SourceLoc) -> str | None:
        text = self.sources.get(loc.file)
        if text is None:
            return None
        lines = text.splitlines()
        if 1 <= loc.line <= len(lines):
            return lines[loc.line - 1]
        return None

    def error(self, loc: ir.SourceLoc, message: str) -> P4CompileError:
        return P4CompileError(loc, message, self.source_line(loc))


def strip_comments(text: str) -> str:
    """Replace comments by spaces (keeping newlines, so lines and columns do not move)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(text[i:j])
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class _Preprocessor:
    def __init__(self, include_dirs: Sequence[Path], defines: Mapping[str, str] | None):
        self.include_dirs = [Path(d) for d in include_dirs]
        self.macros: dict[str, str] = dict(defines or {})
        self.fmacros: dict[str, _FunctionMacro] = {}
        self.out_lines: list[str] = []
        self.origins: list[LineOrigin] = []
        self.sources: dict[str, str] = {}
        self.pragma_once: set[str] = set()

    # errors -------------------------------------------------------------------------------
    def _error(self, file: str, line: int, col: int, message: str) -> P4CompileError:
        text = self.sources.get(file, "")
        lines = text.splitlines()
        src = lines[line - 1] if 1 <= line <= len(lines) else None
        return P4CompileError(ir.SourceLoc(file, line, col), message, src)

    # files --------------------------------------------------------------------------------
    def run_file(self, name: str, text: str, depth: int = 0) -> None:
        if depth > _MAX_INCLUDE_DEPTH:
            raise self._error(name, 1, 1, "#include nested too deeply (include cycle?)")
        self.sources.setdefault(name, text)
        raw_lines = strip_comments(text).split("\n")
        if raw_lines and raw_lines[-1] == "":
            raw_lines.pop()  # the text after the final newline is not a line
        # (active, some branch taken, else seen, line, column) per open conditional
        cond: list[list] = []
        i = 0
        while i < len(raw_lines):
            lineno = i + 1
            line = raw_lines[i]
            while line.endswith("\\") and i + 1 < len(raw_lines):
                i += 1
                line = line[:-1] + " " + raw_lines[i]
            i += 1
            active = all(c[0] for c in cond)
            stripped = line.lstrip()
            if stripped.startswith("#"):
                col = len(line) - len(stripped) + 1
                self._directive(name, lineno, col, stripped[1:].strip(), cond, active, depth,
                                line)
                continue
            if not active:
                continue
            try:
                expanded, segments = self._expand_line(line)
            except _MacroError as e:
                col = LineOrigin(name, lineno, None).orig_col(e.col) + 1
                raise self._error(name, lineno, col, str(e)) from None
            self.out_lines.append(expanded)
            self.origins.append(LineOrigin(name, lineno, segments))
        if cond:
            raise self._error(name, cond[-1][3], cond[-1][4], "unterminated #if/#ifdef/#ifndef")

    def _directive(
        self, file: str, line: int, col: int, body: str, cond: list[list], active: bool,
        depth: int, text: str = "",
    ) -> None:
        m = re.match(r"([A-Za-z_]+)\s*(.*)$", body)
        if not m:
            if body == "":
                return  # a lone '#' is a null directive
            raise self._error(file, line, col, f"invalid preprocessor directive '#{body}'")
        word, rest = m.group(1), m.group(2).strip()
        if word in ("if", "ifdef", "ifndef"):
            if not active:
                cond.append([False, True, False, line, col])
                return
            if word == "if":
                value = self._eval_if(file, line, col, rest)
            else:
                name = rest.split()[0] if rest.split() else ""
                if not name:
                    raise self._error(file, line, col, f"#{word} needs a macro name")
                value = (name in self.macros or name in self.fmacros) == (word == "ifdef")
            cond.append([value, value, False, line, col])
            return
        if word in ("elif", "else", "endif"):
            if not cond:
                raise self._error(file, line, col, f"#{word} without #if")
            top = cond[-1]
            parent_active = all(c[0] for c in cond[:-1])
            if word == "endif":
                cond.pop()
            elif word == "else":
                if top[2]:
                    raise self._error(file, line, col, "#else after #else")
                top[2] = True
                top[0] = parent_active and not top[1]
                top[1] = True
            else:
                if top[2]:
                    raise self._error(file, line, col, "#elif after #else")
                if parent_active and not top[1]:
                    top[0] = self._eval_if(file, line, col, rest)
                    top[1] = top[0]
                else:
                    top[0] = False
            return
        if not active:
            return
        if word == "include":
            self._include(file, line, col, rest, depth)
        elif word == "define":
            self._define(file, line, col, rest, text)
        elif word == "undef":
            self.macros.pop(rest.split()[0] if rest.split() else "", None)
            self.fmacros.pop(rest.split()[0] if rest.split() else "", None)
        elif word == "error":
            raise self._error(file, line, col, f"#error {rest}")
        elif word == "pragma":
            if rest.split()[:1] == ["once"]:
                self.pragma_once.add(file)
        elif word in ("warning", "line"):
            pass
        else:
            raise self._error(file, line, col, f"unknown preprocessor directive '#{word}'")

    def _define(self, file: str, line: int, col: int, rest: str, text: str) -> None:
        """``#define NAME body`` or ``#define NAME(params) body``: the body's ``#``/``##``
        uses are checked here, so a bad macro is reported where it is defined."""
        dm = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(\(?)\s*(.*)$", rest)
        if not dm:
            raise self._error(file, line, col, "#define needs a macro name")
        name = dm.group(1)

        def at(token: str, message: str) -> P4CompileError:
            start = text.find(name) + len(name) if name in text else -1
            pos = text.find(token, max(start, 0))
            return self._error(file, line, pos + 1 if pos >= 0 else col, message)

        if not dm.group(2):
            body = dm.group(3).strip()
            tokens = _tokens(body)
            if _paste_at_end(tokens):
                raise at("##", "'##' cannot be at either end of a macro's replacement")
            if "__VA_ARGS__" in tokens:
                raise at("__VA_ARGS__", "__VA_ARGS__ can only be used in a variadic macro")
            self.macros[name] = body
            self.fmacros.pop(name, None)
            return
        fm = re.match(r"([^)]*)\)\s*(.*)$", dm.group(3))
        if not fm:
            raise self._error(file, line, col, f"#define: the parameter list of '{name}' has "
                                               "no ')'")
        params = [x.strip() for x in fm.group(1).split(",")] if fm.group(1).strip() else []
        variadic = bool(params) and params[-1] == "..."
        if variadic:
            params[-1] = "__VA_ARGS__"
        for i, prm in enumerate(params):
            if prm == "__VA_ARGS__" and variadic and i == len(params) - 1:
                continue
            if prm == "..." or prm.endswith("..."):
                raise at(prm, "#define: '...' must be the last parameter" if prm == "..."
                         else unsupported(f"named variadic parameter '{prm}'"))
            if not _IDENT.fullmatch(prm) or prm == "__VA_ARGS__":
                raise self._error(file, line, col, f"#define: '{prm}' is not a parameter name")
        if len(set(params)) != len(params):
            raise self._error(file, line, col, f"#define: '{name}' has a duplicate parameter")
        body = fm.group(2).strip()
        tokens = _tokens(body)
        if _paste_at_end(tokens):
            raise at("##", "'##' cannot be at either end of a macro's replacement")
        if "__VA_ARGS__" in tokens and not variadic:
            raise at("__VA_ARGS__", "__VA_ARGS__ can only be used in a variadic macro")
        for i, tok in enumerate(tokens):
            if tok == "#":
                nxt = _next_token(tokens, i)
                if nxt is None or tokens[nxt] not in params:
                    raise at("#", "'#' must be followed by a parameter of the macro")
        self.fmacros[name] = _FunctionMacro(params, variadic, tokens)
        self.macros.pop(name, None)

    def _include(self, file: str, line: int, col: int, rest: str, depth: int) -> None:
        m = re.match(r'"([^"]+)"|<([^>]+)>', rest)
        if not m:
            raise self._error(file, line, col, '#include expects "file" or <file>')
        if m.group(1) is not None:
            target = m.group(1)
            here = Path(file).parent if not file.startswith("<") else Path.cwd()
            candidates = [here / target]
        else:
            target = m.group(2)
            candidates = []
        candidates += [d / target for d in self.include_dirs]
        candidates.append(PACKAGE_INCLUDE_DIR / target)
        for cand in candidates:
            if cand.is_file():
                name = str(cand)
                if name in self.pragma_once:
                    return
                try:
                    text = cand.read_text()
                except (OSError, UnicodeDecodeError) as e:
                    raise self._error(file, line, col, f"cannot read {target}: {e}") from None
                self.run_file(name, text, depth + 1)
                return
        raise self._error(file, line, col, f"cannot find include file '{target}'")

    # macros -------------------------------------------------------------------------------
    def _macro_at(self, text: str, start: int, end: int,
                  active: frozenset[str]) -> tuple[str, int] | None:
        """The expansion of the identifier ``text[start:end]`` if it is a macro (with its
        arguments, for a function-like one) and where the expanded text ends; None if not."""
        name = text[start:end]
        if name in active:
            return None
        if name in self.macros:
            body = self.macros[name]
            if "##" in body:
                body = _substitute(_tokens(body), {}, {})
            return self._call_tail(text, self._expand_text(body, active | {name}), end,
                                   active, name)
        if name not in self.fmacros:
            return None
        macro = self.fmacros[name]
        params = macro.params
        j = end
        while j < len(text) and text[j] in " \t":
            j += 1
        if j >= len(text) or text[j] != "(":
            return None  # the name alone is not a call of the macro
        args, close = _macro_args(text, j)
        if close is None:
            raise _MacroError(f"unterminated call of macro '{name}' (its arguments must be on "
                              "one line)")
        if args == [""] and not params:
            args = []
        if macro.variadic:
            named = len(params) - 1
            if len(args) < named:
                raise _MacroError(f"macro '{name}' expects at least {named} arguments, got "
                                  f"{len(args)}")
            # the variadic arguments, with the commas between them, are __VA_ARGS__
            args = [*args[:named], ",".join(args[named:])]
        elif len(args) != len(params):
            raise _MacroError(f"macro '{name}' expects {len(params)} arguments, got "
                              f"{len(args)}")
        raw = {p: a.strip() for p, a in zip(params, args, strict=True)}
        values = {p: self._expand_text(a, active) for p, a in raw.items()}
        return self._call_tail(text, self._expand_text(_substitute(macro.body, raw, values),
                                                       active | {name}), close + 1,
                               active, name)

    def _call_tail(self, text: str, expansion: str, end: int, active: frozenset[str],
                   name: str) -> tuple[str, int]:
        """An expansion of macro ``name`` that ends in the name of a function-like macro whose
        arguments follow in the source (``CAT(ST, R)(x)``) is a call of that macro, as cpp
        rescans it (unless it is ``name`` itself or a macro being expanded)."""
        m = re.search(r"([A-Za-z_]\w*)\s*$", expansion)
        if (m is None or m.group(1) not in self.fmacros or m.group(1) in active
                or m.group(1) == name):
            return expansion, end
        rest = text[end:]
        if not rest.lstrip(" \t").startswith("("):
            return expansion, end
        joined = expansion + rest
        r = self._macro_at(joined, m.start(1), m.end(1), active)
        if r is None:
            return expansion, end
        return expansion[:m.start(1)] + r[0], end + r[1] - len(expansion)

    def _expand_text(self, text: str, active: frozenset[str] = frozenset()) -> str:
        out: list[str] = []
        pos = 0
        for start, end, in_string in _ident_spans(text):
            if in_string or start < pos:
                continue
            r = self._macro_at(text, start, end, active)
            if r is None:
                continue
            out.append(text[pos:start])
            out.append(r[0])
            pos = r[1]
        out.append(text[pos:])
        return "".join(out)

    def _expand_line(self, line: str) -> tuple[str, list[tuple[int, int, bool]] | None]:
        if not (self.macros or self.fmacros) or not _IDENT.search(line):
            return line, None
        out: list[str] = []
        segments: list[tuple[int, int, bool]] = []
        pos = 0
        out_len = 0
        changed = False
        for start, end, in_string in _ident_spans(line):
            if in_string or start < pos:
                continue
            try:
                r = self._macro_at(line, start, end, frozenset())
            except _MacroError as e:
                e.col = start
                raise
            if r is None:
                continue
            changed = True
            if start > pos:
                segments.append((out_len, pos, True))
                out.append(line[pos:start])
                out_len += start - pos
            body, pos = r
            segments.append((out_len, start, False))
            out.append(body)
            out_len += len(body)
        if not changed:
            return line, None
        segments.append((out_len, pos, True))
        out.append(line[pos:])
        return "".join(out), segments

    def _eval_if(self, file: str, line: int, col: int, expr: str) -> bool:
        expr = re.sub(
            r"\bdefined\s*(\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))",
            lambda m: "1" if (m.group(2) or m.group(3)) in self.macros
            or (m.group(2) or m.group(3)) in self.fmacros else "0",
            expr,
        )
        try:
            expr = self._expand_text(expr)
        except _MacroError as e:
            raise self._error(file, line, col, str(e)) from None
        tokens = re.findall(r"\s+|0[xX][0-9a-fA-F]+|\d+|[A-Za-z_]\w*|&&|\|\||==|!=|<=|>=|<<|>>|.",
                            expr)
        py: list[str] = []
        for tok in tokens:
            if tok.isspace():
                continue
            if re.fullmatch(r"0[xX][0-9a-fA-F]+|\d+", tok):
                py.append(str(int(tok, 0) if not re.fullmatch(r"0\d+", tok) else int(tok, 8)))
            elif re.fullmatch(r"[A-Za-z_]\w*", tok):
                py.append("0")  # an undefined identifier is 0, as in C
            elif tok == "&&":
                py.append(" and ")
            elif tok == "||":
                py.append(" or ")
            elif tok == "!":
                py.append(" not ")
            elif tok == "/":
                py.append("//")
            elif tok in ("==", "!=", "<=", ">=", "<<", ">>", "<", ">", "+", "-", "*", "%", "(",
                         ")", "&", "|", "^", "~"):
                py.append(tok)
            else:
                raise self._error(file, line, col, f"invalid #if expression '{expr}'")
        try:
            return bool(eval("".join(py) or "0", {"__builtins__": {}}, {}))  # noqa: S307
        except Exception:
            raise self._error(file, line, col, f"invalid #if expression '{expr}'") from None


@dataclass
class _FunctionMacro:
    """``#define NAME(params) body``: ``body`` as tokens (whitespace kept as tokens);
    a variadic macro's last parameter is ``__VA_ARGS__``."""

    params: list[str]
    variadic: bool
    body: list[str]


_TOKEN = re.compile(r'\s+|"(?:[^"\\]|\\.)*"?|[A-Za-z_][A-Za-z0-9_]*|[0-9][A-Za-z0-9_]*|##|.')

#: What a ``##`` may produce besides identifiers and numbers: the multi-character operators
#: cpp knows that P4 uses (p4c runs cpp, which refuses P4-only ones like ``&&&``).
_PASTED_OPERATORS = {
    "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "++", "--", "+=", "-=", "*=", "/=", "%=",
    "&=", "|=", "^=", "<<=", ">>=",
}


def _tokens(text: str) -> list[str]:
    """Preprocessing tokens of a macro body: identifiers, numbers, strings, ``##``, single
    characters and runs of whitespace."""
    return _TOKEN.findall(text)


def _next_token(tokens: list[str], i: int) -> int | None:
    j = i + 1
    while j < len(tokens) and tokens[j].isspace():
        j += 1
    return j if j < len(tokens) else None


def _paste_at_end(tokens: list[str]) -> bool:
    solid = [t for t in tokens if not t.isspace()]
    return bool(solid) and (solid[0] == "##" or solid[-1] == "##")


def _stringify(arg: str) -> str:
    """``#x``: the argument's text as a string literal, as cpp writes it: whitespace runs
    become one space, quotes are escaped, and so are backslashes inside string literals."""
    out: list[str] = []
    for tok in _tokens(arg.strip()):
        if tok.isspace():
            out.append(" ")
        elif tok.startswith('"'):
            out.append(tok.replace("\\", "\\\\").replace('"', '\\"'))
        else:
            out.append(tok)
    return '"' + "".join(out) + '"'


def _substitute(body: list[str], raw: dict[str, str], values: dict[str, str]) -> str:
    """A macro body with its parameters replaced: ``#p`` by the string of the argument,
    an operand of ``##`` by the unexpanded argument (then pasted to its neighbour), any other
    parameter by the macro-expanded argument."""
    out: list[str] = []
    i = 0
    paste = False  # the previous token was ##: glue the next operand to out[-1]

    def emit(text: str) -> None:
        nonlocal paste
        if paste:
            while out and out[-1].isspace():
                out.pop()
            left = out.pop() if out else ""
            glued = left + text
            if left and text and not (_IDENT.fullmatch(glued) or re.fullmatch(
                    r"[0-9][A-Za-z0-9_]*", glued) or glued in _PASTED_OPERATORS):
                raise _MacroError(f"pasting '{left}' and '{text}' does not give a valid token")
            out.append(glued)
            paste = False
        else:
            out.append(text)

    while i < len(body):
        tok = body[i]
        nxt = _next_token(body, i)
        if tok.isspace():
            if not paste:
                out.append(" ")
        elif tok == "##":
            paste = True
        elif tok == "#" and raw and nxt is not None and body[nxt] in raw:
            emit(_stringify(raw[body[nxt]]))
            i = nxt
        elif tok in raw:
            before_paste = nxt is not None and body[nxt] == "##"
            emit(raw[tok] if paste or before_paste else values[tok])
        else:
            emit(tok)
        i += 1
    return "".join(out)


class _MacroError(Exception):
    """A macro call that cannot be expanded; ``col`` (0-based) is set by the line expander."""

    col = 0


def _macro_args(text: str, open_paren: int) -> tuple[list[str], int | None]:
    """The comma-separated arguments of a macro call whose "(" is at ``open_paren`` (commas
    inside nested brackets or strings do not separate), and the index of its ")" or None."""
    args: list[str] = []
    depth = 0
    cur: list[str] = []
    i = open_paren + 1
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append("".join(cur))
                return args, i
            depth -= 1
        elif c == "," and depth == 0:
            args.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return args, None


def _ident_spans(line: str) -> list[tuple[int, int, bool]]:
    """Identifier spans in a line, flagged when inside a string literal."""
    spans: list[tuple[int, int, bool]] = []
    in_string = False
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == '"':
            in_string = not in_string
            i += 1
        elif in_string and c == "\\":
            i += 2
        elif c.isalpha() or c == "_":
            j = i + 1
            while j < n and (line[j].isalnum() or line[j] == "_"):
                j += 1
            # identifiers glued to digits (8w5, 0xab) are part of a number, not macro names
            if i > 0 and line[i - 1].isdigit():
                i = j
                continue
            spans.append((i, j, in_string))
            i = j
        elif c.isdigit():
            j = i + 1
            while j < n and (line[j].isalnum() or line[j] == "_"):
                j += 1
            i = j
        else:
            i += 1
    return spans


def preprocess(
    text: str,
    filename: str = "<string>",
    include_dirs: Sequence[Path] = (),
    defines: Mapping[str, str] | None = None,
) -> Preprocessed:
    """Preprocess ``text`` (the contents of ``filename``)."""
    pp = _Preprocessor(include_dirs, defines)
    pp.run_file(filename, text)
    return Preprocessed(
        text="\n".join(pp.out_lines) + "\n",
        origins=pp.origins,
        sources=pp.sources,
        main_file=filename,
    )
