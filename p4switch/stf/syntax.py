"""STF lexing and parsing: one line of text -> one command dataclass.

The grammar is p4c's (``tools/stf/stf_parser.py`` plus the BMv2 additions in
``backends/bmv2/bmv2stf.py``), read line by line as both p4c drivers effectively do. Values stay
*text* here (``0x****0101``, ``0x0a000000/8``) because their meaning depends on the match kind
and width of the table key they are given to, which only the runner knows (see ``values.py``).
The module docstring of ``p4switch.stf`` lists the full dialect and the p4switch extensions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class StfSyntaxError(Exception):
    """A line that is not valid STF (or uses an unsupported command); str is ``file:line: msg``."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: {message}")
        self.file = file
        self.line = line
        self.message = message


# --------------------------------------------------------------------------------------------
# Command model
# --------------------------------------------------------------------------------------------


@dataclass
class Command:
    """Base of all commands: where it came from, for error messages."""

    line: int = field(kw_only=True)


@dataclass
class KeyValue:
    """A key as written: ``name:value`` with optional ``/prefix``, ``&&&mask`` or ``->hi``.

    ``value``/``mask``/``hi`` are number texts (possibly with ``*`` digits); interpretation is
    deferred to the runner, which knows the key's match kind and width."""

    name: str
    value: str
    prefix_len: int | None = None
    mask: str | None = None
    hi: str | None = None


@dataclass
class ActionSpec:
    """``action(p:v, ...)`` or the extension forms ``member=<id>`` / ``group=<id>``."""

    name: str | None
    args: list[tuple[str, str]] = field(default_factory=list)
    member_id: int | None = None
    group_id: int | None = None


@dataclass
class Add(Command):
    table: str
    priority: int | None
    keys: list[KeyValue]
    action: ActionSpec
    handle: str | None = None


@dataclass
class SetDefault(Command):
    table: str
    action: ActionSpec


@dataclass
class RemoveAll(Command):
    pass


@dataclass
class PacketCmd(Command):
    port: int
    data: bytes


@dataclass
class ExpectCmd(Command):
    """``pattern`` is the hex text with ``*`` nibbles (and a trailing ``$`` for an exact
    length), or None for ``expect <port>`` with no data: any number of packets is fine."""

    port: int
    pattern: str | None


@dataclass
class CheckCounter(Command):
    """``check_counter name(index) [packets|bytes <op> N]``; without a condition p4c's parser
    yields ``(None, "==", 0)``, which we read as ``packets == 0``."""

    name: str
    index: int | str
    kind: str
    op: str
    value: int


@dataclass
class CheckRegister(Command):
    """Extension: ``check_register name(index) <op> N``."""

    name: str
    index: int
    op: str
    value: int


@dataclass
class Wait(Command):
    """``wait`` (p4c: let packets drain; a no-op here) or the extension ``wait <us>``."""

    micros: int | None


@dataclass
class NoOp(Command):
    """Commands accepted for compatibility that change nothing here (``no_packet``,
    ``mirroring_get``, ``meter_get_rates``); ``text`` is echoed in verbose mode."""

    text: str


@dataclass
class MirroringAdd(Command):
    session: int
    port: int


@dataclass
class MirroringAddMc(Command):
    session: int
    group: int


@dataclass
class MirroringDelete(Command):
    session: int


@dataclass
class McMgrpCreate(Command):
    group: int


@dataclass
class McNodeCreate(Command):
    rid: int
    ports: list[int]


@dataclass
class McNodeUpdate(Command):
    handle: int
    ports: list[int]


@dataclass
class McNodeAssociate(Command):
    group: int
    handle: int


@dataclass
class CounterRead(Command):
    name: str
    index: int


@dataclass
class CounterWrite(Command):
    name: str
    index: int
    packets: int
    bytes: int


@dataclass
class RegisterRead(Command):
    name: str
    index: int


@dataclass
class RegisterWrite(Command):
    name: str
    index: int
    value: int


@dataclass
class RegisterReset(Command):
    name: str


@dataclass
class MeterSetRates(Command):
    """``meter_set_rates name idx r1:b1 r2:b2`` (index None for ``meter_array_set_rates``);
    rates in units per microsecond as simple_switch_CLI takes them."""

    name: str
    index: int | None
    rates: list[tuple[float, int]]


@dataclass
class Member(Command):
    """Extension: ``member <profile> <member_id> <action>(p:v, ...)``."""

    profile: str
    member_id: int
    action: ActionSpec


@dataclass
class Group(Command):
    """Extension: ``group <profile> <group_id> <member_id>[*weight] ...``."""

    profile: str
    group_id: int
    members: list[tuple[int, int]]


# --------------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------------

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r]+)
  | (?P<num>-?(?:0[xX][0-9a-fA-F*]+|0[bB][01*]+|0[oO][0-7*]+|[0-9]+(?:\.[0-9]+)?))
  | (?P<id>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op>&&&|->|==|!=|<=|>=|[<>:,.\[\]()/=*])
    """,
    re.VERBOSE,
)

_PACKET_KEYWORDS = {"packet", "expect"}


def _tokenize(text: str, file: str, line: int) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise StfSyntaxError(file, line, f"unexpected character {text[pos]!r}")
        if m.lastgroup != "ws":
            tokens.append(m.group())
        pos = m.end()
    return tokens


class _Cursor:
    """A token cursor with the error context of its line."""

    def __init__(self, tokens: list[str], file: str, line: int) -> None:
        self.tokens = tokens
        self.pos = 0
        self.file = file
        self.line = line

    def error(self, message: str) -> StfSyntaxError:
        return StfSyntaxError(self.file, self.line, message)

    def peek(self, offset: int = 0) -> str | None:
        i = self.pos + offset
        return self.tokens[i] if i < len(self.tokens) else None

    def next(self, what: str) -> str:
        tok = self.peek()
        if tok is None:
            raise self.error(f"expected {what}, found end of line")
        self.pos += 1
        return tok

    def expect(self, tok: str) -> None:
        got = self.next(repr(tok))
        if got != tok:
            raise self.error(f"expected {tok!r}, found {got!r}")

    def accept(self, tok: str) -> bool:
        if self.peek() == tok:
            self.pos += 1
            return True
        return False

    def at_end(self) -> bool:
        return self.pos >= len(self.tokens)

    def end(self) -> None:
        if not self.at_end():
            raise self.error(f"unexpected {self.peek()!r}")

    def int_(self, what: str) -> int:
        tok = self.next(what)
        try:
            return parse_int(tok)
        except ValueError:
            raise self.error(f"expected {what} (an integer), found {tok!r}") from None

    def number_text(self, what: str) -> str:
        tok = self.next(what)
        if not _is_number(tok):
            raise self.error(f"expected {what}, found {tok!r}")
        return tok

    def qualified_name(self, what: str) -> str:
        """``ID ( '[' N ']' )? ( '.' ID ( '[' N ']' )? )*`` joined back into text."""
        first = self.next(what)
        if not _is_ident(first):
            raise self.error(f"expected {what}, found {first!r}")
        parts = [first]
        while True:
            if self.peek() == "[":
                self.pos += 1
                idx = self.number_text("stack index")
                self.expect("]")
                parts.append(f"[{idx}]")
            elif self.peek() == "." and self.peek(1) is not None and _is_ident(self.peek(1) or ""):
                self.pos += 1
                parts.append("." + self.next("name"))
            else:
                return "".join(parts)


def _is_ident(tok: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", tok))


def _is_number(tok: str) -> bool:
    return bool(re.fullmatch(r"-?(0[xX][0-9a-fA-F*]+|0[bB][01*]+|0[oO][0-7*]+|[0-9]+)", tok))


def parse_int(text: str) -> int:
    """An integer literal as STF writes them: decimal, ``0x``, ``0b``, ``0o`` (no ``*``), an
    optional leading ``-`` (an extension, for ``int<W>`` data)."""
    if "*" in text:
        raise ValueError(text)
    neg = text.startswith("-")
    body = text[1:] if neg else text
    low = body.lower()
    if low.startswith("0x"):
        v = int(body[2:], 16)
    elif low.startswith("0b"):
        v = int(body[2:], 2)
    elif low.startswith("0o"):
        v = int(body[2:], 8)
    else:
        v = int(body, 10)
    return -v if neg else v


# --------------------------------------------------------------------------------------------
# Line parser
# --------------------------------------------------------------------------------------------

_HEX_DATA_RE = re.compile(r"[0-9a-fA-F*]*\$?")


def strip_comment(text: str) -> str:
    i = text.find("#")
    return text if i < 0 else text[:i]


def parse_line(text: str, file: str, line: int) -> Command | None:
    """Parse one line; None for blank/comment lines."""
    text = strip_comment(text).strip()
    if not text:
        return None
    word, _, rest = text.partition(" ")
    if "\t" in word:
        word, _, more = word.partition("\t")
        rest = more + " " + rest
    kw = word.lower()
    if kw in _PACKET_KEYWORDS:
        return _parse_packet_line(kw, rest, file, line)
    cur = _Cursor(_tokenize(rest, file, line), file, line)
    handler = _HANDLERS.get(kw)
    if handler is None:
        raise StfSyntaxError(file, line, f"unsupported STF command {word!r}")
    cmd = handler(cur)
    cur.end()
    return cmd


def _parse_packet_line(kw: str, rest: str, file: str, line: int) -> Command:
    port_text, _, data = rest.strip().partition(" ")
    port_text = port_text.strip()
    if not port_text.isdigit():
        raise StfSyntaxError(file, line, f"{kw}: expected a decimal port, found {port_text!r}")
    port = int(port_text)
    data = "".join(data.split())
    if not _HEX_DATA_RE.fullmatch(data):
        bad = next(c for c in data if c not in "0123456789abcdefABCDEF*$")
        raise StfSyntaxError(file, line, f"{kw}: invalid packet data character {bad!r}")
    if kw == "packet":
        if "*" in data or "$" in data:
            raise StfSyntaxError(file, line, "packet: '*' and '$' are only allowed in expect")
        if len(data) % 2:
            raise StfSyntaxError(file, line, "packet: odd number of hex digits")
        return PacketCmd(port, bytes.fromhex(data), line=line)
    return ExpectCmd(port, data.upper() if data else None, line=line)


def _action(cur: _Cursor) -> ActionSpec:
    if cur.peek() in ("member", "group") and cur.peek(1) == "=":
        which = cur.next("member/group")
        cur.expect("=")
        ident = cur.int_(f"{which} id")
        if which == "member":
            return ActionSpec(None, member_id=ident)
        return ActionSpec(None, group_id=ident)
    name = cur.qualified_name("action name")
    cur.expect("(")
    args: list[tuple[str, str]] = []
    if not cur.accept(")"):
        while True:
            pname = cur.next("parameter name")
            if not _is_ident(pname):
                raise cur.error(f"expected parameter name, found {pname!r}")
            cur.expect(":")
            args.append((pname, cur.number_text(f"value of {pname}")))
            if cur.accept(")"):
                break
            cur.expect(",")
    return ActionSpec(name, args)


def _is_action_start(cur: _Cursor) -> bool:
    """Whether the cursor is at the action of an ``add`` (not at another ``key:value``)."""
    if cur.peek() in ("member", "group") and cur.peek(1) == "=":
        return True
    i = 0
    while True:
        tok = cur.peek(i)
        if tok is None:
            return False
        if tok == "(":
            return True
        if tok == ":":
            return False
        i += 1


def _key(cur: _Cursor) -> KeyValue:
    name = cur.qualified_name("key name")
    cur.expect(":")
    kv = KeyValue(name, cur.number_text(f"value of key {name}"))
    if cur.accept("/"):
        kv.prefix_len = cur.int_("prefix length")
    elif cur.accept("&&&"):
        kv.mask = cur.number_text("mask")
    elif cur.accept("->"):
        kv.hi = cur.number_text("range high bound")
    return kv


def _p_add(cur: _Cursor) -> Command:
    table = cur.qualified_name("table name")
    priority = None
    tok = cur.peek()
    if tok is not None and tok.isdigit() and cur.peek(1) != ":":
        priority = int(cur.next("priority"))
    keys: list[KeyValue] = []
    while not _is_action_start(cur):
        if cur.at_end():
            raise cur.error("add: missing action")
        keys.append(_key(cur))
    action = _action(cur)
    handle = None
    if cur.accept("="):
        handle = cur.next("entry id")
    return Add(table, priority, keys, action, handle, line=cur.line)


def _p_setdefault(cur: _Cursor) -> Command:
    table = cur.qualified_name("table name")
    action = _action(cur)
    if action.name is None:
        raise cur.error("setdefault needs an action")
    return SetDefault(table, action, line=cur.line)


def _p_remove(cur: _Cursor) -> Command:
    what = cur.next("'all'")
    if what.lower() != "all":
        raise cur.error("unsupported STF command 'remove' (only 'remove all' is supported)")
    return RemoveAll(line=cur.line)


_OPS = ("==", "!=", "<=", "<", ">=", ">")


def _p_check_counter(cur: _Cursor) -> Command:
    name = cur.qualified_name("counter name")
    cur.expect("(")
    tok = cur.next("counter index")
    index: int | str
    if _is_ident(tok):
        index = tok  # an entry id ($A style); rejected by the runner
    else:
        try:
            index = parse_int(tok)
        except ValueError:
            raise cur.error(f"expected counter index, found {tok!r}") from None
    cur.expect(")")
    if cur.at_end():
        return CheckCounter(name, index, "packets", "==", 0, line=cur.line)
    kind = cur.next("packets or bytes").lower()
    if kind not in ("packets", "bytes"):
        raise cur.error(f"expected 'packets' or 'bytes', found {kind!r}")
    op = cur.next("comparison")
    if op not in _OPS:
        raise cur.error(f"expected one of {' '.join(_OPS)}, found {op!r}")
    return CheckCounter(name, index, kind, op, cur.int_("count"), line=cur.line)


def _p_check_register(cur: _Cursor) -> Command:
    name = cur.qualified_name("register name")
    cur.expect("(")
    index = cur.int_("register index")
    cur.expect(")")
    op = cur.next("comparison")
    if op not in _OPS:
        raise cur.error(f"expected one of {' '.join(_OPS)}, found {op!r}")
    return CheckRegister(name, index, op, cur.int_("value"), line=cur.line)


def _p_wait(cur: _Cursor) -> Command:
    if cur.at_end():
        return Wait(None, line=cur.line)
    us = cur.int_("microseconds")
    if us < 0:
        raise cur.error("wait: negative time")
    return Wait(us, line=cur.line)


def _noop(name: str, nargs: int):
    def handler(cur: _Cursor) -> Command:
        args = [cur.next("argument") for _ in range(nargs)]
        while not cur.at_end():
            args.append(cur.next("argument"))
        return NoOp(" ".join([name, *args]), line=cur.line)

    return handler


def _int_list(cur: _Cursor, what: str) -> list[int]:
    out = []
    while not cur.at_end():
        out.append(cur.int_(what))
    return out


def _rates(cur: _Cursor) -> list[tuple[float, int]]:
    rates = []
    while not cur.at_end():
        tok = cur.next("rate")
        try:
            rate = float(tok)
        except ValueError:
            raise cur.error(f"expected a rate, found {tok!r}") from None
        cur.expect(":")
        rates.append((rate, cur.int_("burst size")))
    return rates


def _p_member(cur: _Cursor) -> Command:
    profile = cur.qualified_name("action profile name")
    member_id = cur.int_("member id")
    action = _action(cur)
    if action.name is None:
        raise cur.error("member needs an action")
    return Member(profile, member_id, action, line=cur.line)


def _p_group(cur: _Cursor) -> Command:
    profile = cur.qualified_name("action profile name")
    group_id = cur.int_("group id")
    members: list[tuple[int, int]] = []
    while not cur.at_end():
        mid = cur.int_("member id")
        weight = cur.int_("weight") if cur.accept("*") else 1
        members.append((mid, weight))
    return Group(profile, group_id, members, line=cur.line)


def _p_meter_set_rates(cur: _Cursor) -> Command:
    name = cur.qualified_name("meter name")
    return MeterSetRates(name, cur.int_("index"), _rates(cur), line=cur.line)


def _p_meter_array_set_rates(cur: _Cursor) -> Command:
    name = cur.qualified_name("meter name")
    return MeterSetRates(name, None, _rates(cur), line=cur.line)


_HANDLERS = {
    "add": _p_add,
    "setdefault": _p_setdefault,
    "remove": _p_remove,
    "check_counter": _p_check_counter,
    "check_register": _p_check_register,
    "wait": _p_wait,
    "no_packet": lambda cur: NoOp("no_packet", line=cur.line),
    "mirroring_add": lambda cur: MirroringAdd(
        cur.int_("session id"), cur.int_("egress port"), line=cur.line
    ),
    "mirroring_add_mc": lambda cur: MirroringAddMc(
        cur.int_("session id"), cur.int_("multicast group"), line=cur.line
    ),
    "mirroring_delete": lambda cur: MirroringDelete(cur.int_("session id"), line=cur.line),
    "mirroring_get": _noop("mirroring_get", 1),
    "mc_mgrp_create": lambda cur: McMgrpCreate(cur.int_("multicast group"), line=cur.line),
    "mc_node_create": lambda cur: McNodeCreate(
        cur.int_("rid"), _int_list(cur, "port"), line=cur.line
    ),
    "mc_node_update": lambda cur: McNodeUpdate(
        cur.int_("node handle"), _int_list(cur, "port"), line=cur.line
    ),
    "mc_node_associate": lambda cur: McNodeAssociate(
        cur.int_("multicast group"), cur.int_("node handle"), line=cur.line
    ),
    "counter_read": lambda cur: CounterRead(
        cur.qualified_name("counter name"), cur.int_("index"), line=cur.line
    ),
    "counter_write": lambda cur: CounterWrite(
        cur.qualified_name("counter name"),
        cur.int_("index"),
        cur.int_("packets"),
        cur.int_("bytes"),
        line=cur.line,
    ),
    "register_read": lambda cur: RegisterRead(
        cur.qualified_name("register name"), cur.int_("index"), line=cur.line
    ),
    "register_write": lambda cur: RegisterWrite(
        cur.qualified_name("register name"), cur.int_("index"), cur.int_("value"), line=cur.line
    ),
    "register_reset": lambda cur: RegisterReset(cur.qualified_name("register name"), line=cur.line),
    "meter_get_rates": _noop("meter_get_rates", 2),
    "meter_set_rates": _p_meter_set_rates,
    "meter_array_set_rates": _p_meter_array_set_rates,
    "member": _p_member,
    "group": _p_group,
}


def parse_stf(text: str, file: str = "<stf>") -> list[Command]:
    """Parse a whole STF text; raises StfSyntaxError at the first bad line."""
    out: list[Command] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        cmd = parse_line(raw, file, lineno)
        if cmd is not None:
            out.append(cmd)
    return out
