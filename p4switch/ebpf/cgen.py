"""The eBPF back end's code generator: a v1model ``ir.Program`` → one C file for the tc hook.

The whole V1Switch runs in one ``sched_cls`` program on each port's clsact ingress: parser,
verify_checksum, ingress, the traffic manager's decision (drop or one egress port, and the
egress queue model that gives the queueing metadata — see docs/p4switch-ebpf.md), egress
(inline), compute_checksum, deparser, then ``bpf_redirect`` to the egress port.

Representation: every scalar (bit<W> with W <= 64, int<W>, bool, enum, error) is a ``__u64``
holding the value's W-bit pattern; a header is a struct of such fields plus ``valid``. All
per-packet state (headers, metadata, locals, action parameters, scratch buffers) lives in one
per-CPU array element (``p4ctx``), since BPF stacks are 512 bytes. Actions are inlined at each
use. What the back end cannot express is refused with a located ``file:line:col`` error
(``EbpfUnsupported``).

Dispatch is on ``ir.Visitor``, as in the Python code generators: ``CGen`` has one ``visit_``
method per expression and statement kind; C types, l-values, equality, select keysets and the
register-lock analysis have small visitors of their own (``_CTypes``, ``_LValues``, ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from common.histogram import BUCKETS
from p4switch import ir
from p4switch.errors import P4CompileError

from .cruntime import (
    MAIN_HEAD,
    MAIN_TAIL,
    PRELUDE,
    QUEUE,
    REPL,
    SHRINK,
    ZERO_CTX,
    crc_table,
    map_decl,
)
from .layout import (
    DIGEST_MAX,
    GROUP_FLAG,
    GROUP_MAX,
    STAT_NAMES,
    CounterLayout,
    DigestLayout,
    KeyLayout,
    Layout,
    MeterLayout,
    RegisterLayout,
    TableKind,
    TableLayout,
)

SCAN_MAX = 1024
"""Most entries of a scan table (ternary/range/optional): it is searched linearly."""
PASSES = 16
"""Resubmit/recirculate passes a packet may make (the Python target's MAX_RECIRCULATIONS)."""
FOR_MAX = 64
"""Iterations a ``for`` loop may make on this target (the verifier must see every loop end)."""
HASH_BUF = 128
"""Bytes of a hash/checksum input the generated code can build."""


class EbpfUnsupported(P4CompileError):
    """A construct the eBPF back end cannot express; ``str()`` is ``file:line:col: error: ...``."""


@dataclass
class Generated:
    source: str
    layout: Layout
    entry: str = "p4_ingress"


def _cid(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _mask(w: int) -> str:
    return "0xffffffffffffffffULL" if w >= 64 else f"0x{(1 << w) - 1:x}ULL"


class _Width(ir.Visitor):
    """Bits of a scalar type's value (an ``int`` literal's: 64)."""

    def visit_BitsType(self, t: ir.BitsType) -> int:
        return t.width

    def visit_BoolType(self, t: ir.BoolType) -> int:
        return 1

    def visit_ErrorType(self, t: ir.ErrorType) -> int:
        return 32

    def visit_EnumType(self, t: ir.EnumType) -> int:
        return t.underlying.width if t.underlying is not None else 32

    def visit_InfIntType(self, t: ir.InfIntType) -> int:
        return 64

    def generic(self, node: Any, *args: Any) -> Any:
        raise TypeError(str(node))


_WIDTH = _Width()


def _width(t: ir.Type) -> int:
    return int(_WIDTH.visit(t))


def _signed(t: ir.Type) -> bool:
    if isinstance(t, ir.BitsType):
        return t.signed
    if isinstance(t, ir.EnumType) and t.underlying is not None:
        return t.underlying.signed
    return False


def _const_int(e: ir.Expr) -> int | None:
    if isinstance(e, ir.Const) and isinstance(e.value, int | bool):
        return int(e.value)
    return None


def _enum_member(e: ir.Expr) -> str:
    if isinstance(e, ir.Const) and isinstance(e.type, ir.EnumType):
        for n, v in e.type.members:
            if v == e.value:
                return n
    raise ValueError("not an enum constant")


class _CTypes(ir.Visitor):
    """A P4 type → its C type, one method per kind of type; a header, struct or stack's C
    struct is defined (in ``g.structs``, in dependency order) on first use."""

    def __init__(self, g: CGen) -> None:
        self.g = g

    def visit_HeaderType(self, t: ir.HeaderType) -> str:
        g = self.g
        name = f"H_{_cid(t.name)}"
        if name not in g.structs:
            fields = []
            for f in t.fields:
                for path, ft in _leaves(f.type, f.name):  # struct fields: nested structs
                    if isinstance(ft, ir.VarbitType):
                        if ft.max_width > 64:
                            raise g.refuse(f"header field {t.name}.{path} of type {ft} "
                                           f"(wider than 64 bits)", g.loc or g.type_loc(t))
                        continue
                    if not isinstance(ft, ir.BitsType | ir.BoolType | ir.EnumType):
                        raise g.refuse(f"header field {t.name}.{path} of type {ft}",
                                       g.loc or g.type_loc(t))
                    if _width(ft) > 64:
                        raise g.refuse(f"header field {t.name}.{path} wider than 64 bits",
                                       g.loc or g.type_loc(t))
                fields.append(f"    {g.ctype(f.type)} f_{_cid(f.name)};")
            if t.min_width % 8:
                raise g.refuse(f"header {t.name} of {t.min_width} bits (not whole bytes)")
            if t.varbit is not None:
                before, _, _ = _split_varbit(t)
                if sum(_width(ft) for _, ft in before) % 8:
                    raise g.refuse(f"header {t.name} whose varbit field does not start "
                                   f"at a byte boundary", g.loc or g.type_loc(t))
            g.max_hdr = max(g.max_hdr, _max_bytes(t))
            g.structs[name] = f"struct {name} {{\n" + "\n".join(fields) + \
                "\n    __u64 valid;\n};"
        return f"struct {name}"

    def visit_StructType(self, t: ir.StructType) -> str:
        # a header_union is a struct of its members: the front end has made the validity
        # rules (one valid member, isValid as "some member") explicit statements
        g = self.g
        name = f"S_{_cid(t.name)}"
        if name not in g.structs:
            fields = [f"    {g.ctype(f.type)} f_{_cid(f.name)};" for f in t.fields]
            if not fields:
                fields = ["    __u64 _empty;"]
            g.structs[name] = f"struct {name} {{\n" + "\n".join(fields) + "\n};"
        return f"struct {name}"

    def visit_StackType(self, t: ir.StackType) -> str:
        g = self.g
        elem = g.ctype(t.elem)
        name = f"K_{_cid(t.elem.name)}_{t.size}"
        if name not in g.structs:
            g.structs[name] = (f"struct {name} {{\n    {elem} e[{t.size}];\n"
                               f"    __u64 n;\n}};")
        return f"struct {name}"

    def visit_VarbitType(self, t: ir.VarbitType) -> str:
        if t.max_width > 64:
            raise self.g.refuse(f"varbit<{t.max_width}> (wider than 64 bits)")
        return "struct p4_vb"

    def scalar(self, t: ir.Type) -> str:
        """Every scalar is a ``__u64`` holding its value's bit pattern."""
        if _width(t) > 64:
            raise self.g.refuse(f"{t} (wider than 64 bits)")
        return "__u64"

    visit_BitsType = visit_BoolType = visit_ErrorType = visit_EnumType = scalar
    visit_InfIntType = scalar

    def generic(self, node: Any, *args: Any) -> Any:
        raise self.g.refuse(f"a value of type {node}")


class _LValues(ir.Visitor):
    """An l-value expression → its C l-value, one method per kind of expression that can be
    one; any other is refused."""

    def __init__(self, g: CGen) -> None:
        self.g = g

    def visit_Var(self, e: ir.Var) -> str:
        assert self.g.scope is not None
        try:
            return self.g.scope.names[e.name]
        except KeyError:
            raise self.g.refuse(f"the name {e.name} here") from None

    def visit_Member(self, e: ir.Member) -> str:
        if isinstance(e.base.type, ir.StackType):
            return self.g.stack_prop(e.base, e.field)
        return f"{self.visit(e.base)}.f_{_cid(e.field)}"

    def visit_StackProp(self, e: ir.StackProp) -> str:
        return self.g.stack_prop(e.stack, e.prop)

    def visit_Lookahead(self, e: ir.Lookahead) -> str:
        return self.g.lookahead(e)

    def visit_StackElem(self, e: ir.StackElem) -> str:
        st = e.stack.type
        assert isinstance(st, ir.StackType)
        base = self.visit(e.stack)
        i = _const_int(e.index)
        if i is not None and 0 <= i < st.size:
            return f"{base}.e[{i}]"
        return self.g.elem_at(base, st, self.g.ex(e.index))

    def visit_StackNext(self, e: ir.StackNext) -> str:
        st = e.stack.type
        assert isinstance(st, ir.StackType)
        base = self.visit(e.stack)
        self.g.stack_check(f"{base}.n >= {st.size}")
        return self.g.elem_at(base, st, f"{base}.n")

    def visit_StackLast(self, e: ir.StackLast) -> str:
        st = e.stack.type
        assert isinstance(st, ir.StackType)
        base = self.visit(e.stack)
        self.g.stack_check(f"{base}.n == 0")
        return self.g.elem_at(base, st, f"({base}.n - 1)")

    def generic(self, node: Any, *args: Any) -> Any:
        raise self.g.refuse(f"{type(node).__name__} as an l-value", node.loc)


class _RegOps(ir.Visitor):
    """Collects every register read/write under a statement (or a list of them) into ``out``
    as (control-plane name, method, index)."""

    def __init__(self, g: CGen, out: list[tuple[str, str, ir.Expr]]) -> None:
        self.g, self.out = g, out

    def visit_ExternCall(self, x: ir.ExternCall) -> None:
        if x.instance is not None:
            inst = self.g.instance(x.instance)
            if inst.type_name == "register" and x.method in ("read", "write"):
                self.out.append((inst.cp_name, x.method,
                                 x.args[1 if x.method == "read" else 0]))
                return
        self.visit_Stmt(x)

    def visit_list(self, x: list[Any]) -> None:
        for y in x:
            self.visit(y)

    def visit_Stmt(self, x: ir.Stmt | ir.ActionCase | ir.ValueCase) -> None:
        for v in vars(x).values():
            if isinstance(v, ir.Stmt | ir.ActionCase | ir.ValueCase | list):
                self.visit(v)

    visit_ActionCase = visit_ValueCase = visit_Stmt

    def generic(self, node: Any, *args: Any) -> None:
        return None  # expressions, constants: no register access


class _LockSafe(ir.Visitor):
    """True if the code for a node calls no helper, leaves no block early and returns nothing
    (what the verifier allows under a bpf_spin_lock); tables, actions, exit/return, stacks and
    the rest are not."""

    def __init__(self, g: CGen) -> None:
        self.g = g

    def visit_list(self, x: list[Any]) -> bool:
        return all(self.visit(y) for y in x)

    def visit_TableHit(self, x: ir.Expr) -> bool:
        return False

    visit_Lookahead = visit_ExternCallExpr = visit_TableHit

    def visit_Expr(self, x: ir.Expr) -> bool:
        return all(self.visit(v) for v in vars(x).values() if isinstance(v, ir.Expr | list))

    def visit_Block(self, x: ir.Block) -> bool:
        return not x.copy_out and self.visit(x.stmts)

    def visit_If(self, x: ir.If) -> bool:
        return bool(self.visit([x.cond, x.then] + ([x.else_] if x.else_ else [])))

    def visit_Assign(self, x: ir.Assign) -> bool:
        return bool(self.visit([x.lhs, x.rhs]))

    def visit_VarDecl(self, x: ir.VarDecl) -> bool:
        return x.init is None or bool(self.visit(x.init))

    def visit_HeaderMethod(self, x: ir.HeaderMethod) -> bool:
        return True

    def visit_ExternCall(self, x: ir.ExternCall) -> bool:
        if x.instance is not None:
            inst = self.g.instance(x.instance)
            return inst.type_name == "register" and bool(self.visit(x.args))
        return x.method in ("hash", "mark_to_drop", "log_msg") and bool(self.visit(x.args))

    def generic(self, node: Any, *args: Any) -> bool:
        return False


class _Assigned(ir.Visitor):
    """Collects into ``out`` the C l-values the code for a node may write (assignments and
    out arguments)."""

    def __init__(self, g: CGen, out: set[str]) -> None:
        self.g, self.out = g, out

    def visit_Assign(self, x: ir.Assign) -> None:
        self.out.add(self.g.lval(x.lhs.base if isinstance(x.lhs, ir.Slice) else x.lhs))

    def visit_VarDecl(self, x: ir.VarDecl) -> None:
        self.out.add(f"L_{_cid(x.name)}")

    def visit_ExternCall(self, x: ir.ExternCall) -> None:
        if x.method == "read" and x.instance is not None:
            self.out.add(self.g.lval(x.args[0]))
        elif x.method == "hash":
            self.out.add(self.g.lval(x.args[0]))
        elif x.method == "mark_to_drop":
            self.out.add("C->sm")

    def visit_Block(self, x: ir.Block) -> None:
        self.visit(x.stmts)

    def visit_If(self, x: ir.If) -> None:
        self.visit(x.then)
        if x.else_ is not None:
            self.visit(x.else_)

    def visit_list(self, x: list[Any]) -> None:
        for y in x:
            self.visit(y)

    def generic(self, node: Any, *args: Any) -> None:
        return None


class _KeysetCond(ir.Visitor):
    """A select case's keyset → its C condition on the key ``kv`` (masked to ``m``): None for
    ``default``/``_``; a value set is refused at the transition."""

    def __init__(self, g: CGen, t: ir.Transition) -> None:
        self.g, self.t = g, t

    def visit_KeysetDefault(self, ksv: ir.KeysetDefault, kv: str, m: int) -> str | None:
        return None

    def visit_KeysetValue(self, ksv: ir.KeysetValue, kv: str, m: int) -> str:
        return f"{kv} == 0x{ksv.value & m:x}ULL"

    def visit_KeysetMask(self, ksv: ir.KeysetMask, kv: str, m: int) -> str:
        return f"({kv} & 0x{ksv.mask & m:x}ULL) == 0x{ksv.value & ksv.mask & m:x}ULL"

    def visit_KeysetRange(self, ksv: ir.KeysetRange, kv: str, m: int) -> str:
        return f"({kv} >= 0x{ksv.lo & m:x}ULL && {kv} <= 0x{ksv.hi & m:x}ULL)"

    def generic(self, node: Any, *args: Any) -> str:
        raise self.g.refuse("parser value sets", self.t.loc)


class _Equal(ir.Visitor):
    """``a == b`` by the type of ``a``: headers (two invalid ones are equal), structs and
    stacks element by element (nextIndex is not part of the value), varbits by length and
    bits, scalars by value — as the Python target compares them."""

    def __init__(self, g: CGen) -> None:
        self.g = g

    def field(self, a: ir.Expr, b: ir.Expr, f: ir.Field) -> str:
        return self.g.equal(ir.Member(a, f.name, type=f.type), ir.Member(b, f.name, type=f.type))

    def visit_HeaderType(self, t: ir.HeaderType, a: ir.Expr, b: ir.Expr) -> str:
        la, lb = self.g.lval(a), self.g.lval(b)
        fields = " && ".join(
            self.field(a, b, f) if isinstance(f.type, ir.StructType | ir.VarbitType)
            else f"{la}.f_{_cid(f.name)} == {lb}.f_{_cid(f.name)}" for f in t.fields) or "1"
        return f"({la}.valid == {lb}.valid && (!{la}.valid || ({fields})))"

    def visit_StructType(self, t: ir.StructType, a: ir.Expr, b: ir.Expr) -> str:
        # a header_union too: at most one member is valid
        if not t.fields:
            return "1"
        return "(" + " && ".join(self.field(a, b, f) for f in t.fields) + ")"

    def visit_StackType(self, t: ir.StackType, a: ir.Expr, b: ir.Expr) -> str:
        return "(" + " && ".join(
            self.g.equal(ir.StackElem(a, ir.Const(i, type=ir.InfIntType()), type=t.elem),
                         ir.StackElem(b, ir.Const(i, type=ir.InfIntType()), type=t.elem))
            for i in range(t.size)) + ")"

    def visit_VarbitType(self, t: ir.VarbitType, a: ir.Expr, b: ir.Expr) -> str:
        # the same length, and the same bits up to it
        la, lb = self.g.lval(a), self.g.lval(b)
        return f"({la}.len == {lb}.len && {la}.v == {lb}.v)"

    def generic(self, node: Any, *args: Any) -> str:
        a, b = args
        return f"({self.g.ex(a)} == {self.g.ex(b)})"


@dataclass
class _Scope:
    names: dict[str, str]
    block: str
    exit_label: str  # where ``exit`` goes
    return_label: str  # where ``return`` goes
    instances: dict[str, ir.ExternInstance] = field(default_factory=dict)


class CGen(ir.Visitor):
    """Generates the C source for one program (``generate`` below is the entry point).

    The native back end (p4switch.native) subclasses it: it keeps the translation of
    expressions, statements, actions and the parser, and overrides what touches the kernel
    (packet loads, maps, the deparser's frame edits); ``unsupported``/``backend`` name its
    refusals."""

    unsupported: type[P4CompileError] = EbpfUnsupported
    backend = "the eBPF back end"
    for_max = FOR_MAX

    def __init__(self, program: ir.Program, *, drop_port: int = 511,
                 cpu_port: int | None = None) -> None:
        self.p = program
        self.layout = Layout(drop_port=drop_port, cpu_port=cpu_port)
        self.structs: dict[str, str] = {}  # C type name -> definition (in dependency order)
        self.ctx_fields: list[str] = []
        self.maps: list[str] = []
        self.helpers: list[str] = []
        self.lines: list[str] = []
        self.ind = 1
        self.n = 0
        self.loc: ir.SourceLoc | None = None
        self.scope: _Scope | None = None
        self.max_hdr = 8
        self._table_ids: dict[str, str] = {}
        self._inst_maps: dict[str, str] = {}
        self._selectors: dict[str, tuple[ir.Expr, int]] = {}
        self._packed: set[str] = set()
        self._type_locs: dict[str, ir.SourceLoc] | None = None
        self.role = ""  # the v1model block being generated (package role)
        self.repl: set[str] = set()  # replication the program uses: i2e, e2e, mcast
        self._rmw: dict[str, str] = {}  # register -> its cell's pointer, in a locked span
        self.passes: dict[str, ir.SourceLoc | None] = {}  # resubmit/recirculate: first use
        self._keep_done = False
        self._loops: list[tuple[str, str]] = []  # the enclosing for loops' break/continue labels
        self._ctypes = _CTypes(self)
        self._lvals = _LValues(self)
        self._locksafe = _LockSafe(self)
        self._equal = _Equal(self)

    # -- errors ----------------------------------------------------------------------------
    def type_loc(self, t: ir.Type) -> ir.SourceLoc | None:
        """Where the program first uses a value of type ``t`` (types carry no location)."""
        if self._type_locs is None:
            self._type_locs = {}
            _collect_type_locs(self.p, self._type_locs)
        return self._type_locs.get(str(t))

    def refuse(self, what: str, loc: ir.SourceLoc | None = None) -> P4CompileError:
        loc = loc or self.loc
        line = None
        if loc is not None:
            text = self.p.sources.get(loc.file)
            if text is None:
                try:
                    with open(loc.file, encoding="utf-8") as f:
                        text = f.read()
                except OSError:
                    text = None
            if text is not None:
                lines = text.splitlines()
                if 0 < loc.line <= len(lines):
                    line = lines[loc.line - 1]
        return self.unsupported(loc, f"{what} is not supported by {self.backend}", line)

    def load_bytes(self, n: str) -> str:
        """C that copies ``n`` packet bytes from the parser's offset into ``C->xb``: non-zero
        on failure."""
        return f"bpf_skb_load_bytes(skb, C->off, C->xb, {n})"

    # -- output helpers --------------------------------------------------------------------
    def w(self, s: str) -> None:
        self.lines.append("    " * self.ind + s)

    def fresh(self, p: str) -> str:
        self.n += 1
        return f"{p}{self.n}"

    # -- types -----------------------------------------------------------------------------
    def ctype(self, t: ir.Type) -> str:
        """The C type of a value of type ``t`` (its struct defined on first use)."""
        return str(self._ctypes.visit(t))

    # -- expressions -----------------------------------------------------------------------
    def lval(self, e: ir.Expr) -> str:
        """The C l-value of ``e`` (a variable, field, stack element, lookahead scratch)."""
        return str(self._lvals.visit(e))

    # -- header stacks ---------------------------------------------------------------------
    def stack_prop(self, stack: ir.Expr, prop: str) -> str:
        st = stack.type
        assert isinstance(st, ir.StackType)
        if prop == "size":
            return f"{st.size}ULL"
        if prop == "nextIndex":
            return f"{self.lval(stack)}.n"
        if prop == "lastIndex":
            return f"(({self.lval(stack)}.n - 1) & 0xffffffffULL)"
        raise self.refuse(f"the stack property {prop}")

    def elem_at(self, base: str, st: ir.StackType, idx: str) -> str:
        """The element ``idx`` (a run-time value) of the stack ``base`` as an l-value: a chain
        of constant offsets the verifier accepts; out of range, a zeroed invalid scratch header
        (spec 8.27: reads give an unspecified value, BMv2's and the Python target's an invalid
        zero header; writes have no effect)."""
        elem = self.ctype(st.elem)
        oob = f"O_{_cid(st.elem.name)}"
        self.ctx_fields.append(f"    {elem} {oob};")
        ix = self.fresh("_ix")
        chain = "".join(f"{ix} == {i} ? &{base}.e[{i}] : " for i in range(st.size))
        return (f"(*({{ __u64 {ix} = {idx}; {chain}({{ __builtin_memset(&C->{oob}, 0, "
                f"sizeof(C->{oob})); &C->{oob}; }}); }}))")

    def stack_check(self, bad: str) -> None:
        """``.next``/``.last`` out of range: error.StackOutOfBounds in a parser; elsewhere the
        packet is dropped (as the Python target drops it)."""
        assert self.scope is not None
        if self.scope.exit_label == "parser_reject":
            self.w(f"if ({bad}) {{ C->sm.f_parser_error = "
                   f"{self.p.error_code('StackOutOfBounds')}; goto parser_reject; }}")
        else:
            self.w(f"if ({bad}) {{ p4_stat(5); return TC_ACT_SHOT; }}")

    def stack_method(self, s: ir.StackMethod) -> None:
        st = s.stack.type
        assert isinstance(st, ir.StackType)
        b, n, c = self.lval(s.stack), st.size, s.count
        zero = "__builtin_memset(&{0}, 0, sizeof({0}));"
        if s.method == "push_front":
            for i in range(n - 1, c - 1, -1):
                self.w(f"{b}.e[{i}] = {b}.e[{i - c}];")
            for i in range(min(c, n)):
                self.w(zero.format(f"{b}.e[{i}]"))
            self.w(f"{b}.n = {b}.n + {c} > {n} ? {n} : {b}.n + {c};")
        elif s.method == "pop_front":
            for i in range(n - c):
                self.w(f"{b}.e[{i}] = {b}.e[{i + c}];")
            for i in range(max(n - c, 0), n):
                self.w(zero.format(f"{b}.e[{i}]"))
            self.w(f"{b}.n = {b}.n >= {c} ? {b}.n - {c} : 0;")
        else:
            raise self.refuse(f"the stack method {s.method}", s.loc)

    def equal(self, a: ir.Expr, b: ir.Expr) -> str:
        """``a == b`` on headers (two invalid ones are equal), structs and stacks (element by
        element; nextIndex is not part of the value), as the Python target compares them."""
        return str(self._equal.visit(a.type, a, b))

    def sext(self, code: str, w: int) -> str:
        """``code`` (a W-bit pattern) as a signed 64-bit value."""
        if w >= 64:
            return f"((__s64)({code}))"
        return f"(((__s64)(({code}) << {64 - w})) >> {64 - w})"

    def ex(self, e: ir.Expr) -> str:
        """The C code of expression ``e``: one ``visit_<class>`` per IR expression."""
        if e.loc is not None:
            self.loc = e.loc
        return str(self.visit(e))

    def generic(self, node: Any, *args: Any) -> Any:
        what = "statement" if isinstance(node, ir.Stmt) else "expression"
        raise self.refuse(f"the {what} {type(node).__name__}", node.loc)

    def visit_Const(self, e: ir.Const) -> str:
        if isinstance(e.value, str):
            raise self.refuse("a string value", e.loc)
        t = e.type
        v = int(e.value)
        w = _width(t) if not isinstance(t, ir.InfIntType) else 64
        return f"0x{v & ((1 << w) - 1):x}ULL"

    def _as_lvalue(self, e: ir.Expr) -> str:
        """A variable, field, stack element or property, or lookahead: its C l-value."""
        return self.lval(e)

    visit_Var = visit_Member = visit_StackElem = visit_StackNext = _as_lvalue
    visit_StackLast = visit_StackProp = visit_Lookahead = _as_lvalue

    def visit_IsValid(self, e: ir.IsValid) -> str:
        return f"({self.lval(e.header)}.valid)"

    def visit_Slice(self, e: ir.Slice) -> str:
        return f"(({self.ex(e.base)} >> {e.lo}) & {_mask(e.hi - e.lo + 1)})"

    def visit_Concat(self, e: ir.Concat) -> str:
        wr = _width(e.right.type)
        return (f"((({self.ex(e.left)} << {wr}) | {self.ex(e.right)}) & "
                f"{_mask(_width(e.type))})")

    def visit_Cast(self, e: ir.Cast) -> str:
        return self.cast(e)

    def visit_Unary(self, e: ir.Unary) -> str:
        a = self.ex(e.operand)
        if e.op == "!":
            return f"(!{a})"
        if e.op == "~":
            return f"((~{a}) & {_mask(_width(e.type))})"
        if e.op == "-":
            return f"((-{a}) & {_mask(_width(e.type))})"
        raise self.refuse(f"operator {e.op}", e.loc)

    def visit_Binary(self, e: ir.Binary) -> str:
        return self.binary(e)

    def visit_Mux(self, e: ir.Mux) -> str:
        return f"({self.ex(e.cond)} ? {self.ex(e.then)} : {self.ex(e.else_)})"

    def visit_TableHit(self, e: ir.TableHit) -> str:
        """``t.apply().hit``/``.miss``: the table applied in a statement expression."""
        hit = self.fresh("_hit")
        saved, self.lines = self.lines, []
        self.apply_table(e.table, hit_var=hit)
        body = "\n".join(self.lines)
        self.lines = saved
        return (f"({{ __u64 {hit} = 0;\n{body}\n" + "    " * self.ind +
                f"{'!' if e.negate else ''}{hit}; }})")

    def lookahead(self, e: ir.Lookahead) -> str:
        """``lookahead<T>()``: T's bits at the parser's offset, not consumed (PacketTooShort
        if the packet ends first, as on the Python target); a header T is unpacked into a
        scratch header (an l-value), a scalar read as a big-endian number."""
        assert self.scope is not None
        if self.scope.exit_label != "parser_reject":
            raise self.refuse("lookahead outside a parser", e.loc)
        t = e.type
        if isinstance(t, ir.HeaderType):
            if t.varbit is not None:
                raise self.refuse(f"lookahead of {t.name}, a header with a varbit field", e.loc)
            if t.width % 8:
                raise self.refuse(f"lookahead of the {t.width}-bit header {t.name}", e.loc)
            name = self.header_codecs(t)
            nb = t.width // 8
        else:
            w = _width(t)
            if w > 64:
                raise self.refuse(f"lookahead of {w} bits", e.loc)
            nb = (w + 7) // 8
        self.max_hdr = max(self.max_hdr, nb)
        err = self.p.error_code("PacketTooShort")
        self.w(f"if (C->off + {nb} > C->plen || {self.load_bytes(str(nb))}) "
               f"{{ C->sm.f_parser_error = {err}; goto parser_reject; }}")
        if isinstance(t, ir.HeaderType):
            scratch = f"LA_{_cid(t.name)}"
            self.ctx_fields.append(f"    struct {name} {scratch};")
            self.w(f"unpack_{name}(&C->{scratch}, C->xb);")
            return f"C->{scratch}"
        v = self.fresh("_la")
        self.w(f"__u64 {v} = " + " | ".join(
            f"((__u64)C->xb[{i}] << {8 * (nb - 1 - i)})" for i in range(nb)) + ";")
        pad = 8 * nb - _width(t)
        val = f"({v} >> {pad})" if pad else v
        return f"({val} != 0)" if isinstance(t, ir.BoolType) else val

    def cast(self, e: ir.Cast) -> str:
        t, s = e.type, e.expr.type
        a = self.ex(e.expr)
        if isinstance(t, ir.BoolType):
            return f"({a} != 0)"
        w = _width(t)
        if isinstance(s, ir.BoolType | ir.InfIntType):
            return f"(({a}) & {_mask(w)})"
        ws = _width(s)
        if _signed(s) and w > ws:
            return f"((__u64){self.sext(a, ws)} & {_mask(w)})"
        return f"(({a}) & {_mask(w)})"

    def binary(self, e: ir.Binary) -> str:
        op = e.op
        if op in ("&&", "||"):
            return f"({self.ex(e.left)} {op} {self.ex(e.right)})"
        lt = e.left.type
        if op in ("==", "!=") and isinstance(lt, ir.HeaderType | ir.StructType | ir.StackType
                                             | ir.VarbitType):
            eq = self.equal(e.left, e.right)
            return eq if op == "==" else f"(!{eq})"
        a, b = self.ex(e.left), self.ex(e.right)
        if op in ("==", "!="):
            return f"({a} {op} {b})"
        wl = _width(lt) if not isinstance(lt, ir.InfIntType) else 64
        signed = _signed(lt)
        if op in ("<", "<=", ">", ">="):
            if signed:
                return f"({self.sext(a, wl)} {op} {self.sext(b, wl)})"
            return f"({a} {op} {b})"
        w = _width(e.type)
        m = _mask(w)
        if op in ("+", "-", "*", "&", "|", "^"):
            return f"(({a} {op} {b}) & {m})"
        if op in ("/", "%"):
            if signed:
                raise self.refuse(f"signed {op}", e.loc)
            return f"({b} ? ({a} {op} {b}) : 0)"
        if op == "<<":
            return f"({b} >= {w} ? 0 : (({a} << {b}) & {m}))"
        if op == ">>":
            if signed:
                return (f"((__u64)({self.sext(a, w)} >> ({b} >= {w} ? {w - 1} : {b})) "
                        f"& {m})")
            return f"({b} >= {w} ? 0 : ({a} >> {b}))"
        if op in ("|+|", "|-|") and signed:
            if w >= 64:
                raise self.refuse("64-bit signed saturating arithmetic", e.loc)
            lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
            r = f"({self.sext(a, w)} {op[1]} {self.sext(b, w)})"
            return (f"((__u64)({r} > {hi}LL ? {hi}LL : {r} < {lo}LL ? {lo}LL : {r}) "
                    f"& {m})")
        if op == "|+|":
            if w >= 64:
                return f"(({a} + {b}) < {a} ? {m} : ({a} + {b}))"
            return f"(({a} + {b}) > {m} ? {m} : ({a} + {b}))"
        if op == "|-|":
            return f"({a} > {b} ? {a} - {b} : 0)"
        raise self.refuse(f"operator {op}", e.loc)

    # -- statements ------------------------------------------------------------------------
    def stmts(self, ss: list[ir.Stmt]) -> None:
        i = 0
        while i < len(ss):
            region = None if self._rmw else self.rmw_region(ss, i)
            if region is None:
                self.stmt(ss[i])
                i += 1
                continue
            end, cells, idx = region
            self.locked(ss[i:end + 1], cells, idx)
            i = end + 1

    # -- register read-modify-write --------------------------------------------------------
    def _reg_ops(self, x: object, out: list[tuple[str, str, ir.Expr]]) -> None:
        """Every register read/write under ``x``: (control-plane name, method, index)."""
        _RegOps(self, out).visit(x)

    def _lock_safe(self, x: object) -> bool:
        """True if the code for ``x`` calls no helper, leaves no block early and returns
        nothing: what the verifier allows while a bpf_spin_lock is held."""
        return bool(self._locksafe.visit(x))

    def _assigned(self, x: object, out: set[str]) -> None:
        """The C l-values the code for ``x`` may write (assignments and out arguments)."""
        _Assigned(self, out).visit(x)

    def rmw_region(self, ss: list[ir.Stmt], i: int) -> tuple[int, list[str], str] | None:
        """A register read at ``ss[i]`` and the writes, at the same index, of the registers
        read at that index from there on, up to the last statement of ``ss`` that makes one:
        (that statement, the registers, the index in C) if the span can run under one
        bpf_spin_lock (no helper call, no early exit, no other register index, the index not
        written within), else None."""
        if not isinstance(ss[i], ir.ExternCall):
            return None
        first: list[tuple[str, str, ir.Expr]] = []
        self._reg_ops(ss[i], first)
        if not first or first[0][1] != "read" or not self._lock_safe(first[0][2]):
            return None
        saved_lines, saved_loc = self.lines, self.loc
        self.lines = []
        try:
            def c_index(e: ir.Expr) -> str | None:
                if not self._lock_safe(e):
                    return None
                try:
                    return self.ex(e)
                except EbpfUnsupported:  # e.g. a local declared further on
                    return None

            ic = c_index(first[0][2])
            read: list[str] = []
            ends: list[int] = []  # statements that write a register read at ic before them
            for k in range(i, len(ss)):
                ops: list[tuple[str, str, ir.Expr]] = []
                self._reg_ops(ss[k], ops)
                for cp, method, e in ops:
                    if c_index(e) != ic:
                        continue
                    if method == "read" and cp not in read:
                        read.append(cp)
                    elif method == "write" and cp in read and k not in ends:
                        ends.append(k)
            found = None
            for end in reversed(ends):  # the longest span that can be locked
                span = ss[i:end + 1]
                ops = []
                self._reg_ops(span, ops)
                if not self._lock_safe(span) or any(c_index(e) != ic for _, _, e in ops):
                    continue
                written: set[str] = set()
                self._assigned(span, written)
                if not any(w in str(ic) or (w == "C->sm" and "C->sm." in str(ic))
                           for w in written):
                    found = end, list(dict.fromkeys(cp for cp, _, _ in ops))
                    break
        finally:
            self.lines, self.loc = saved_lines, saved_loc
        if found is None or ic is None:
            return None
        return found[0], found[1], ic


    def locked(self, span: list[ir.Stmt], cells: list[str], idx: str) -> None:
        """``span`` under the spin lock of the first register's cell at ``idx``: the cells of
        every register it touches are looked up before (no helper may run under the lock)."""
        ptrs = {}
        self.w("{")
        self.ind += 1
        iv = self.fresh("_ri")
        self.w(f"__u32 {iv} = {idx};")
        for cp in cells:
            inst = self.p.instances.get(cp) or self._find_instance(cp)
            m = self.inst_map(inst)
            size = self.layout.registers[cp].size
            pv = self.fresh("_rc")
            self.w(f"struct p4_reg *{pv} = {iv} < {size} ? bpf_map_lookup_elem(&{m}, &{iv}) : 0;")
            ptrs[cp] = pv
        lead = ptrs[cells[0]]
        self.w(f"if ({lead}) bpf_spin_lock(&{lead}->lock);")
        self._rmw = ptrs
        try:
            self.stmts(span)
        finally:
            self._rmw = {}
        self.w(f"if ({lead}) bpf_spin_unlock(&{lead}->lock);")
        self.ind -= 1
        self.w("}")

    def _find_instance(self, cp: str) -> ir.ExternInstance:
        assert self.scope is not None
        for inst in self.scope.instances.values():
            if inst.cp_name == cp:
                return inst
        raise self.refuse(f"the extern instance {cp}")

    def switch(self, subject: str, cases: list[tuple[list[str] | None, ir.Block | None]]) -> None:
        """A C switch over ``subject``: each case's labels (None: default), then its body and a
        break; a case without a body falls through to the next, as P4's switch cases do."""
        self.w(f"switch ({subject}) {{")
        for labels, body in cases:
            for label in labels if labels is not None else [None]:
                self.w("default:" if label is None else f"case {label}:")
            if body is not None:
                self.ind += 1
                self.block(body)
                self.w("break;")
                self.ind -= 1
        self.w("}")

    def block(self, b: ir.Block) -> None:
        if b.copy_out:
            assert self.scope is not None
            body, out = b.stmts[: len(b.stmts) - b.copy_out], b.stmts[len(b.stmts) - b.copy_out:]
            lbl = self.fresh("_xo")
            outer_exit = self.scope.exit_label
            self.scope.exit_label = lbl
            self.w("{")
            self.ind += 1
            self.stmts(body)
            self.ind -= 1
            self.w("}")
            self.scope.exit_label = outer_exit
            self.w(f"{lbl}:;")
            self.stmts(out)
            self.w(f"if (C->exiting) goto {outer_exit};")
            return
        self.w("{")
        self.ind += 1
        self.stmts(b.stmts)
        self.ind -= 1
        self.w("}")

    def declare_local(self, name: str, t: ir.Type) -> str:
        assert self.scope is not None
        field_name = f"L_{_cid(self.scope.block)}_{_cid(name)}"
        self.ctx_fields.append(f"    {self.ctype(t)} {field_name};")
        self.scope.names[name] = f"C->{field_name}"
        return f"C->{field_name}"

    def assign(self, lhs: ir.Expr, rhs: ir.Expr) -> None:
        if isinstance(lhs, ir.Slice):
            base = self.lval(lhs.base)
            m = (1 << (lhs.hi - lhs.lo + 1)) - 1
            self.w(f"{base} = ({base} & ~(0x{m:x}ULL << {lhs.lo})) | "
                   f"(({self.ex(rhs)} & 0x{m:x}ULL) << {lhs.lo});")
            return
        if (isinstance(lhs, ir.Member) and lhs.field == "mcast_grp"
                and _const_int(rhs) != 0):
            if self.role != "ingress":
                raise self.refuse("a write of mcast_grp outside ingress", lhs.loc or rhs.loc)
            self.repl.add("mcast")
        t = lhs.type
        if isinstance(rhs, ir.ListExpr) and isinstance(t, ir.HeaderType | ir.StructType):
            tgt = self.lval(lhs)
            for f, item in zip(t.fields, rhs.items, strict=True):
                self.assign(ir.Member(lhs, f.name, type=f.type), item)
            if isinstance(t, ir.HeaderType):
                self.w(f"{tgt}.valid = 1;")
            return
        if isinstance(t, ir.HeaderType | ir.StructType | ir.StackType):
            src = self.lval(rhs)  # the right side first (as p4c and the Python target)
            self.w(f"{self.lval(lhs)} = {src};")
            return
        self.w(f"{self.lval(lhs)} = {self.ex(rhs)};")

    def stmt(self, s: ir.Stmt) -> None:
        """Emit statement ``s``: one ``visit_<class>`` per IR statement."""
        if s.loc is not None:
            self.loc = s.loc
        assert self.scope is not None
        self.visit(s)

    def visit_Block(self, s: ir.Block) -> None:
        self.block(s)

    def visit_VarDecl(self, s: ir.VarDecl) -> None:
        v = self.declare_local(s.name, s.type)
        if s.init is not None:
            self.assign(ir.Var(s.name, type=s.type), s.init)
        else:
            self.w(f"__builtin_memset(&{v}, 0, sizeof({v}));")

    def visit_Assign(self, s: ir.Assign) -> None:
        self.assign(s.lhs, s.rhs)

    def visit_If(self, s: ir.If) -> None:
        self.w(f"if ({self.ex(s.cond)})")
        self.block(s.then)
        if s.else_ is not None:
            self.w("else")
            self.block(s.else_)

    def visit_ApplyTable(self, s: ir.ApplyTable) -> None:
        self.apply_table(s.table)

    def visit_SwitchAction(self, s: ir.SwitchAction) -> None:
        act = self.fresh("_act")
        self.w(f"__u32 {act} = 0;")
        self.apply_table(s.table, act_var=act)
        tl = self.layout.tables[self.table(s.table).cp_name]
        self.switch(act, [(None if c.actions is None
                           else [str(tl.actions.index(a) + 1) for a in c.actions], c.body)
                          for c in s.cases])

    def visit_SwitchValue(self, s: ir.SwitchValue) -> None:
        w = _width(s.expr.type)
        self.switch(self.ex(s.expr), [(None if c.values is None
                                       else [f"0x{int(v.value) & ((1 << w) - 1):x}ULL"
                                             for v in c.values], c.body)
                                      for c in s.cases])

    def visit_ActionCall(self, s: ir.ActionCall) -> None:
        self.call_action(s.action, s.args, [])

    def visit_ExternCall(self, s: ir.ExternCall) -> None:
        self.extern_call(s)

    def visit_StackMethod(self, s: ir.StackMethod) -> None:
        self.stack_method(s)

    def visit_HeaderMethod(self, s: ir.HeaderMethod) -> None:
        self.w(f"{self.lval(s.header)}.valid = {1 if s.method == 'setValid' else 0};")

    def visit_Exit(self, s: ir.Exit) -> None:
        assert self.scope is not None
        self.w("C->exiting = 1;")
        self.w(f"goto {self.scope.exit_label};")

    def visit_Return(self, s: ir.Return) -> None:
        assert self.scope is not None
        self.w(f"goto {self.scope.return_label};")

    def visit_Extract(self, s: ir.Extract) -> None:
        self.extract(s)

    def visit_Advance(self, s: ir.Advance) -> None:
        b = _const_int(s.bits)
        if b is not None and b % 8:
            raise self.refuse("advance by bits that are not whole bytes", s.loc)
        err = self.p.error_code("PacketTooShort")
        self.w(f"{{ __u64 _adv = ({self.ex(s.bits)}) >> 3; if (C->off + _adv > C->plen) "
               f"{{ C->sm.f_parser_error = {err}; goto parser_reject; }} "
               f"C->off += (__u32)_adv; }}")

    def visit_For(self, s: ir.For) -> None:
        self.for_loop(s)

    def visit_Break(self, s: ir.Break | ir.Continue) -> None:
        if not self._loops:
            raise self.refuse(f"{type(s).__name__.lower()} outside a loop", s.loc)
        brk, cont = self._loops[-1]
        self.w(f"goto {brk if isinstance(s, ir.Break) else cont};")

    visit_Continue = visit_Break

    def visit_Emit(self, s: ir.Emit) -> None:
        raise self.refuse("emit outside the deparser's top level", s.loc)

    def for_loop(self, s: ir.For) -> None:
        """``for``: a C loop bounded by ``FOR_MAX`` iterations, so the verifier can see it end;
        a packet whose loop would go round once more is dropped (counted ``unsupported``)."""
        brk, cont, it = self.fresh("_brk"), self.fresh("_cont"), self.fresh("_it")
        self.w("{")
        self.ind += 1
        self.stmts(s.init)
        self.w(f"for (__u32 {it} = 0; ; {it}++) {{")
        self.ind += 1
        self.w(f"if (!({self.ex(s.cond)})) break;")
        self.w(f"if ({it} >= {self.for_max}) {{ p4_stat(7); return TC_ACT_SHOT; }}")
        self._loops.append((brk, cont))
        try:
            self.block(s.body)
        finally:
            self._loops.pop()
        self.w(f"{cont}:;")
        self.stmts(s.update)
        self.ind -= 1
        self.w("}")
        self.w(f"{brk}:;")
        self.ind -= 1
        self.w("}")

    # -- actions ---------------------------------------------------------------------------
    def call_action(self, key: str, args: list[ir.Expr], data: list[str]) -> None:
        """Inline action ``key``: ``args`` bind its directional parameters (copy-in/copy-out),
        ``data`` are C expressions for its data parameters."""
        assert self.scope is not None
        act = self.p.actions[key]
        if act.loc is not None:
            self.loc = act.loc
        aid = _cid(key)
        names = dict(self.scope.names)
        # ``args`` bind the leading parameters (a direct call binds data parameters too,
        # as ``in``), ``data`` the data parameters a table entry supplies
        dirs = act.params[:len(args)]
        datas = [p for p in act.params[len(args):] if p.direction == ""]
        self.w("{")
        self.ind += 1
        for p, a in zip(dirs, args, strict=False):
            fname = f"A_{aid}_{_cid(p.name)}"
            self.ctx_fields.append(f"    {self.ctype(p.type)} {fname};")
            names[p.name] = f"C->{fname}"
            if p.direction in ("in", "inout", ""):
                if isinstance(p.type, ir.HeaderType | ir.StructType | ir.StackType):
                    self.w(f"C->{fname} = {self.lval(a)};")
                else:
                    self.w(f"C->{fname} = {self.ex(a)};")
            else:
                self.w(f"__builtin_memset(&C->{fname}, 0, sizeof(C->{fname}));")
        for p, d in zip(datas, data, strict=False):
            fname = f"A_{aid}_{_cid(p.name)}"
            self.ctx_fields.append(f"    __u64 {fname};")
            names[p.name] = f"C->{fname}"
            self.w(f"C->{fname} = {d} & {_mask(_width(p.type))};")
        ret = self.fresh("_ret")
        saved = self.scope
        # return and exit both end the action here: its out/inout arguments are copied out
        # either way (spec: exit copies out); exit then goes on to end the control
        self.scope = _Scope(names, saved.block, ret, ret, saved.instances)
        self.block(act.body)
        self.scope = saved
        self.w(f"{ret}:;")
        for p, a in zip(dirs, args, strict=False):
            if p.direction in ("out", "inout"):
                self.w(f"{self.lval(a)} = C->A_{aid}_{_cid(p.name)};")
        self.w(f"if (C->exiting) goto {saved.exit_label};")
        self.ind -= 1
        self.w("}")

    # -- tables ----------------------------------------------------------------------------
    def table(self, name: str) -> ir.Table:
        assert self.scope is not None
        c = self.p.controls[self.scope.block]
        return c.tables[name]

    def table_layout(self, t: ir.Table) -> TableLayout:
        tl = self.layout.tables.get(t.cp_name)
        if tl is not None:
            return tl
        profile = sel_algo = None
        sel_width = 0
        if t.implementation is not None:
            inst = self.instance(t.implementation)
            profile = inst.cp_name
            if t.direct_counter is not None or t.direct_meter is not None:
                raise self.refuse("a direct counter or meter on an action-profile table", t.loc)
            if inst.type_name == "action_selector":
                sel_algo = inst.args[0]
                sel_width = (_const_int(inst.args[2]) or 0) if len(inst.args) > 2 else 0
            elif inst.type_name != "action_profile":
                raise self.refuse(f"the implementation {inst.type_name}", t.loc)
        kinds = [k.match_kind for k in t.keys if k.match_kind != "selector"]
        keys = []
        for k in t.keys:
            if k.match_kind == "selector":
                if sel_algo is None:
                    raise self.refuse("selector keys without an action selector", t.loc)
                continue  # hashed to choose a group's member (apply_table)
            w = k.width
            if w > 64:
                raise self.refuse(f"the {w}-bit key {k.name}", t.loc)
            keys.append(KeyLayout(k.name, k.match_kind, w))
        if any(m in ("ternary", "range", "optional") for m in kinds) or kinds.count("lpm") > 1:
            kind = TableKind.SCAN
        elif kinds.count("lpm") == 1:
            kind = TableKind.LPM
            keys = [k for k in keys if k.match_kind != "lpm"] + \
                [k for k in keys if k.match_kind == "lpm"]
        else:
            kind = TableKind.EXACT
        acts = [r.action for r in t.actions]
        n_data = max([len(self.p.actions[a].data_params) for a in acts] + [1])
        idx = len(self.layout.tables)
        size = max(1, min(t.size, SCAN_MAX) if kind is TableKind.SCAN else t.size)
        dm = None
        if t.direct_meter is not None:
            inst = self.instance(t.direct_meter)
            dm = "packets" if _enum_member(inst.args[0]) == "packets" else "bytes"
        tl = TableLayout(t.cp_name, f"t{idx}", kind, keys, acts, n_data, size,
                         direct_counter=t.direct_counter is not None, direct_meter=dm,
                         profile=profile, selector=sel_algo is not None)
        self.layout.tables[t.cp_name] = tl
        if sel_algo is not None:
            self._selectors[t.cp_name] = (sel_algo, sel_width)
        self.declare_table_maps(tl)
        return tl

    def declare_table_maps(self, tl: TableLayout) -> None:
        m = tl.map_name
        self.structs[f"{m}_val"] = (f"struct {m}_val {{ __u32 action; __u32 pad; __u64 packets; "
                                    f"__u64 bytes; __u64 d[{tl.n_data}]; }};")
        self.maps.append(map_decl(f"{m}_def", "BPF_MAP_TYPE_ARRAY", "__u32", f"struct {m}_val", 1))
        if tl.selector:  # a group entry's action is GROUP_FLAG | its slot here
            self.structs[f"{m}_grp"] = (f"struct {m}_grp {{ __u32 n; __u32 pad; "
                                        f"struct {m}_val m[{GROUP_MAX}]; }};")
            self.maps.append(map_decl(f"{m}_grp", "BPF_MAP_TYPE_ARRAY", "__u32", f"struct {m}_grp",
                                  tl.n_groups))
        if tl.direct_meter:  # the entry's meter: slot ``pad`` (1-based) of this array
            self.maps.append(map_decl(f"{m}_dm", "BPF_MAP_TYPE_ARRAY", "__u32", "struct p4_meter",
                                  tl.size + 1))
        if tl.kind is TableKind.EXACT:
            kb = max(tl.key_bytes, 1)
            self.structs[f"{m}_key"] = f"struct {m}_key {{ __u8 b[{kb}]; }};"
            self.maps.append(map_decl(m, "BPF_MAP_TYPE_HASH", f"struct {m}_key", f"struct {m}_val",
                                  tl.size))
        elif tl.kind is TableKind.LPM:
            self.structs[f"{m}_key"] = (f"struct {m}_key {{ __u32 prefixlen; "
                                        f"__u8 b[{tl.key_bytes}]; }};")
            self.maps.append(map_decl(m, "BPF_MAP_TYPE_LPM_TRIE", f"struct {m}_key",
                                  f"struct {m}_val", tl.size, "BPF_F_NO_PREALLOC"))
        else:
            n = len(tl.keys)
            self.structs[f"{m}_ent"] = (f"struct {m}_ent {{ struct {m}_val v; __u64 lo[{n}]; "
                                        f"__u64 hi[{n}]; __u64 m[{n}]; }};")
            self.structs[f"{m}_scan"] = (f"struct {m}_scan {{ __u64 k[{n}]; "
                                         f"struct {m}_val *v; }};")
            self.maps.append(map_decl(m, "BPF_MAP_TYPE_ARRAY", "__u32", f"struct {m}_ent", tl.size))
            self.maps.append(map_decl(f"{m}_n", "BPF_MAP_TYPE_ARRAY", "__u32", "__u32", 1))
            conds = " && ".join(
                f"(e->lo[{i}] <= (s->k[{i}] & e->m[{i}])) && ((s->k[{i}] & e->m[{i}]) <= "
                f"e->hi[{i}])" for i in range(n)) or "1"
            self.helpers.append(
                f"static long {m}_cb(__u32 i, void *data) {{\n"
                f"    struct {m}_scan *s = data;\n"
                f"    struct {m}_ent *e = bpf_map_lookup_elem(&{m}, &i);\n"
                f"    if (!e) return 1;\n"
                f"    if ({conds}) {{ s->v = &e->v; return 1; }}\n"
                f"    return 0;\n}}")

    def apply_table(self, name: str, hit_var: str | None = None,
                    act_var: str | None = None) -> None:
        t = self.table(name)
        if t.loc is not None:
            self.loc = t.loc
        tl = self.table_layout(t)
        m = tl.map_name
        by_name = {k.name: k for k in t.keys}
        v = self.fresh("_v")
        self.w("{")
        self.ind += 1
        self.w(f"struct {m}_val *{v} = 0;")
        if tl.kind is TableKind.SCAN:
            s = self.fresh("_s")
            self.w(f"struct {m}_scan {s} = {{}};")
            for i, k in enumerate(tl.keys):
                self.w(f"{s}.k[{i}] = {self.key_value(by_name[k.name])};")
            self.w(f"{{ __u32 _z = 0; __u32 *_n = bpf_map_lookup_elem(&{m}_n, &_z);")
            self.w(f"  if (_n && *_n) bpf_loop(*_n > {tl.size} ? {tl.size} : *_n, {m}_cb, "
                   f"&{s}, 0); }}")
            self.w(f"{v} = {s}.v;")
        elif tl.key_bytes == 0:
            pass  # keyless: always the default action
        else:
            kn = self.fresh("_k")
            self.w(f"struct {m}_key {kn};")
            self.w(f"__builtin_memset(&{kn}, 0, sizeof({kn}));")
            off = 0
            for kl in tl.keys:
                kv = self.fresh("_kv")
                self.w(f"__u64 {kv} = {self.key_value(by_name[kl.name])};")
                shift = 8 * kl.nbytes - kl.width if kl.match_kind == "lpm" else 0
                if shift:
                    self.w(f"{kv} <<= {shift};")
                for i in range(kl.nbytes):
                    self.w(f"{kn}.b[{off + i}] = ({kv} >> {8 * (kl.nbytes - 1 - i)}) & 0xff;")
                off += kl.nbytes
            if tl.kind is TableKind.LPM:
                self.w(f"{kn}.prefixlen = {8 * tl.key_bytes};")
            self.w(f"{v} = bpf_map_lookup_elem(&{m}, &{kn});")
        if tl.selector:
            self.select_member(t, tl, v)
        if hit_var:
            self.w(f"{hit_var} = {v} != 0;")
        if tl.direct_counter:
            self.w(f"if ({v}) {{ __sync_fetch_and_add(&{v}->packets, 1); "
                   f"__sync_fetch_and_add(&{v}->bytes, C->sm.f_packet_length); }}")
        if tl.direct_meter:
            units = "1" if tl.direct_meter == "packets" else "C->sm.f_packet_length"
            self.w(f"C->dm_colour = 0; if ({v} && {v}->pad) {{ __u32 _ms = {v}->pad; "
                   f"struct p4_meter *_m = bpf_map_lookup_elem(&{m}_dm, &_ms); "
                   f"if (_m) C->dm_colour = p4_meter_exec(_m, C->now_us, {units}); }}")
        self.w(f"if (!{v}) {{ __u32 _z = 0; {v} = bpf_map_lookup_elem(&{m}_def, &_z); }}")
        self.w(f"if ({v}) {{")
        self.ind += 1
        if act_var:
            self.w(f"{act_var} = {v}->action;")
        self.w(f"switch ({v}->action) {{")
        for i, ref in enumerate(t.actions):
            act = self.p.actions[ref.action]
            self.w(f"case {i + 1}:")
            self.ind += 1
            data = [f"{v}->d[{j}]" for j in range(len(act.data_params))]
            self.call_action(ref.action, list(ref.args), data)
            self.w("break;")
            self.ind -= 1
        self.w("}")
        self.ind -= 1
        self.w("}")
        self.ind -= 1
        self.w("}")

    def select_member(self, t: ir.Table, tl: TableLayout, v: str) -> None:
        """A group entry: the selector's hash over the selector keys (as ``hash``), masked to
        its output width, modulo the group's size picks the member (the group lists its
        members in ascending id order, each repeated by its weight), as the Python target
        picks it; an empty group is a miss."""
        m = tl.map_name
        algo, width = self._selectors[t.cp_name]
        sel = [k.expr for k in t.keys if k.match_kind == "selector"]
        self.w(f"if ({v} && ({v}->action & {GROUP_FLAG:#x}U)) {{")
        self.ind += 1
        self.w(f"__u32 _gs = {v}->action & 0xffffU;")
        self.w(f"struct {m}_grp *_g = bpf_map_lookup_elem(&{m}_grp, &_gs);")
        self.w(f"{v} = 0;")
        self.w("if (_g && _g->n) {")
        self.ind += 1
        h = self.hash_value(algo, ir.ListExpr(sel, type=ir.TupleType(
            tuple(e.type for e in sel))))
        self.w(f"__u64 _gh = ({h}) & {_mask(width) if width else _mask(64)};")
        self.w("__u32 _gi = _gh % _g->n;")
        self.w(f"if (_gi < {GROUP_MAX}) {v} = &_g->m[_gi];")
        self.ind -= 1
        self.w("}")
        self.ind -= 1
        self.w("}")

    def key_value(self, k: ir.TableKey) -> str:
        return f"(({self.ex(k.expr)}) & {_mask(k.width)})"

    # -- externs ---------------------------------------------------------------------------
    def instance(self, name: str) -> ir.ExternInstance:
        assert self.scope is not None
        inst = self.scope.instances.get(name) or self.p.instances.get(name)
        if inst is None:
            raise self.refuse(f"the extern instance {name}")
        return inst

    def inst_map(self, inst: ir.ExternInstance) -> str:
        got = self._inst_maps.get(inst.cp_name)
        if got is not None:
            return got
        size = _const_int(inst.args[0]) if inst.args else None
        if inst.type_name == "counter" and size is not None:
            name = f"c{len(self.layout.counters)}"
            self.layout.counters[inst.cp_name] = CounterLayout(inst.cp_name, name, size)
            self.maps.append(map_decl(name, "BPF_MAP_TYPE_PERCPU_ARRAY", "__u32", "struct p4_cval",
                                  max(size, 1)))
        elif inst.type_name == "register" and size is not None:
            w = _width(inst.type_args[0]) if inst.type_args else 64
            if w > 64:
                raise self.refuse(f"a register of {w}-bit cells", inst.loc)
            name = f"r{len(self.layout.registers)}"
            self.layout.registers[inst.cp_name] = RegisterLayout(inst.cp_name, name, size, w)
            self.maps.append(map_decl(name, "BPF_MAP_TYPE_ARRAY", "__u32", "struct p4_reg",
                                  max(size, 1)))
        elif inst.type_name == "meter" and size is not None:
            name = f"m{len(self.layout.meters)}"
            packets = _enum_member(inst.args[1]) == "packets"
            self.layout.meters[inst.cp_name] = MeterLayout(inst.cp_name, name, size, packets)
            self.maps.append(map_decl(name, "BPF_MAP_TYPE_ARRAY", "__u32", "struct p4_meter",
                                  max(size, 1)))
        else:
            raise self.refuse(f"the extern {inst.type_name}", inst.loc)
        self._inst_maps[inst.cp_name] = name
        return name

    def extern_call(self, s: ir.ExternCall) -> None:
        if s.instance is not None:
            inst = self.instance(s.instance)
            if inst.type_name == "direct_counter" and s.method == "count":
                return  # counted by the table lookup
            if inst.type_name == "direct_meter" and s.method == "read":
                self.w(f"{self.lval(s.args[0])} = C->dm_colour;")  # the table lookup's colour
                return
            m = self.inst_map(inst)
            if inst.type_name == "meter" and s.method == "execute_meter":
                ml = self.layout.meters[inst.cp_name]
                idx, out = s.args
                units = "1" if ml.packets else "C->sm.f_packet_length"
                self.w(f"{{ __u32 _i = {self.ex(idx)}; if (_i < {ml.size}) {{ "
                       f"struct p4_meter *_m = bpf_map_lookup_elem(&{m}, &_i); "
                       f"{self.lval(out)} = _m ? p4_meter_exec(_m, C->now_us, {units}) : 0; }} }}")
                return
            if inst.type_name == "counter" and s.method == "count":
                lo = self.layout.counters[inst.cp_name]
                self.w(f"{{ __u32 _i = {self.ex(s.args[0])}; if (_i < {lo.size}) {{ "
                       f"struct p4_cval *_c = bpf_map_lookup_elem(&{m}, &_i); "
                       f"if (_c) {{ _c->packets += 1; _c->bytes += C->sm.f_packet_length; }} }} }}")
                return
            if inst.type_name == "register":
                rl = self.layout.registers[inst.cp_name]
                cell = self._rmw.get(inst.cp_name)  # in a locked span: looked up before
                if s.method == "read":
                    out, idx = s.args
                    if cell is not None:
                        self.w(f"{self.lval(out)} = {cell} ? ({cell}->v & {_mask(rl.width)}) "
                               f": 0;")
                        return
                    self.w(f"{{ __u32 _i = {self.ex(idx)}; struct p4_reg *_r = _i < {rl.size} ? "
                           f"bpf_map_lookup_elem(&{m}, &_i) : 0; "
                           f"{self.lval(out)} = _r ? (_r->v & {_mask(rl.width)}) : 0; }}")
                    return
                if s.method == "write":
                    idx, val = s.args
                    if cell is not None:
                        self.w(f"if ({cell}) {cell}->v = ({self.ex(val)}) & {_mask(rl.width)};")
                        return
                    self.w(f"{{ __u32 _i = {self.ex(idx)}; if (_i < {rl.size}) {{ "
                           f"struct p4_reg *_r = bpf_map_lookup_elem(&{m}, &_i); "
                           f"if (_r) _r->v = ({self.ex(val)}) & {_mask(rl.width)}; }} }}")
                    return
            raise self.refuse(f"{inst.type_name}.{s.method}", s.loc)
        fn = s.method
        a = s.args
        if fn == "mark_to_drop":
            sm = self.lval(a[0]) if a else "C->sm"
            self.w(f"{sm}.f_egress_spec = {self.layout.drop_port};")
            self.w(f"{sm}.f_mcast_grp = 0;")
        elif fn == "hash":
            out, algo, base, data, mx = a
            h = self.hash_value(algo, data)
            wout = _width(out.type)
            hv = self.fresh("_h")
            self.w(f"__u64 {hv} = {h};")
            mxc = self.ex(mx)
            self.w(f"{self.lval(out)} = ({self.ex(base)} + ({mxc} ? {hv} % {mxc} : {hv})) & "
                   f"{_mask(wout)};")
        elif fn in ("verify_checksum", "update_checksum"):
            cond, data, fld, algo = a
            self.w(f"if ({self.ex(cond)}) {{")
            self.ind += 1
            h = self.hash_value(algo, data)
            wf = _width(fld.type)
            if fn == "verify_checksum":
                self.w(f"if ((({h}) & {_mask(wf)}) != {self.ex(fld)}) "
                       f"C->sm.f_checksum_error = 1;")
            else:
                self.w(f"{self.lval(fld)} = ({h}) & {_mask(wf)};")
            self.ind -= 1
            self.w("}")
        elif fn == "random":
            rout, rlo, rhi = a
            self.w(f"{{ __u64 _lo = {self.ex(rlo)}, _hi = {self.ex(rhi)}; {self.lval(rout)} = "
                   f"_hi > _lo ? _lo + (__u64)bpf_get_prandom_u32() % (_hi - _lo + 1) : _lo; }}")
        elif fn in ("assert", "assume"):
            self.w(f"if (!({self.ex(a[0])})) {{ p4_stat(9); return TC_ACT_SHOT; }}")
        elif fn == "verify":
            self.w(f"if (!({self.ex(a[0])})) {{ C->sm.f_parser_error = {self.ex(a[1])}; "
                   f"goto parser_reject; }}")
        elif fn == "log_msg":
            pass  # no log in the kernel (documented)
        elif fn == "digest":
            self.digest(s)
        elif fn in ("clone", "clone_preserving_field_list"):
            self.clone(s)
        elif fn in ("resubmit", "resubmit_preserving_field_list", "recirculate",
                    "recirculate_preserving_field_list"):
            kind = fn.split("_")[0]
            if self.role != ("ingress" if kind == "resubmit" else "egress"):
                raise self.refuse(f"{fn} in {self.role or 'this block'}", s.loc)
            self.passes.setdefault(kind, s.loc)
            flag = "rs" if kind == "resubmit" else "rc"
            fl = self.ex(a[0]) if fn.endswith("_field_list") else "0xffffffffULL"
            self.w(f"C->{flag}_on = 1; C->{flag}_fl = (__u32)({fl});")
        else:
            raise self.refuse(f"the extern function {fn}", s.loc)

    def clone(self, s: ir.ExternCall) -> None:
        """Record the clone request (the last one wins, as on the Python target); the copies
        are made at the end of ingress (I2E) or egress (E2E) by clone-redirect."""
        if self.role not in ("ingress", "egress"):
            raise self.refuse(f"{s.method} outside ingress and egress", s.loc)
        self.repl.add("i2e" if self.role == "ingress" else "e2e")
        fl = self.ex(s.args[2]) if s.method == "clone_preserving_field_list" else "0xffffffffULL"
        self.w(f"C->cl_on = 1; C->cl_sess = (__u32)({self.ex(s.args[1])}); "
               f"C->cl_fl = (__u32)({fl});")

    def digest(self, s: ir.ExternCall) -> None:
        """``digest<T>(receiver, data)``: one record (T's id, the receiver, T's fields) into
        the ``p4digests`` ring buffer, read by the switch process (a P4Runtime DigestList)."""
        receiver, data = s.args
        t = s.type_args[0] if s.type_args else data.type
        if not isinstance(t, ir.StructType):
            raise self.refuse(f"a digest of {t}", s.loc)
        if len(t.fields) > DIGEST_MAX or any(
                not isinstance(f.type, ir.BitsType | ir.BoolType | ir.EnumType)
                or _width(f.type) > 64 for f in t.fields):
            raise self.refuse(f"a digest of {t.name} (at most {DIGEST_MAX} fields of up to "
                              f"64 bits)", s.loc)
        dl = self.layout.digests.get(t.name)
        if dl is None:
            dl = DigestLayout(t.name, len(self.layout.digests) + 1,
                              [(f.name, _width(f.type)) for f in t.fields])
            self.layout.digests[t.name] = dl
            if len(self.layout.digests) == 1:
                self.maps.append("struct { __uint(type, BPF_MAP_TYPE_RINGBUF); "
                                 "__uint(max_entries, 1 << 16); } p4digests SEC(\".maps\");")
                self.ctx_fields.append(f"    struct {{ __u32 id; __u32 receiver; "
                                       f"__u64 v[{DIGEST_MAX}]; }} dg;")
        if isinstance(data, ir.ListExpr):
            vals = [self.ex(i) for i in data.items]
        else:
            d = self.lval(data)
            vals = [f"{d}.f_{_cid(f.name)}" for f in t.fields]
        self.w("{")
        self.ind += 1
        self.w(f"C->dg.id = {dl.id}; C->dg.receiver = {self.ex(receiver)};")
        for i, (v, (_, w)) in enumerate(zip(vals, dl.fields, strict=True)):
            self.w(f"C->dg.v[{i}] = ({v}) & {_mask(w)};")
        self.w(f"bpf_ringbuf_output(&p4digests, &C->dg, {8 + 8 * len(dl.fields)}, 0);")
        self.ind -= 1
        self.w("}")

    def flatten(self, e: ir.Expr, valid: str | None = None) -> list[tuple[str, int, str | None]]:
        """(value, width, validity or None) of each scalar of a hash input, in order (the
        scalars of a header, struct fields too, carry that header's validity)."""
        t = e.type
        if isinstance(e, ir.ListExpr) and not isinstance(t, ir.HeaderType | ir.StructType):
            return [x for i in e.items for x in self.flatten(i)]
        if isinstance(t, ir.HeaderType):
            v = f"{self.lval(e)}.valid"
            return [x for f in t.fields
                    for x in self.flatten(ir.Member(e, f.name, type=f.type), v)]
        if isinstance(t, ir.StructType):
            return [x for f in t.fields
                    for x in self.flatten(ir.Member(e, f.name, type=f.type), valid)]
        if isinstance(t, ir.StackType):
            return [x for i in range(t.size) for x in self.flatten(
                ir.StackElem(e, ir.Const(i, type=ir.InfIntType()), type=t.elem))]
        if valid is None and isinstance(e, ir.Member) and isinstance(e.base.type, ir.HeaderType):
            valid = f"{self.lval(e.base)}.valid"
        if isinstance(t, ir.VarbitType):  # its current length of bits: width -max_width
            return [(self.lval(e), -t.max_width, valid)]
        w = _width(t)
        return [(f"(({self.ex(e)}) & {_mask(w)})", w, valid)]

    def hash_value(self, algo: ir.Expr, data: ir.Expr) -> str:
        """Emit the hash input into ``C->hb`` and return the algorithm's value over it."""
        name = _enum_member(algo)
        if name not in ("crc16", "crc32", "csum16", "xor16", "identity"):
            raise self.refuse(f"HashAlgorithm.{name}")
        items = self.flatten(data)
        total = sum(abs(w) for _, w, _ in items)
        if (total + 7) // 8 > HASH_BUF:
            raise self.refuse(f"a hash input of {total} bits")
        valids = sorted({v for _, _, v in items if v is not None})
        nb = self.fresh("_nb")
        self.w(f"__u32 {nb};")
        cond = " && ".join(valids) or "1"
        if any(w < 0 for _, w, _ in items):  # a varbit: positions known only at run time
            cond = "0"
        self.w(f"if ({cond}) {{")
        self.ind += 1
        # every field present: the bit positions are known here, so the bytes are built with
        # constant shifts
        self.w(f"__builtin_memset(C->hb, 0, {(total + 7) // 8 or 1});")
        pos = 0
        for code, w, _ in items:
            if w >= 0:
                self.put_bits(code, w, pos)
                pos += w
        self.w(f"{nb} = {(total + 7) // 8};")
        self.ind -= 1
        self.w("} else {")
        self.ind += 1
        self.w(f"__builtin_memset(C->hb, 0, {HASH_BUF});")
        self.w("__u32 _p = 0;")
        for code, w, valid in items:
            guard = f"if ({valid}) " if valid else ""
            if w < 0:
                self.w(f"{guard}_p = p4_put_bits(C->hb, _p, {code}.v, (__u32){code}.len);")
            else:
                self.w(f"{guard}_p = p4_put_bits(C->hb, _p, {code}, {w});")
        self.w(f"{nb} = (_p + 7) >> 3;")
        self.ind -= 1
        self.w("}")
        return f"p4_{name}(C->hb, {nb})"

    def put_bits(self, code: str, w: int, pos: int) -> None:
        """OR the w-bit value ``code`` into C->hb at the constant bit position ``pos``."""
        val = self.fresh("_b")
        self.w(f"__u64 {val} = {code};")
        first, last = pos // 8, (pos + w - 1) // 8
        for i in range(first, last + 1):
            start, end = max(pos, 8 * i), min(pos + w, 8 * i + 8)
            n = end - start
            self.w(f"C->hb[{i}] |= (__u8)((({val} >> {pos + w - end}) & 0x{(1 << n) - 1:x}) "
                   f"<< {8 * i + 8 - end});")

    # -- parser ----------------------------------------------------------------------------
    def header_codecs(self, t: ir.HeaderType) -> str:
        """Names of the unpack/pack helpers for header type ``t`` (generated once). A header
        with a varbit field: ``unpack(h, b, L)`` takes the varbit's length in bytes; the fixed
        fields after it start L bytes further on."""
        name = f"H_{_cid(t.name)}"
        if name in self._packed:
            return name
        self._packed.add(name)
        self.ctype(t)
        before, vb, after = _split_varbit(t)
        un_b, pk_b = _codec_lines(before, "b")
        if vb is None:
            un = [f"static __always_inline void unpack_{name}(struct {name} *h, const __u8 *b) {{",
                  *un_b, "    h->valid = 1;\n}"]
            pk = [f"static __always_inline void pack_{name}(const struct {name} *h, __u8 *b) {{",
                  *pk_b, "}"]
        else:
            vpath, vt = vb
            assert isinstance(vt, ir.VarbitType)
            pre = sum(_width(ft) for _, ft in before) // 8
            maxl = vt.max_width // 8
            un_a, pk_a = _codec_lines(after, "a")
            un = [f"static __always_inline void unpack_{name}(struct {name} *h, const __u8 *b, "
                  f"__u32 L) {{", f"    L = P4_BOUND(L, {maxl});", *un_b,
                  "    __u64 v = 0;",
                  f"    for (__u32 i = 0; i < {maxl}; i++) {{ if (i >= L) break; "
                  f"v = (v << 8) | b[{pre} + i]; }}",
                  f"    h->{vpath}.v = v; h->{vpath}.len = L * 8;",
                  f"    const __u8 *a = b + {pre} + P4_BOUND(L, {maxl});", *un_a, "    h->valid = 1;\n}"]
            pk = [f"static __always_inline void pack_{name}(const struct {name} *h, __u8 *b) {{",
                  f"    __u32 L = P4_BOUND(h->{vpath}.len >> 3, {maxl});",
                  *pk_b,
                  f"    for (__u32 i = 0; i < {maxl}; i++) {{ if (i >= L) break; "
                  f"b[{pre} + i] = (__u8)(h->{vpath}.v >> (8 * (L - 1 - i))); }}",
                  f"    __u8 *a = b + {pre} + P4_BOUND(L, {maxl});", *pk_a, "}"]
        self.helpers.append("\n".join(un))
        self.helpers.append("\n".join(pk))
        return name

    def header_bytes(self, lv: str, t: ir.HeaderType) -> str:
        """The C expression for the bytes header ``lv`` (of type ``t``) takes on the wire."""
        _, vb, _ = _split_varbit(t)
        if vb is None:
            return str(t.width // 8)
        vt = vb[1]
        assert isinstance(vt, ir.VarbitType)
        maxl = vt.max_width // 8
        vl = f"{lv}.{vb[0]}.len >> 3"
        return f"({t.min_width // 8} + (({vl}) > {maxl} ? {maxl} : ({vl})))"

    def extract(self, s: ir.Extract) -> None:
        t = s.header.type
        if not isinstance(t, ir.HeaderType):
            raise self.refuse(f"extract of {t}", s.loc)
        if t.varbit is not None or s.bits is not None:
            self.extract_varbit(s, t)
            return
        name = self.header_codecs(t)
        nb = t.width // 8
        err = self.p.error_code("PacketTooShort")
        self.w(f"if (C->off + {nb} > C->plen || {self.load_bytes(str(nb))}) "
               f"{{ C->sm.f_parser_error = {err}; goto parser_reject; }}")
        self.w(f"unpack_{name}(&{self.lval(s.header)}, C->xb);")
        nxt = s.header.base if isinstance(s.header, ir.Member) else s.header  # us.next.a
        if isinstance(nxt, ir.StackNext):  # checked (StackOutOfBounds) by lval
            self.w(f"{self.lval(nxt.stack)}.n += 1;")
        self.w(f"C->off += {nb};")

    def extract_varbit(self, s: ir.Extract, t: ir.HeaderType) -> None:
        """``extract(hdr, bits)``: the checks in BMv2's order, as the Python target
        (ParserInvalidArgument, HeaderTooShort, PacketTooShort; the header unchanged by each),
        then the fixed fields and ``bits`` of the varbit field."""
        if t.varbit is None or s.bits is None:
            raise self.refuse(f"extract of {t.name} "
                              + ("without the varbit field's length" if s.bits is None
                                 else "with a length (it has no varbit field)"), s.loc)
        vt = t.varbit.type
        assert isinstance(vt, ir.VarbitType)
        name = self.header_codecs(t)
        err = self.p.error_code
        vn, nb = self.fresh("_vn"), self.fresh("_vb")
        self.w(f"{{ __u64 {vn} = {self.ex(s.bits)};")
        self.w(f"  if ({vn} & 7) {{ C->sm.f_parser_error = {err('ParserInvalidArgument')}; "
               f"goto parser_reject; }}")
        self.w(f"  if ({vn} > {vt.max_width}) {{ C->sm.f_parser_error = "
               f"{err('HeaderTooShort')}; goto parser_reject; }}")
        self.w(f"  __u32 {nb} = {t.min_width // 8} + (__u32)({vn} >> 3);")
        self.w(f"  {nb} = P4_BOUND({nb}, {_max_bytes(t)});")
        self.w(f"  if (C->off + {nb} > C->plen || ({nb} && "
               f"{self.load_bytes(f'P4_BOUND1({nb}, {_max_bytes(t)})')})) {{ C->sm.f_parser_error = "
               f"{err('PacketTooShort')}; goto parser_reject; }}")
        self.w(f"  unpack_{name}(&{self.lval(s.header)}, C->xb, (__u32)({vn} >> 3));")
        nxt = s.header.base if isinstance(s.header, ir.Member) else s.header
        if isinstance(nxt, ir.StackNext):
            self.w(f"  {self.lval(nxt.stack)}.n += 1;")
        self.w(f"  C->off += {nb}; }}")

    def parser(self, pr: ir.Parser, names: dict[str, str]) -> None:
        """The parser's states as labels and gotos. A parser loop is unrolled: the states are
        emitted ``rounds`` times and each edge that closes a loop goes to the next round's
        copy, so the program stays loop-free for the verifier; a packet that would go round
        once more than that is rejected with error.ParserTimeout (docs/p4switch-ebpf.md)."""
        self.scope = _Scope(names, pr.name, "parser_reject", "parser_reject", pr.instances)
        for d in pr.locals:
            self.stmt(d)
        back = self._back_edges(pr)
        rounds = parser_rounds(self.p) if back else 1
        self.w("goto state_start;")
        for k in range(rounds):
            for st in pr.states.values():
                self.loc = st.loc
                self.w(f"{_state_label(st.name, k)}: {{")
                self.ind += 1
                self.stmts(st.stmts)
                self.transition(st.transition, self._round_goto(st.name, k, back, rounds))
                self.ind -= 1
                self.w("}")
        self.w("parser_reject:;")
        self.w("parser_accept:;")

    def _round_goto(self, state: str, k: int, back: set[tuple[str, str]],
                    rounds: int) -> Callable[[str], str]:
        """The goto for a transition of ``state``'s copy ``k``: a loop-closing edge goes to
        the next round's copy."""
        return lambda nxt: self._goto(nxt, k + 1 if (state, nxt) in back else k, rounds)

    @staticmethod
    def _back_edges(pr: ir.Parser) -> set[tuple[str, str]]:
        """The transitions that close a loop (to a state on the depth-first path from start):
        removing them leaves the states' graph acyclic."""
        color: dict[str, int] = {}
        back: set[tuple[str, str]] = set()

        def succ(st: ir.ParserState) -> list[str]:
            t = st.transition
            nxt = [t.next_state] if t.select_keys is None else [c.next_state for c in t.cases]
            return [n for n in nxt if n and n in pr.states]

        def dfs(n: str) -> None:
            color[n] = 1
            for m in succ(pr.states[n]):
                if color.get(m) == 1:
                    back.add((n, m))
                elif m not in color:
                    dfs(m)
            color[n] = 2

        if "start" in pr.states:
            dfs("start")
        return back

    def _goto(self, nxt: str, k: int = 0, rounds: int = 1) -> str:
        if nxt == "accept":
            return "goto parser_accept;"
        if nxt == "reject":
            return "goto parser_reject;"
        if k >= rounds:
            return (f"{{ C->sm.f_parser_error = {self.p.error_code('ParserTimeout')}; "
                    f"goto parser_reject; }}")
        return f"goto {_state_label(nxt, k)};"

    def transition(self, t: ir.Transition, goto: Callable[[str], str]) -> None:
        if t.loc is not None:
            self.loc = t.loc
        if t.select_keys is None:
            self.w(goto(t.next_state or "accept"))
            return
        ks = []
        for k in t.select_keys:
            kv = self.fresh("_sk")
            self.w(f"__u64 {kv} = {self.ex(k)};")
            ks.append((kv, _width(k.type) if not isinstance(k.type, ir.InfIntType) else 64))
        keysets = _KeysetCond(self, t)
        for c in t.cases:
            conds = []
            for (kv, w), ksv in zip(ks, c.keysets, strict=True):
                cond = keysets.visit(ksv, kv, (1 << w) - 1)
                if cond is not None:
                    conds.append(cond)
            self.w(f"if ({' && '.join(conds) or '1'}) {goto(c.next_state)}")
        self.w(f"C->sm.f_parser_error = {self.p.error_code('NoMatch')};")
        self.w("goto parser_reject;")

    # -- controls --------------------------------------------------------------------------
    def control(self, c: ir.Control, names: dict[str, str]) -> None:
        end = self.fresh(f"end_{_cid(c.name)}_")
        self.scope = _Scope(names, c.name, end, end, c.instances)
        self.w("C->exiting = 0;")
        self.w("{")
        self.ind += 1
        for d in c.locals:
            self.stmt(d)
        self.block(c.body)
        self.ind -= 1
        self.w("}")
        self.w(f"{end}:;")

    def deparser_emits(self, c: ir.Control,
                       names: dict[str, str]) -> list[tuple[str, ir.HeaderType]]:
        """Enter the deparser's scope and list what it emits, in order, as (l-value, header
        type) with structs and stacks flattened; refuse anything but ``emit``. Shared with
        the native back end, whose deparser writes the same list into its own buffer."""
        self.scope = _Scope(names, c.name, "deparse_end", "deparse_end", c.instances)
        emits: list[tuple[str, ir.HeaderType]] = []

        def collect(e: ir.Expr) -> None:
            t = e.type
            if isinstance(t, ir.HeaderType):
                emits.append((self.lval(e), t))
            elif isinstance(t, ir.StructType):
                for f in t.fields:
                    collect(ir.Member(e, f.name, type=f.type))
            elif isinstance(t, ir.StackType):
                for i in range(t.size):
                    collect(ir.StackElem(e, ir.Const(i, type=ir.InfIntType()), type=t.elem))
            else:
                raise self.refuse(f"emit of {t}", e.loc)

        for s in c.body.stmts:
            self.loc = s.loc or self.loc
            if not isinstance(s, ir.Emit):
                raise self.refuse(f"{type(s).__name__} in a deparser", s.loc)
            collect(s.header)
        return emits

    def deparser(self, c: ir.Control, names: dict[str, str]) -> None:
        emits = self.deparser_emits(c, names)
        self.w("__u32 _olen = 0;")
        for lv, t in emits:
            self.w(f"if ({lv}.valid) _olen += {self.header_bytes(lv, t)};")
        hl = "C->hlen" if self.repl else "C->off"  # header bytes now at the frame's head
        self.w(f"{{ long _d = (long)_olen - (long){hl};")
        self.w("  if (_d > 0 && bpf_skb_change_head(skb, _d, 0)) { p4_stat(5); "
               "return TC_ACT_SHOT; }")
        # shrinking: the kernel's adjust_room takes only IP frames with a whole Ethernet
        # header in front; anything else (a packet-out header) has its payload moved
        self.w("  if (_d < 0 && (_olen < 14 || bpf_skb_adjust_room(skb, _d, BPF_ADJ_ROOM_MAC, "
               f"0)) && p4_shrink(skb, C, {hl}, _olen)) {{ p4_stat(5); return TC_ACT_SHOT; }} }}")
        self.w("__u32 _o = 0;")
        for lv, t in emits:
            name = self.header_codecs(t)
            nb = self.header_bytes(lv, t)
            store = (f"bpf_skb_store_bytes(skb, _o, C->xb, {nb}, 0)" if t.varbit is None else
                     f"(_n && bpf_skb_store_bytes(skb, _o, C->xb, "
                     f"P4_BOUND1(_n, {_max_bytes(t)}), 0))")
            if t.varbit is not None:
                nb = f"P4_BOUND({nb}, {_max_bytes(t)})"
            self.w(f"if ({lv}.valid) {{ __u32 _n = {nb}; pack_{name}(&{lv}, C->xb); "
                   f"if ({store}) {{ p4_stat(5); return TC_ACT_SHOT; }} _o += _n; }}")
        self.w("deparse_end:;")
        if self.repl:
            self.w("C->hlen = _olen;")

    # -- the program -----------------------------------------------------------------------
    def generate(self) -> Generated:
        p = self.p
        pr = p.parsers[p.package["parser"]]
        hdr_t, meta_t, sm_t = (pr.params[i].type for i in (1, 2, 3))
        roots = {"hdr": hdr_t, "meta": meta_t, "sm": sm_t}
        for r, t in roots.items():
            self.ctx_fields.append(f"    {self.ctype(t)} {r};")
        body_start = len(self.lines)

        def names_for(params: list[ir.Param], roles: Sequence[str | None]) -> dict[str, str]:
            return {pp.name: f"C->{r}" for pp, r in zip(params, roles, strict=False) if r}

        self.role = "parser"
        self.parser(pr, names_for(pr.params, [None, "hdr", "meta", "sm"]))
        parsed_at = len(self.lines)
        for role in ("verify_checksum", "ingress"):
            self.role = role
            c = p.controls[p.package[role]]
            roles = ["hdr", "meta", "sm"] if role == "ingress" else ["hdr", "meta"]
            self.control(c, names_for(c.params, roles))
        pre = self.lines
        self.lines = []
        self.egress_part(sm_t, names_for)
        egress = self.lines
        self.lines = pre
        if "recirculate" in self.passes and self.repl:
            raise self.refuse("recirculate in a program that clones or multicasts",
                              self.passes["recirculate"])
        if self.passes:
            self.keep_fields(meta_t)
            self.ctx_fields += ["    __u32 rs_on;", "    __u32 rs_fl;", "    __u32 rc_on;",
                                "    __u32 rc_fl;", f"    {self.ctype(meta_t)} rs_meta;"]
            if "recirculate" in self.passes:
                egress.append("    /* recirculate: the deparsed frame enters the parser again */")
                saved, self.lines = self.lines, egress
                self.again(4, "rc")
                self.lines = saved
        if "resubmit" in self.passes and not self.repl:
            self.again(6, "rs")
        if not self.repl:
            self.w("if (C->sm.f_mcast_grp) { p4_stat(7); return TC_ACT_SHOT; }")
            self.w(f"if (C->sm.f_egress_spec == {self.layout.drop_port}) {{ p4_stat(2); "
                   f"return TC_ACT_SHOT; }}")
            self.w("C->sm.f_egress_port = C->sm.f_egress_spec;")
            self.lines += egress
        else:
            self.replication(hdr_t, meta_t, sm_t, egress, parsed_at)
        if self.passes:
            self.lines[body_start:body_start] = ["    __u32 _pass = 0;", "p4_pass:;"]
        body = self.lines[body_start:]
        return Generated(self.assemble(body, sm_t), self.layout)

    def egress_part(self, sm_t: ir.Type,
                    names_for: Callable[[list[ir.Param], Sequence[str | None]],
                                        dict[str, str]]) -> None:
        """The traffic manager's queue, egress, compute_checksum and deparser of one packet
        whose ``egress_port`` is set (inline in the program, or ``p4_egress`` with
        replication)."""
        p = self.p
        self.w("C->sm.f_egress_spec = 0;")
        self.w("C->sm.f_egress_global_timestamp = C->sm.f_ingress_global_timestamp;")
        sm_names = {f.name for f in sm_t.fields} if isinstance(sm_t, ir.StructType) else set()
        qmeta = [f"C->sm.f_{n} = {v};" for n, v in (
            ("enq_timestamp", "C->sm.f_ingress_global_timestamp & 0xffffffffULL"),
            ("enq_qdepth", "_ahead & 0x7ffffULL"), ("deq_qdepth", "_ahead & 0x7ffffULL"),
            ("deq_timedelta", "((_start - _now) / 1000) & 0xffffffffULL"),
            ("egress_global_timestamp",
             "(C->sm.f_ingress_global_timestamp + (_start - _now) / 1000) & 0xffffffffffffULL"),
        ) if n in sm_names]
        prio = "(__u32)C->sm.f_priority" if "priority" in sm_names else "0"
        self.lines += ["    " + ln for ln in QUEUE.format(
            qmeta="\n            ".join(qmeta), prio=prio).splitlines()]
        self.role = "egress"
        c = p.controls[p.package["egress"]]
        self.control(c, names_for(c.params, ["hdr", "meta", "sm"]))
        if "e2e" in self.repl:
            # the E2E clone is the packet as egress left it (before the drop check); a clone
            # requested by the egress of an E2E clone is not made (docs/p4switch-ebpf.md)
            self.w("if (C->cl_on) { C->cl_on = 0; if (!C->e2_busy) { C->e2_hdr = C->hdr; "
                   "C->e2_meta = C->meta; C->e2_plen = C->sm.f_packet_length; "
                   "C->e2_sess = C->cl_sess; C->e2_fl = C->cl_fl; C->e2_pending = 1; } "
                   "else p4_stat(7); }")
        self.w(f"if (C->sm.f_egress_spec == {self.layout.drop_port}) {{ p4_stat(2); "
               f"return TC_ACT_SHOT; }}")
        self.role = "compute_checksum"
        c = p.controls[p.package["compute_checksum"]]
        self.control(c, names_for(c.params, ["hdr", "meta"]))
        self.role = "deparser"
        c = p.controls[p.package["deparser"]]
        self.deparser(c, names_for(c.params, [None, "hdr"]))

    def keep_fields(self, meta_t: ir.Type) -> None:
        """``p4_keep_fields(C, src, fl)``: user metadata zero but the fields of field list
        ``fl`` (their ``@field_list`` annotations), taken from ``src`` — for clones,
        resubmit and recirculate."""
        if self._keep_done:
            return
        self._keep_done = True
        keep = []
        if isinstance(meta_t, ir.StructType):
            lists: dict[int, list[str]] = {}
            for f in meta_t.fields:
                for name, body in f.annotations:
                    if name == "field_list":
                        for idx in re.findall(r"\d+", body):
                            lists.setdefault(int(idx), []).append(f"f_{_cid(f.name)}")
            for idx, names in sorted(lists.items()):
                keep.append(f"    if (fl == {idx}U) {{ "
                            + " ".join(f"C->meta.{n} = src->{n};" for n in names) + " }")
        self.helpers.append(
            f"static __always_inline void p4_keep_fields(struct p4ctx *C, {self.ctype(meta_t)} "
            f"*src, __u32 fl) {{\n    __builtin_memset(&C->meta, 0, sizeof(C->meta));\n"
            + "\n".join(keep) + "\n}")

    def again(self, itype: int, flag: str) -> None:
        """Resubmit (``rs``) or recirculate (``rc``): the packet enters the parser again (the
        bytes it arrived with, or those the deparser wrote) with instance_type ``itype``,
        ingress_port 0 and the metadata of the field list; at most ``PASSES`` more passes
        (as the Python target's MAX_RECIRCULATIONS), then it is dropped."""
        plen = "skb->len - (cfg->test_mode ? cfg->test_pad : 0)" if flag == "rc" else "C->plen"
        self.w(f"if (C->{flag}_on) {{")
        self.ind += 1
        self.w(f"if (_pass >= {PASSES}) {{ p4_stat(11); return TC_ACT_SHOT; }}")
        self.w("_pass++;")
        self.w(f"__u32 _fl = C->{flag}_fl;")
        self.w("C->rs_meta = C->meta;")
        self.w(f"C->plen = {plen};")
        for f in ("hdr", "meta", "sm"):
            self.w(f"__builtin_memset(&C->{f}, 0, sizeof(C->{f}));")
        self.w("p4_keep_fields(C, &C->rs_meta, _fl);")
        self.w("C->off = 0; C->exiting = 0; C->rs_on = 0; C->rc_on = 0; C->cut = 0;")
        self.w(f"C->sm.f_instance_type = {itype};")
        self.w("C->sm.f_packet_length = C->plen;")
        self.w("C->sm.f_ingress_global_timestamp = C->now_us & 0xffffffffffffULL;")
        self.w("goto p4_pass;")
        self.ind -= 1
        self.w("}")

    def replication(self, hdr_t: ir.Type, meta_t: ir.Type, sm_t: ir.Type,
                    egress: list[str], parsed_at: int) -> None:
        """Clone (I2E, E2E) and multicast: egress becomes ``p4_egress``, run once per copy;
        each copy but the packet itself leaves by ``bpf_clone_redirect`` (``p4_copy_out``),
        the state of the packet between copies is kept in the per-packet context."""
        ht, mt, st = self.ctype(hdr_t), self.ctype(meta_t), self.ctype(sm_t)
        self.ctx_fields += [
            "    __u32 hlen;", "    __u32 cl_on;", "    __u32 cl_sess;", "    __u32 cl_fl;",
            "    __u32 e2_pending;", "    __u32 e2_busy;", "    __u32 e2_sess;",
            "    __u32 e2_fl;", "    __u64 e2_plen;", "    __u64 sv_perr;",
            f"    {ht} sv_phdr;", f"    {ht} sv_hdr;", f"    {mt} sv_meta;", f"    {st} sv_sm;",
            f"    {ht} e2_hdr;", f"    {mt} e2_meta;"]
        snap = ["    C->hlen = C->off;"]
        if "i2e" in self.repl:  # the I2E clone's headers: the arriving bytes as parsed
            snap += ["    C->sv_phdr = C->hdr;", "    C->sv_perr = C->sm.f_parser_error;"]
        self.lines[parsed_at:parsed_at] = snap
        self.keep_fields(meta_t)
        self.layout.replication = True
        self.helpers.append(REPL.format(
            cpu=self.layout.cpu_port
            if self.layout.cpu_port is not None else -1,
            egress="\n".join(egress), drop=self.layout.drop_port))
        if "i2e" in self.repl:
            self.w("if (C->cl_on) { C->cl_on = 0; p4_i2e(skb, C, cfg); }")
        if "resubmit" in self.passes:
            self.again(6, "rs")
        if "mcast" in self.repl:
            self.w("if (C->sm.f_mcast_grp) return p4_mcast(skb, C, cfg);")
        self.w(f"if (C->sm.f_egress_spec == {self.layout.drop_port}) {{ p4_stat(2); "
               f"return TC_ACT_SHOT; }}")
        self.w("C->sm.f_egress_port = C->sm.f_egress_spec;")
        self.w("if (p4_egress(skb, C)) return TC_ACT_SHOT;")
        self.w("if (C->e2_pending) { p4_copy_out(skb, C, cfg); p4_e2e(skb, C, cfg); "
               "return TC_ACT_SHOT; }")


    def assemble(self, body: list[str], sm_t: ir.Type) -> str:
        seen: set[str] = set()
        ctx = []
        for f in self.ctx_fields:
            if f not in seen:
                seen.add(f)
                ctx.append(f)
        sm_fields = {f.name for f in sm_t.fields} if isinstance(sm_t, ir.StructType) else set()
        init = ["C->sm.f_ingress_port = port;", "C->sm.f_packet_length = C->plen;",
                "C->sm.f_ingress_global_timestamp = now_us & 0xffffffffffffULL;"]
        init = [i for i in init if i.split("f_")[1].split(" ")[0] in sm_fields]
        cpu = self.layout.cpu_port
        out = [PRELUDE.format(hb=HASH_BUF, xb=max(self.max_hdr, 8), nstats=len(STAT_NAMES), hbuckets=BUCKETS,
                               crc32=crc_table(0xEDB88320, 8),
                               crc16=crc_table(0xA001, 4))]
        out += list(self.structs.values())
        out.append("struct p4ctx {\n    __u32 off;\n    __u32 exiting;\n    __u32 plen;\n    __u16 test;\n    __u16 cut;\n"
                   "    __u64 depart_ns;\n    __u64 now_us;\n    __u64 dm_colour;\n"
                   f"    __u8 hb[{HASH_BUF}];\n    __u8 xb[{max(self.max_hdr, 8)}];\n    __u8 mv[64];\n"
                   + "\n".join(ctx) + "\n};")
        out.append(map_decl("p4ctx_map", "BPF_MAP_TYPE_PERCPU_ARRAY", "__u32", "struct p4ctx", 1))
        out.append(ZERO_CTX)
        out.append(SHRINK)
        out += self.maps
        out += self.helpers
        out.append(MAIN_HEAD)
        out += ["    " + i for i in init]
        out += body
        out.append(MAIN_TAIL.format(cpu=cpu if cpu is not None else -1))
        return "\n\n".join(out) + "\n"


def _split_varbit(t: ir.HeaderType) -> tuple[list[tuple[str, ir.Type]], tuple[str, ir.Type] | None,
                                             list[tuple[str, ir.Type]]]:
    """The header's scalar fields as (C path, type): those before its varbit field, the varbit
    field (None if it has none), those after it."""
    leaves = [(".".join(f"f_{_cid(x)}" for x in path.split(".")), ft)
              for f in t.fields for path, ft in _leaves(f.type, f.name)]
    for i, (_, ft) in enumerate(leaves):
        if isinstance(ft, ir.VarbitType):
            return leaves[:i], leaves[i], leaves[i + 1:]
    return leaves, None, []


def _max_bytes(t: ir.HeaderType) -> int:
    vb = t.varbit
    extra = vb.type.max_width if vb is not None and isinstance(vb.type, ir.VarbitType) else 0
    return (t.min_width + extra + 7) // 8


def _codec_lines(leaves: list[tuple[str, ir.Type]], ptr: str) -> tuple[list[str], list[str]]:
    """Unpack and pack lines for fixed fields laid out MSB first from byte ``ptr[0]``."""
    un: list[str] = []
    pos = 0
    nbytes = (sum(_width(ft) for _, ft in leaves) + 7) // 8
    contrib: dict[int, list[str]] = {i: [] for i in range(nbytes)}
    for cpath, ft in leaves:
        w = _width(ft)
        parts = []
        for i in range(pos // 8, (pos + w - 1) // 8 + 1):
            start, end = max(pos, 8 * i), min(pos + w, 8 * i + 8)
            n = end - start
            parts.append(f"(((__u64)(({ptr}[{i}] >> {8 * i + 8 - end}) & 0x{(1 << n) - 1:x})) "
                         f"<< {pos + w - end})")
            contrib[i].append(f"(((h->{cpath} >> {pos + w - end}) & "
                              f"0x{(1 << n) - 1:x}) << {8 * i + 8 - end})")
        un.append(f"    h->{cpath} = " + " | ".join(parts) + ";")
        pos += w
    pk = [f"    {ptr}[{i}] = (__u8)(" + " | ".join(contrib[i]) + ");" for i in range(nbytes)]
    return un, pk


def _leaves(t: ir.Type, path: str) -> list[tuple[str, ir.Type]]:
    """The scalar fields under a header field of type ``t`` (a struct's, nested, in order)
    as (dotted path, type)."""
    if isinstance(t, ir.StructType) and not t.union:
        return [x for f in t.fields for x in _leaves(f.type, f"{path}.{f.name}")]
    return [(path, t)]


def _state_label(name: str, k: int) -> str:
    return f"state_{_cid(name)}" + (f"_r{k}" if k else "")


def parser_rounds(program: ir.Program) -> int:
    """How many times round a parser loop may go: once more than the largest header stack of
    the parser's headers holds (a loop that extracts into a stack's ``next`` fails with
    StackOutOfBounds there), at least 2."""
    pr = program.parsers[program.package["parser"]]
    sizes = [0]

    def walk(t: ir.Type) -> None:
        if isinstance(t, ir.StackType):
            sizes.append(t.size)
        elif isinstance(t, ir.StructType):
            for f in t.fields:
                walk(f.type)

    walk(pr.params[1].type)
    return max(sizes) + 1 if max(sizes) else 2


def _collect_type_locs(program: ir.Program, out: dict[str, ir.SourceLoc]) -> None:
    """First source location of an expression of each type (by its text) in ``program``;
    header types also get the location of the first expression of a stack or union of them."""
    seen: set[int] = set()

    def note(t: object, loc: ir.SourceLoc) -> None:
        out.setdefault(str(t), loc)
        if isinstance(t, ir.StackType):
            note(t.elem, loc)

    def walk(x: object) -> None:
        if id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, list | tuple):
            for i in x:
                walk(i)
            return
        if isinstance(x, dict):
            for i in x.values():
                walk(i)
            return
        if not isinstance(x, ir.Node | ir.ParserState | ir.Transition | ir.ActionCase
                          | ir.ValueCase | ir.Action | ir.Parser | ir.Control | ir.Table):
            return
        loc = getattr(x, "loc", None)
        if isinstance(x, ir.Expr) and loc is not None:
            note(x.type, loc)
        for name in getattr(x, "__dataclass_fields__", {}):
            if name not in ("type", "loc"):
                walk(getattr(x, name))

    for pr in program.parsers.values():
        walk(list(pr.states.values()))
    for c in program.controls.values():
        walk(c.body)
        walk(list(c.tables.values()))
    walk(list(program.actions.values()))


def generate(program: ir.Program, *, drop_port: int = 511,
             cpu_port: int | None = None) -> Generated:
    """C source and map layout for ``program``; EbpfUnsupported (located) if it cannot be
    expressed."""
    return CGen(program, drop_port=drop_port, cpu_port=cpu_port).generate()
