"""Parsing preprocessed P4 text into a lark parse tree.

P4's grammar is only LALR(1) if the lexer knows which names are types (``T<bit<8>> x`` versus
``a < b``). ``P4Lexer`` therefore lexes the whole text first, finds every declared type name
(headers, structs, enums, typedefs, externs, parsers, controls, packages and type parameters),
retypes those identifiers as TYPE_IDENTIFIER, and resolves the ``<``/``>`` ambiguities before the
parser sees a token. Before those passes it folds each unstructured annotation body (spec 18.1:
any tokens, parentheses balanced) into one ANNOTATION_BODY token, so the body's tokens reach
neither the passes nor the grammar.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import BasicLexer, Lexer, LexerState
from lark.utils import TextSlice

from p4switch.frontend.errors import P4CompileError, unsupported
from p4switch.frontend.preprocess import Preprocessed

_GRAMMAR = Path(__file__).with_name("p4.lark")

#: keywords that start a type (and so may follow a type-argument "<")
_TYPE_KEYWORDS = {"bit", "int", "bool", "varbit", "tuple", "list", "error", "string", "void"}
#: keywords whose "<" always opens type arguments
_ANGLE_TYPE_KEYWORDS = {"bit", "int", "varbit", "tuple", "list", "value_set"}
#: declarations whose name (the next identifier) is a type
_NAMING_KEYWORDS = {"header", "header_union", "struct", "control", "parser", "package"}
#: tokens p4switch does not support, reported by name when they cause a syntax error
_UNSUPPORTED_TOKENS = {
    "header_union": "header_union",
    "varbit": "varbit",
    "abstract": "abstract method",
    "priority": "explicit entry priority",
    "this": "'this'",
}


#: P4 keywords (reserved words that cannot name things)
_KEYWORDS = {
    "action", "apply", "bit", "bool", "const", "control", "default", "else", "enum", "error",
    "exit", "extern", "false", "header", "header_union", "if", "in", "inout", "int", "key",
    "match_kind", "out", "package", "parser", "return", "select", "state", "struct", "switch",
    "table", "transition", "true", "tuple", "typedef", "varbit", "value_set", "void", "actions",
    "entries", "type", "string", "for", "break", "continue", "list",
}


#: keywords that start a top-level or block-level declaration (after a missing "}")
_BLOCK_KEYWORDS = {"control", "parser", "header", "struct", "action", "table", "state",
                   "extern", "typedef", "const", "enum", "apply", "package", "error",
                   "match_kind", "header_union"}


def _is_ident(tok: Token) -> bool:
    return tok.type == "IDENTIFIER"


def _decl_end(toks: list[Token], j: int) -> int:
    """Index of the token that ends the declaration continuing at ``toks[j]``: the first ";" at
    nesting depth 0, or the "}" closing the first "{" opened at depth 0."""
    depth = 0
    n = len(toks)
    while j < n:
        v = toks[j].value
        if toks[j].type != "STRING_LITERAL":
            if v in ("(", "[", "{"):
                depth += 1
            elif v in (")", "]", "}"):
                depth -= 1
                if depth == 0 and v == "}":
                    return j
                if depth < 0:
                    return j
            elif v == ";" and depth == 0:
                return j
        j += 1
    return n - 1


@dataclass
class TypeNames:
    """Declared type names: ``globals`` name types everywhere; each of ``scoped`` is a
    (first, last, names) token range in which the type parameters ``names`` of one generic
    declaration (``extern register<T> {...}``, ``control Ingress<H, M>(...);``,
    ``extern void hash<O, T, D, M>(...);``) are types. Outside it, ``T`` or ``H`` is an ordinary
    name a program may use for a field, variable or parameter."""

    globals: set[str] = field(default_factory=set)
    scoped: list[tuple[int, int, frozenset[str]]] = field(default_factory=list)


def _collect_type_names(toks: list[Token]) -> TypeNames:
    """Names declared as types anywhere in the token stream (P4 requires declare-before-use,
    but a global set is enough to disambiguate the grammar), and the scoped type parameters."""
    names: set[str] = set()
    scoped: list[tuple[int, int, frozenset[str]]] = []
    n = len(toks)

    def angle_params(i: int) -> int:
        """toks[i] is '<': record the identifiers of a type-parameter list as types until the end
        of the declaration they parameterize; return the index after '>'."""
        depth = 0
        j = i
        params: set[str] = set()
        while j < n:
            v = toks[j].value
            if v == "<":
                depth += 1
            elif v == ">":
                depth -= 1
                if depth == 0:
                    break
            elif depth == 1 and _is_ident(toks[j]) and toks[j + 1].value in (",", ">"):
                params.add(toks[j].value)
            j += 1
        if params:
            # the scope starts with the declaration (a generic method's return type comes
            # before its type parameters: `T lookahead<T>();`)
            first = i
            while first > 0 and toks[first - 1].value not in (";", "{", "}"):
                first -= 1
            scoped.append((first, _decl_end(toks, j + 1), frozenset(params)))
        return j + 1

    extern_depth: int | None = None
    brace = 0
    i = 0
    while i < n:
        t = toks[i]
        v = t.value
        if t.type == "STRING_LITERAL":
            i += 1
            continue
        if v == "{":
            brace += 1
        elif v == "}":
            brace -= 1
            if extern_depth is not None and brace < extern_depth:
                extern_depth = None
        if v in _NAMING_KEYWORDS and i + 1 < n and _is_ident(toks[i + 1]):
            names.add(toks[i + 1].value)
            if i + 2 < n and toks[i + 2].value == "<":
                i = angle_params(i + 2)
                continue
        elif v == "enum":
            j = i + 1
            if j < n and toks[j].value in ("bit", "int"):
                j += 1
                if j < n and toks[j].value == "<":
                    while j < n and toks[j].value != ">":
                        j += 1
                    j += 1
            elif j + 1 < n and _is_ident(toks[j]) and _is_ident(toks[j + 1]):
                j += 1  # enum T Name (underlying type given by a typedef)
            if j < n and _is_ident(toks[j]):
                names.add(toks[j].value)
        elif v in ("typedef", "type") and t.type in ("TYPEDEF", "TYPE"):
            j = i + 1
            last = None
            while j < n and toks[j].value != ";":
                if _is_ident(toks[j]):
                    last = toks[j].value
                j += 1
            if last:
                names.add(last)
        elif v == "extern" and i + 1 < n:
            j = i + 1
            if _is_ident(toks[j]) and j + 1 < n and toks[j + 1].value in ("{", "<"):
                # an extern object type (a generic return type "extern T<..> f(" is not handled)
                names.add(toks[j].value)
                if toks[j + 1].value == "<":
                    k = angle_params(j + 1)
                    if k < n and toks[k].value == "{":
                        extern_depth = brace + 1
                    i = k
                    continue
                extern_depth = brace + 1
            else:
                # an extern function: its type parameters follow its name
                k = j
                while k < n and toks[k].value not in ("(", ";"):
                    if (
                        toks[k].value == "<"
                        and k > 0
                        and _is_ident(toks[k - 1])
                        and toks[k - 2].value not in ("bit", "int")
                    ):
                        angle_params(k)
                        break
                    k += 1
        elif (
            extern_depth is not None
            and v == "<"
            and _is_ident(toks[i - 1])
            and brace == extern_depth
        ):
            # a generic method inside an extern object body: `void f<T>(...)`
            depth, k = 0, i
            while k < n:
                if toks[k].value == "<":
                    depth += 1
                elif toks[k].value == ">":
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            if k + 1 < n and toks[k + 1].value == "(":
                i = angle_params(i)
                continue
        i += 1
    return TypeNames(names, scoped)


def _retype(tok: Token, new_type: str) -> Token:
    return Token.new_borrow_pos(new_type, tok.value, tok)


def _adjacent(a: Token, b: Token) -> bool:
    return a.end_pos is not None and a.end_pos == b.start_pos


# two adjacent angle tokens the lexer keeps apart (so ``a<b<c>>`` can close type arguments)
# and the one token they are where they are not type arguments
_PAIRS = {("LT", "LT"): ("SHL", "<<"), ("LT", "LE"): ("COMPOUND_OP", "<<="),
          ("GT", "GT"): ("SHR", ">>"), ("GT", "GE"): ("COMPOUND_OP", ">>=")}


def _pair(t: Token, nxt: Token | None) -> tuple[str, str] | None:
    """(type, text) of the operator ``t`` and ``nxt`` form if they touch, else None."""
    if nxt is None or not _adjacent(t, nxt):
        return None
    return _PAIRS.get((t.type, nxt.type))


def _contextual(toks: list[Token]) -> list[Token]:
    """Contextual keywords (spec 6.4.1) used as names become IDENTIFIERs: ``key``,
    ``actions`` and ``entries`` are keywords only before ``= {`` (table properties), ``state``
    only before ``name {`` (a parser state), ``apply`` only before ``{`` (a control's apply
    block), ``type`` only before a type; ``bit<8> key;``, ``meta.state``, ``in bit<8> apply``
    are names."""
    out = list(toks)
    n = len(toks)

    def val(k: int) -> str | None:
        return toks[k].value if k < n and toks[k].type != "STRING_LITERAL" else None

    for i, t in enumerate(toks):
        v = t.value
        if t.type in ("STRING_LITERAL", "IDENTIFIER") or v not in _CONTEXTUAL_KEYWORDS:
            continue
        if v in ("key", "actions", "entries"):
            keyword = val(i + 1) == "=" and val(i + 2) == "{"
        elif v == "state":
            keyword = i + 2 < n and toks[i + 1].type in ("IDENTIFIER", "TYPE_IDENTIFIER") \
                and val(i + 2) == "{"
        elif v == "type":  # `type bit<8> T;` / `type T1 T2;`
            keyword = val(i + 1) in _TYPE_KEYWORDS or (
                i + 2 < n and toks[i + 1].type == "IDENTIFIER"
                and (toks[i + 2].type == "IDENTIFIER" or val(i + 2) == "<"))
        else:  # apply
            keyword = val(i + 1) == "{"
        if not keyword:
            out[i] = _retype(t, "IDENTIFIER")
    return out


_CONTEXTUAL_KEYWORDS = {"key", "actions", "entries", "state", "apply", "type"}


def _disambiguate(toks: list[Token]) -> list[Token]:
    toks = _contextual(toks)
    types = _collect_type_names(toks)
    toks = [
        _retype(t, "TYPE_IDENTIFIER") if t.type == "IDENTIFIER" and t.value in types.globals
        else t
        for t in toks
    ]
    for first, last, params in types.scoped:
        for k in range(first, min(last + 1, len(toks))):
            t = toks[k]
            if t.type == "IDENTIFIER" and t.value in params:
                toks[k] = _retype(t, "TYPE_IDENTIFIER")
    out: list[Token] = []
    angle_stack: list[int] = []  # paren depth at which each open type-argument '<' sits
    paren = 0
    i, n = 0, len(toks)
    while i < n:
        t = toks[i]
        v = t.value
        nxt = toks[i + 1] if i + 1 < n else None
        if t.type in ("STRING_LITERAL", "INTEGER"):
            out.append(t)
            i += 1
            continue
        if v in ("(", "[", "{"):
            paren += 1
        elif v in (")", "]", "}"):
            paren -= 1
            while angle_stack and angle_stack[-1] > paren:
                angle_stack.pop()
        elif v in (";",):
            angle_stack.clear()
        if t.type == "LT":
            prev = out[-1] if out else None
            if prev is not None and (
                prev.type == "TYPE_IDENTIFIER"
                or (prev.value in _ANGLE_TYPE_KEYWORDS and prev.type != "IDENTIFIER")
            ):
                angle_stack.append(paren)
                out.append(t)
                i += 1
                continue
            if (
                prev is not None
                and prev.type == "IDENTIFIER"
                and nxt is not None
                and (
                    nxt.type == "TYPE_IDENTIFIER"
                    or (nxt.value in _TYPE_KEYWORDS and nxt.type != "IDENTIFIER")
                )
                and not (nxt.type == "TYPE_IDENTIFIER" and i + 2 < n and toks[i + 2].value == ".")
                and not (nxt.value == "error" and i + 2 < n and toks[i + 2].value == ".")
            ):
                angle_stack.append(paren)
                out.append(_retype(t, "L_ANGLE_ARGS"))
                i += 1
                continue
        elif t.type == "GT" and angle_stack and angle_stack[-1] == paren:
            angle_stack.pop()
            out.append(t)
            i += 1
            continue
        pair = _pair(t, nxt) if t.type in ("LT", "GT") else None
        if pair is not None:
            out.append(Token.new_borrow_pos(*pair, t))
            i += 2
            continue
        out.append(t)
        i += 1
    return out


class AnnotationBody(Token):
    """An unstructured annotation body, ``(`` to its matching ``)``, as one token: spec 18.1
    lets it hold any tokens with balanced parentheses (``@a(x, [y)`` included), which no
    grammar rule could take without clashing with expressions. ``tokens`` are the ones inside,
    for the front end to read; the value is their text spaced as p4c prints it."""

    tokens: list[Token]


class LexError(Exception):
    """A located lexical error, raised before the parser sees a token."""

    def __init__(self, tok: Token, message: str) -> None:
        super().__init__(message)
        self.tok = tok
        self.message = message


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _not_str(tok: Token, value: str) -> bool:
    return tok.type != "STRING_LITERAL" and tok.value == value


def _body_tokens(toks: list[Token]) -> list[Token]:
    """An annotation body's tokens as p4c lexes them: adjacent ``<`` ``<`` are one ``<<``
    (``>>`` stays two ``>``); the assignment operators (``+=``, ``<<=``, ...) are the tokens
    spec 18.1's annotationToken leaves out, so p4c rejects them there and so does this."""
    out: list[Token] = []
    i, n = 0, len(toks)
    while i < n:
        t = toks[i]
        nxt = toks[i + 1] if i + 1 < n else None
        pair = _pair(t, nxt)
        op = t.value if t.type == "COMPOUND_OP" else (
            pair[1] if pair is not None and pair[0] == "COMPOUND_OP" else None)
        if op is not None:
            raise LexError(t, f"syntax error: '{op}' cannot appear in an annotation body (spec "
                              "18.1 allows any token there but the assignment operators)")
        if pair is not None and pair[0] == "SHL":
            out.append(Token.new_borrow_pos(*pair, t))
            i += 2
            continue
        out.append(t)
        i += 1
    return out


def _annotation_bodies(toks: list[Token]) -> list[Token]:
    """Fold each ``@name( ... )`` body into an AnnotationBody token (the ``(`` must follow the
    name, as in p4c's grammar); any other UNEXPECTED_CHAR is an error."""
    out: list[Token] = []
    i, n = 0, len(toks)
    while i < n:
        t = toks[i]
        if (_not_str(t, "@") and i + 2 < n and toks[i + 1].type != "STRING_LITERAL"
                and _WORD.fullmatch(toks[i + 1].value) and _not_str(toks[i + 2], "(")):
            opening, depth, j = toks[i + 2], 0, i + 2
            while j < n:
                if _not_str(toks[j], "("):
                    depth += 1
                elif _not_str(toks[j], ")"):
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j == n:
                raise LexError(opening, f"the body of annotation @{toks[i + 1].value} has no "
                                        "closing ')' (its parentheses must balance)")
            inner = _body_tokens(toks[i + 3:j])
            close = toks[j]
            body = AnnotationBody("ANNOTATION_BODY", "(" + " ".join(x.value for x in inner) + ")",
                                  opening.start_pos, opening.line, opening.column,
                                  close.end_line, close.end_column, close.end_pos)
            body.tokens = inner
            out += [t, toks[i + 1], body]
            i = j + 1
            continue
        if t.type == "UNEXPECTED_CHAR":
            raise LexError(t, f"syntax error: unexpected character '{t.value}'")
        out.append(t)
        i += 1
    return out


class P4Lexer(Lexer):
    """lark lexer: the basic lexer, annotation bodies, then the type-name and angle-bracket
    passes."""

    def __init__(self, lexer_conf) -> None:  # noqa: ANN001
        self.basic = BasicLexer(lexer_conf)

    # lark calls a custom lexer with the text alone, not (lexer_state, parser_state)
    def lex(self, text: str) -> Iterator[Token]:  # type: ignore[override]
        toks = list(self.basic.lex(LexerState(TextSlice.cast_from(text)), None))
        yield from _disambiguate(_annotation_bodies(toks))


class _KeepUnexpectedChars:
    """lark drops terminals no rule uses; UNEXPECTED_CHAR is only read by the lexer passes
    (an annotation body holds it, anywhere else it is an error), so it is kept this way."""

    always_accept = ("UNEXPECTED_CHAR",)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return stream


@functools.cache
def _parser() -> Lark:
    return Lark(
        _GRAMMAR.read_text(),
        parser="lalr",
        lexer=P4Lexer,
        postlex=_KeepUnexpectedChars(),
        propagate_positions=True,
        maybe_placeholders=True,
        cache=True,  # lark caches the LALR tables in the temp dir, keyed by grammar+options
    )


def _describe(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    return f"'{tok.value}'"


def parse(pp: Preprocessed) -> Tree:
    """Parse preprocessed text; syntax errors become located P4CompileErrors."""
    try:
        return _parser().parse(pp.text)
    except LexError as e:
        raise pp.error(pp.locate(cast(int, e.tok.line), cast(int, e.tok.column)), e.message) \
            from None
    except UnexpectedToken as e:
        tok = e.token
        line = tok.line if tok.line is not None else e.line
        col = tok.column if tok.column is not None else e.column
        if tok.type == "$END":
            line, col = _end_position(pp.text)
        loc = pp.locate(line, col)
        if tok.value in _UNSUPPORTED_TOKENS and tok.type != "STRING_LITERAL":
            raise pp.error(loc, unsupported(_UNSUPPORTED_TOKENS[tok.value])) from None
        if tok.value == "(" and tok.start_pos is not None and _TABLE_PARENS.search(
            pp.text, 0, tok.start_pos
        ):
            raise pp.error(loc, "syntax error: a table declaration has no parameter list: write "
                                "'table name { ... }' (p4c rejects 'table name() { ... }' too)"
                           ) from None
        opened = _STRUCTURED_OPEN.search(pp.text, 0, tok.start_pos or 0)
        if opened and tok.type != "$END":
            raise pp.error(loc, f"syntax error: unexpected {_describe(tok)} in structured "
                                f"annotation @{opened.group(1)}[...] (spec 18.1.2: a list of "
                                "expressions, or of name = expression pairs, not both)") from None
        expected = set(e.expected or ())
        end = len(pp.text[:tok.start_pos or 0].rstrip())
        if ("SEMICOLON" in expected and tok.type != "$END" and end > 0
                and pp.text[end - 1] not in "{};"):
            # a missing ';' is noticed at the next token, often on the next line: point just
            # after the token it should follow, as C compilers do
            eline = pp.text.count("\n", 0, end) + 1
            ecol = end - (pp.text.rfind("\n", 0, end) + 1) + 1
            raise pp.error(pp.locate(eline, ecol),
                           f"syntax error: expected ';' before {_describe(tok)}") from None
        if "RBRACE" in expected and tok.value in _BLOCK_KEYWORDS and tok.type != "IDENTIFIER":
            raise pp.error(loc, f"syntax error: unexpected '{tok.value}' (is a '}}' missing "
                                "before it?)") from None
        if tok.value in _KEYWORDS and tok.type not in ("STRING_LITERAL", "IDENTIFIER"):
            raise pp.error(loc, f"syntax error: unexpected '{tok.value}' ('{tok.value}' is a P4 "
                                "keyword and cannot be used as a name)") from None
        raise pp.error(loc, f"syntax error: unexpected {_describe(tok)}") from None
    except UnexpectedCharacters as e:
        loc = pp.locate(e.line, e.column)
        pos = cast(int, e.pos_in_stream)  # lark sets it for a character error
        ch = pp.text[pos] if pos < len(pp.text) else "?"
        raise pp.error(loc, f"syntax error: unexpected character '{ch}'") from None
    except UnexpectedEOF:
        line, col = _end_position(pp.text)
        raise pp.error(pp.locate(line, col), "syntax error: unexpected end of file") from None
    except UnexpectedInput as e:  # pragma: no cover - other lark errors
        raise P4CompileError(pp.locate(e.line, e.column), f"syntax error: {e}") from None


#: an unclosed "@name[" right before a syntax error: the error is in a structured annotation
_STRUCTURED_OPEN = re.compile(r"@\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[[^\[\];{}]*\Z")

#: "table name" right before a syntax error at "(": the old `table t() {` form
_TABLE_PARENS = re.compile(r"\btable\s+[A-Za-z_][A-Za-z0-9_]*\s*\Z")


def _end_position(text: str) -> tuple[int, int]:
    lines = text.rstrip("\n").split("\n")
    return len(lines), len(lines[-1]) + 1
